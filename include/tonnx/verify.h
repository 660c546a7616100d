// tonnx::verify: export a model, run it on LibTorch, tonnx's backend and ONNX Runtime with the
// same inputs, and compare. On a mismatch, find the first node of the ONNX graph whose result
// differs from what LibTorch computed for the TorchScript value it was converted from.
//
//   tonnx::VerifyReport r = tonnx::verify(tonnx::make_traceable(model), {x});
//   std::cout << r.str();          // per output and runtime: max abs/rel error, pass/fail
//   if (!r.ok && r.divergence) ... // the ONNX op, aten op, scope and error of the first bad node
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tonnx/compare.h"
#include "tonnx/export.h"
#include "tonnx/proto.h"

namespace torch::jit {
struct Module;
}

namespace tonnx {

struct VerifyOptions {
  Tolerance tolerance;  // |got - expected| <= atol + rtol * |expected|
  // "tonnx" (the backend) and "ort" (ONNX Runtime through tools/ort_run.js and Node; found
  // beside the sources, or at $TONNX_ORT_RUNNER).
  std::vector<std::string> runtimes = {"tonnx", "ort"};
  // A runtime that is not installed (ONNX Runtime without Node): skipped with a note, or with
  // this, an error.
  bool require_runtimes = false;
  // Where the first divergent node's reproduction is written: node.onnx (the node alone, its
  // inputs as graph inputs) and test_data_set_0/ (its inputs as tonnx computed them, and
  // LibTorch's value of its output). Empty: not written.
  std::string repro_dir;
  // Look for the first divergent node even when every output agrees.
  bool always_search = false;
  // verify() writes the export here; empty: into a temporary folder, removed afterwards.
  std::string onnx_path;
  ExportOptions export_options;
};

// What LibTorch computed for a TorchScript value that became the ONNX value `onnx_name`.
struct ReferenceValue {
  std::string onnx_name;
  std::string aten_op;  // the TorchScript node that produced it (aten::relu)
  std::string scope;    // its module scope (AlexNet/Sequential[features]/ReLU[1])
  at::Tensor value;
};

// While alive, exports on this thread record reference values: the converted TorchScript
// graph runs once more in LibTorch on the example inputs with every intermediate value kept.
// Costs one forward pass and the memory of all its values. Only the last export is kept.
class ReferenceRecorder {
 public:
  ReferenceRecorder();
  ~ReferenceRecorder();
  ReferenceRecorder(const ReferenceRecorder&) = delete;
  ReferenceRecorder& operator=(const ReferenceRecorder&) = delete;
  // In the order LibTorch computed them.
  const std::vector<ReferenceValue>& values() const;
  // Why no values were recorded (the graph could not be run alone); empty when there are.
  const std::string& note() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

struct OutputCheck {
  std::string output;   // the graph output's name
  std::string runtime;  // "tonnx" or "ort"
  Comparison comparison;
};

// The first node in the graph's order whose output differs from LibTorch's value.
struct Divergence {
  std::string op_type, node_name;  // the ONNX node
  std::string aten_op, scope;      // what it was converted from
  std::string value;               // the differing output's name
  std::string got, expected;       // their types: Float(10, 64, 55, 55)
  Comparison comparison;
  std::string repro_dir;  // where its reproduction was written (empty: none)
};

struct VerifyReport {
  std::string model_path;
  std::vector<OutputCheck> outputs;
  std::vector<std::string> notes;  // runtimes skipped, why no divergence search ran
  std::optional<Divergence> divergence;
  bool ok = false;  // every output of every runtime that ran agrees with LibTorch
  std::string str() const;
};

// Exports with options.export_options (to options.onnx_path, or a temporary file), runs the
// model on every runtime with the example inputs and compares with LibTorch's outputs.
VerifyReport verify(const Traceable& model, const std::vector<torch::Tensor>& args,
                    const VerifyOptions& options = {});
VerifyReport verify(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                    const VerifyOptions& options = {});

// An export's test data: the graph inputs taken from `examples` (the example inputs given to
// the export) and LibTorch's outputs, named like the graph's. Throws when an output is a
// sequence (a list of tensors), which a test data set of one tensor per output cannot hold.
TestDataSet export_test_data(const ExportSummary& s, const std::vector<at::Tensor>& examples);

// Runs the ONNX file at `onnx_path` on `data`'s inputs with each runtime and compares with
// data's outputs (LibTorch's); with `references`, finds the first divergent node.
VerifyReport verify_file(const std::string& onnx_path, const TestDataSet& data,
                         const VerifyOptions& options,
                         const std::vector<ReferenceValue>& references = {});

}  // namespace tonnx
