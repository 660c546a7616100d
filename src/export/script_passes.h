// The TorchScript frontend as a list of stages, on the state they share: run_export
// (torchscript.cpp) runs them in this order, then the pipeline every frontend shares
// (pipeline.h: functionalize, convert, fold, clean up, check, print). docs/torchscript.md
// describes what each stage does and why.
#pragma once

#include <torch/script.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "export/specialize.h"
#include "export/traced.h"
#include "tonnx/export.h"

namespace tonnx::detail {

struct ScriptParam {
  std::string name;  // the attribute path: layer1.0.conv1.weight
  at::Tensor tensor;
};

struct ScriptExport {
  ScriptExport(const ExportOptions& options, const std::vector<c10::IValue>& arguments,
               torch::jit::Module module)
      : o(options), args(arguments), m(std::move(module)) {}
  const ExportOptions& o;
  const std::vector<c10::IValue>& args;  // the example arguments, as given
  torch::jit::Module m;  // a new instance over the caller's tensors, in the export's mode
  std::shared_ptr<torch::jit::Graph> g;      // forward's graph, calls inlined
  std::vector<torch::Tensor> inputs;         // the arguments' tensors: the graph's user inputs
  std::vector<torch::Tensor> eager_outputs;  // forward's results on the example, flattened
  std::vector<ScriptParam> params;           // parameters and buffers: graph inputs after `inputs`
  // What observe_script_types ran the graph on and saw:
  std::vector<c10::IValue> run_inputs;  // the inputs, then the parameters
  std::vector<size_t> written_params;   // indices into run_inputs of parameters forward writes
  ObservedConditions conditions;        // the value of every If condition
  bool probe_failed = false;            // the runs at other sizes of the dynamic axes failed
};

// 1. script_module.cpp: the module cloned into the export's mode, forward's graph inlined, the
//    example arguments checked against its signature.
ScriptExport load_forward(torch::jit::Module& module, const std::vector<c10::IValue>& args,
                          const ExportOptions& o);
// 2. script_module.cpp: forward run on copies of the example: the outputs the export must give.
void run_forward(ScriptExport& s);
// 3. script_module.cpp: arguments not given (defaults) and non-tensor ones become constants;
//    tuples and lists of tensors one graph input per tensor.
void bind_arguments(ScriptExport& s);
// 4. script_module.cpp: attribute reads of self become parameter inputs named by attribute
//    path; self goes; every node gets its module scope.
void bind_parameters(ScriptExport& s);
// 5. script_simplify.cpp: what the export knows is folded (None checks, input ranks, identity
//    casts, constants), tuples lowered, raising branches dropped.
void simplify_script_graph(ScriptExport& s);
// 6. script_observe.cpp: the graph run on the example (and, with dynamic axes, at other
//    sizes), each tensor value typed by what it held, every If condition recorded.
void observe_script_types(ScriptExport& s);
// 7. script_observe.cpp: branches that do not depend on data fixed, sizes computed from data
//    forgotten, observed values folded, number loops unrolled, dicts lowered or refused.
void specialize_script_graph(ScriptExport& s);
// What the shared pipeline takes (finish_export).
TraceResult script_trace_result(ScriptExport& s);

}  // namespace tonnx::detail
