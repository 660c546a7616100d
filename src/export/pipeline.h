// The export pipeline after the frontend: a traced (or loaded) TorchScript graph whose inputs
// are the user inputs followed by the parameters goes through conversion, passes, checks,
// printing and writing. Shared by the C++-module tracer and the TorchScript frontend.
#pragma once

#include <onnx/onnx_pb.h>

#include <chrono>
#include <functional>
#include <unordered_map>

#include "export/traced.h"
#include "tonnx/export.h"

namespace tonnx::detail {

// TONNX_TIMING=1 prints how long each export stage took (to stderr).
struct StageTimer {
  StageTimer();
  void lap(const char* stage);  // the time since construction or the last lap
  bool on;
  std::chrono::steady_clock::time_point t = std::chrono::steady_clock::now();
};

struct Exported {
  ir::Model model;
  onnx::ModelProto proto;  // checked skeleton (weights are streamed when written)
  std::vector<torch::Tensor> eager_outputs;
  std::vector<int64_t> input_positions;  // see ExportSummary::input_positions
  std::vector<std::string> warnings;     // see ExportSummary::warnings
  bool traced_shapes_only = false;       // see ExportSummary
  std::string traced_on_values_because;  // see ExportSummary
};

// tonnx::verify's hook: while a ReferenceRecorder is alive on this thread, finish_export runs
// the converted TorchScript graph in LibTorch with every top-level value exposed and records,
// for each that became an ONNX value still in the final model, its name and LibTorch's value.
struct Recording;
Recording* active_recording();
void record_references(Recording& r, const TraceResult& tr,
                       const std::unordered_map<const torch::jit::Value*, ir::Value*>& mapped);
void name_references(Recording& r, const ir::Graph& g);  // after the passes named the values

// Throws ExportError for options no export can satisfy (opset, duplicate or empty names,
// custom_opsets naming the default domain); every frontend calls it first.
void validate_options(const ExportOptions& o);

// Converts, optimizes and checks a frontend's graph; prints it when o.verbose.
// Throws ExportError when a graph output's declared dtype, rank or known size differs from
// what the module gave on the example (`eager`, one tensor per graph output).
void check_against_module(const ir::Graph& g, const std::vector<torch::Tensor>& eager);
Exported finish_export(TraceResult tr, const ExportOptions& o);

// Checks that `path` can be written, runs `produce` (trace/load + finish_export), writes the
// result atomically and summarizes it. Every frontend's export_model goes through here.
ExportSummary export_to_path(const std::string& path, const ExportOptions& o,
                             const std::function<Exported()>& produce);

// Writes an Exported atomically to `path` and summarizes it.
ExportSummary write_exported(Exported ex, const std::string& path, const ExportOptions& o,
                             double seconds_so_far);

}  // namespace tonnx::detail
