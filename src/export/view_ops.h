// How TorchScript's view ops relate their output to their input (functionalize.cpp writes
// in-place results back through them).
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <optional>

namespace tonnx::detail {

bool is_tensor(const torch::jit::Value* v);

// How a view op relates its output to its input 0, and so how a write to the output goes back.
enum class View {
  None,       // not a view
  Slice,      // slice(self, dim, start, end, step): slice_scatter
  Narrow,     // narrow(self, dim, start, length): slice_scatter
  Select,     // select(self, dim, index): select_scatter
  Reshape,    // view/reshape/flatten/squeeze/unsqueeze...: reshape back to the base's sizes
  Same,       // detach/alias/contiguous, to/type_as of the same dtype: the same tensor
  Transpose,  // transpose(self, d0, d1): transpose back
  T,          // t(self)
  Permute,    // permute(self, dims): the inverse permutation
  Other,      // shares memory in a way tonnx does not write back through (expand, diagonal...)
};

std::optional<at::ScalarType> dtype_of(const torch::jit::Value* v);

// reshape, reshape_as, flatten and contiguous: a view of their input where ATen can make one,
// a copy otherwise.
bool may_copy(const torch::jit::Node* n);
// On such a node of a scripted graph, what the observation runs saw (script_graph.cpp): bit 0
// set when a run copied, bit 1 when one returned a view (both: a write through it is refused).
inline const c10::Symbol kSharesStorage = c10::Symbol::attr("tonnx_shares_storage");

// What `n` is as a view of its input 0 (View::None: not one, or a copy where the op copies).
View view_kind(const torch::jit::Node* n);

}  // namespace tonnx::detail
