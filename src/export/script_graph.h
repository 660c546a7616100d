// Preparing a TorchScript graph for conversion (internal to the TorchScript frontend): what
// the export knows folded as constants, branches that raise dropped, tensor types observed by
// running the graph on the example inputs, sizes that depend on data forgotten. The steps are
// called in this order by the stages of script_passes.h; docs/torchscript.md describes each.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "export/specialize.h"

namespace tonnx::detail {

// "OP (scope S, FILE:LINE)" for a node, for errors; parts the node lacks are left out.
std::string node_location(torch::jit::Node* n);
// The first line of a message, capped for a terminal.
std::string first_line(const std::string& s);
// Whether a block (calls inlined) may write into module state: prim::SetAttr or any in-place op.
bool may_write_state(torch::jit::Block* b);

// prim::is_cuda, requires_grad, is_grad_enabled... false, prim::device the CPU.
int fold_export_constants(torch::jit::Graph& g, torch::jit::Block* b);
// A 0-dim float64/int64 tensor constant read as the other operand of arithmetic (a Python
// number in a traced file) becomes a number, as LibTorch's graph executor passes it.
int numbers_as_scalars(torch::jit::Graph& g, torch::jit::Block* b);
// Dicts whose keys are constants, used in the block that made them: reads become the value
// set under the key, a returned dict a tuple of its values in insertion order. Others stay.
int lower_constant_key_dicts(torch::jit::Graph& g);
// A dict still in the graph is an ExportError naming where it is and what tonnx takes.
void refuse_dicts(const torch::jit::Graph& g);
// An if whose one branch raises becomes the other branch (as torch.onnx does); print() and an
// unused tolist(), side effects only, are dropped.
int drop_raising_branches(torch::jit::Block* b);
// One prim::Uninitialized per output (the interpreter runs a multi-output one wrongly).
void split_uninitialized(torch::jit::Graph& g, torch::jit::Block* b);
// Runs the graph on `inputs` with a probe after every value and sets each tensor value's type
// to what was seen; records the value of every If condition in `conditions`. A failure is an
// ExportError naming the node that failed (the one after the last value seen).
std::vector<c10::IValue> observe_types(const std::shared_ptr<torch::jit::Graph>& g,
                                       const std::vector<c10::IValue>& inputs,
                                       ObservedConditions* conditions = nullptr);
// The same over several sets of inputs (the example, then the example at other sizes of its
// dynamic axes): a size that differs between runs is unknown; `what_if_later_fails` prefixes
// the error of a run after the first.
void observe_types(const std::shared_ptr<torch::jit::Graph>& g,
                   const std::vector<std::vector<c10::IValue>>& input_sets,
                   ObservedConditions* conditions, const std::string& what_if_later_fails);
// Results whose sizes depend on data, and what is computed from them, lose their observed
// sizes; they are collected in `shaped`. `data`: the values computed from the inputs' values
// (data_values), for sizes taken from them (torch.zeros(int(n))).
void forget_data_shapes(torch::jit::Block* b, std::unordered_set<const torch::jit::Value*>& shaped,
                        const std::unordered_set<const torch::jit::Value*>& data);
// With dynamic axes: adds to `data` the sizes (size, numel, len, shape) of dims the runs saw
// vary. What is computed from them is then not frozen either, even where two runs agreed
// (x[:, :min(x.size(1), 4)] gives 4 at both probe sizes).
void dynamic_sizes(torch::jit::Block* b, std::unordered_set<const torch::jit::Value*>& data);
// Adds to `data` what `b` computes from values in it (seed it with the graph's inputs); sizes,
// dtypes and devices of them are not their values.
void data_values(torch::jit::Block* b, std::unordered_set<const torch::jit::Value*>& data);
// Dtypes (and, when no size varies, ranks) for values on paths the example did not take: each
// op runs on the meta device with stand-ins for what was not observed (unobserved.cpp).
void infer_unobserved(torch::jit::Block* b, bool sizes_vary);
// prim::dtype and (unless sizes vary) aten::size of observed tensors become constants.
void fold_observed(torch::jit::Graph& g, torch::jit::Block* b, bool sizes_vary);

}  // namespace tonnx::detail
