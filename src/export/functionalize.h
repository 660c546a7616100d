// In-place writes made functional. TorchScript tensors are mutable and views share memory
// with their base; ONNX values are immutable. This pass rewrites a traced or scripted graph so
// that every in-place op (fill_, copy_, add_, index_put_, masked_fill_, ...) is followed by the
// write-back of its result into the tensor it was a view of (slice_scatter, select_scatter,
// reshape, transpose back, ...), and every later read of that tensor, or of another view of
// it, reads the written version. Writes inside If and Loop bodies to tensors defined outside
// become outputs of the If and values carried by the Loop. A write tonnx cannot follow (into a
// view made by expand, as_strided, diagonal, chunk, ... or a view chosen by control flow)
// fails the export, naming the op and its scope: never a silently different model.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <string>

namespace tonnx::detail {

void functionalize_inplace(const std::shared_ptr<torch::jit::Graph>& graph);

// copy_(dst, expand(v, sizes)) becomes copy_(dst, v): copy_ broadcasts its source to dst anyway,
// and the Python tracer records the expand of a slice assignment with the sizes it saw.
void copy_without_expand(torch::jit::Block* b);

// After the pass, the ops that change the list in their input 0 and return its new contents
// as output 0 (append, l[i] = x, +=, and the twins of insert, del and clear).
bool is_list_write(const torch::jit::Node* n);

// List mutations made into ops that return the list's new contents (list_mutations.cpp); run
// by functionalize_inplace before the tensor writes.
void rewrite_list_mutations(torch::jit::Graph& g, torch::jit::Block* b);

// What the in-place pass and the list rewrite share (list_mutations.cpp): whether a value is a
// list, and "op (scope S)", how their errors name a node.
bool is_list_value(const torch::jit::Value* v);
std::string inplace_op_where(const torch::jit::Node* n);

}  // namespace tonnx::detail
