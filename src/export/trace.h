// Tracing C++ modules and callables into a TorchScript graph with module scopes.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include "export/converter.h"
#include "tonnx/export.h"

namespace tonnx::detail {

struct TraceResult {
  std::shared_ptr<torch::jit::Graph> graph;
  size_t num_user_inputs = 0;
  std::vector<TracedParam> params;           // graph inputs after the user inputs
  std::vector<torch::Tensor> eager_outputs;  // what the traced run returned
};

// Parameters then buffers of each module, modules in pre-order: torch's state_dict order.
// Tensors shared between modules appear once, under their first name.
std::vector<TracedParam> state_dict(const torch::nn::Module& root);

TraceResult trace(const Traceable& model, const std::vector<torch::Tensor>& args,
                  TrainingMode mode);

}  // namespace tonnx::detail
