// What a frontend hands the export pipeline: a TorchScript graph whose inputs are the user
// inputs followed by the parameters, and what it knows about them. Both frontends (the C++
// tracer, the TorchScript loader) produce it; the converter and the pipeline consume it.
#pragma once

#include <torch/csrc/jit/ir/ir.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

namespace tonnx::detail {

// A parameter or buffer passed to the graph as an input.
struct TracedParam {
  std::string name;  // state_dict name (features.0.weight)
  at::Tensor tensor;
  const torch::nn::Module* owner = nullptr;  // the C++ module that registered it, if any
};

struct TraceResult {
  std::shared_ptr<torch::jit::Graph> graph;
  size_t num_user_inputs = 0;
  std::vector<at::Tensor> example_inputs;    // the user inputs' example values, when known
  std::vector<TracedParam> params;           // graph inputs after the user inputs
  std::vector<torch::Tensor> eager_outputs;  // what the traced run returned
  std::vector<std::string> warnings;         // for ExportSummary::warnings
  // The ops through which forward read tensor values on the host or made a shape out of
  // them (item(), a bool of a tensor, nonzero, ...), first seen first: where a trace can come
  // to depend on the values (trace_check.cpp).
  std::vector<std::string> value_reads;
  bool shapes_only = false;  // traced on meta tensors (trace.h)
  // Why a shapes-only trace was tried and could not be used (the first line), if it was.
  std::string on_values_because;
};

// The name a graph input gets when input_names does not name it: "input" when it is the only
// one, else "input_K".
inline std::string default_input_name(size_t index, size_t num_inputs) {
  return num_inputs == 1 ? "input" : "input_" + std::to_string(index);
}

}  // namespace tonnx::detail
