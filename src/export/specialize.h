// Scripted control flow that does not depend on tensor data, fixed at export.
//
// Library code written for TorchScript branches on things an export knows: whether an argument
// is None, tensor identity (query is key), ranks, dtypes, flags, and strings built from them
// (nn.MultiheadAttention's why_not_fast_path). Such an If takes the same branch for every input
// the exported model can get, so it is replaced by the branch the example inputs took, and the
// string and list code that only fed its condition goes away. A condition is data-free when
// nothing on its way reads a tensor's values: taint flows from tensor reads (every op but
// is/is not/dim/dtype/device, and sizes when dynamic axes are set) through values, lists
// written by append, loop-carried values, and everything computed under a tainted condition.
// Conditions that read data stay ONNX If nodes.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace tonnx::detail {

// Which values an If condition took on the example run: bit 0 false, bit 1 true.
using ObservedConditions = std::unordered_map<const torch::jit::Value*, int>;

// Replaces the prim::If `if_node` by the nodes of its block `branch` (0: then, 1: else).
void replace_if_by_branch(torch::jit::Node* if_node, size_t branch);

// Returns how many Ifs were replaced by their taken branch. `data_shaped`: tensors whose
// sizes depend on data (nonzero's result and what is computed from it): their sizes are data.
int specialize_data_free_ifs(const std::shared_ptr<torch::jit::Graph>& graph,
                             const ObservedConditions& observed, bool sizes_vary,
                             const std::unordered_set<const torch::jit::Value*>& data_shaped);

// Loops of at most 64 iterations, fixed at export, that compute on numbers and lists only
// (list(range(-dims, 0)) in torch.tensordot) are unrolled and their lists folded into
// constants, for the symbolics that need constant int[] arguments. A body may read tensors'
// sizes (aten::size, aten::dim). Returns whether any loop was unrolled.
bool unroll_number_loops(std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace tonnx::detail
