// Splitting and stacking: split / split_with_sizes (and their unsafe_ twins), chunk, unbind,
// stack; sizes known at export or computed at run time.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// How many pieces the op's list has: the prim::ListUnpack that takes it apart, else -1.
int64_t unpacked_count(SymbolicContext& g) {
  const auto& uses = g.node()->output(0)->uses();
  if (uses.size() == 1 && uses[0].user->kind() == c10::prim::ListUnpack)
    return static_cast<int64_t>(uses[0].user->outputs().size());
  return -1;
}

// Pieces of `step` (a [1] int64 value) along dim of a size known only at run time, k of them
// as in the trace: sizes [step] * (k - 1) ++ [min(step, n - step * (k - 1))]. When the input
// at run time needs another number of pieces, the sizes do not add up to n and Split fails
// (as torch's unpacking would), never a silently different split.
std::vector<Value*> split_runtime(SymbolicContext& g, Value* x, int64_t dim, Value* step,
                                  int64_t k) {
  if (g.opset() < 13) g.unsupported_below(13, "splitting a dim whose size varies");
  if (k == 1) return {g.op("Identity", {x})};
  Value* n = g.op("Gather", {g.op("Shape", {x}), g.constant_ints({dim})}, {{"axis", int64_t{0}}});
  Value* rest = g.op("Sub", {n, g.op("Mul", {step, g.constant_ints({k - 1})})});
  std::vector<Value*> parts(static_cast<size_t>(k - 1), step);
  parts.push_back(g.op("Min", {step, rest}));
  Value* sizes = g.op("Concat", parts, {{"axis", int64_t{0}}});
  return g.op_n("Split", {x, sizes}, {{"axis", dim}}, static_cast<size_t>(k));
}

// split(self, split_size: int | int[], dim) and split_with_sizes(self, sizes, dim)
int64_t known_dim(SymbolicContext& g, size_t i, int64_t d);
Outputs split(SymbolicContext& g) {
  int64_t dim = arg_dim(g, 0, g.i(2));
  auto t = g.type(0);
  bool size_known = t && t->shape && dim < static_cast<int64_t>(t->shape->size()) &&
                    (*t->shape)[dim].value.has_value();
  if (g.arg_type(1) == "int" && (!size_known || !g.is_constant(1))) {
    // A split_size computed at run time, or a dim whose size varies.
    int64_t k = unpacked_count(g);
    if (k < 0)
      g.fail(
          "split of a dim whose size varies, or by a size computed at run time: how many "
          "pieces there are is known only when the list is unpacked");
    Value* step = g.is_constant(1)
                      ? g.constant_ints({g.i(1)})
                      : g.op("Reshape", {g.cast(g.input(1), at::kLong), g.constant_ints({1})});
    if (g.is_constant(1) && g.i(1) <= 0)
      g.fail("split_size must be positive, got " + std::to_string(g.i(1)));
    return split_runtime(g, g.input(0), dim, step, k);
  }
  if (!g.is_constant(1) && g.arg_type(1) != "int") {
    // Sizes computed at run time ([E, E * 2] from x.size(-1)): as many pieces as the list has.
    size_t pieces = static_cast<size_t>(computed_list_length(g, 1));
    if (g.opset() < 13) g.unsupported_below(13, "split with sizes computed at run time");
    return g.op_n("Split", {g.input(0), g.cast(g.input(1), at::kLong)}, {{"axis", dim}}, pieces);
  }
  std::vector<int64_t> sizes = g.ints(1);
  if (g.arg_type(1) == "int") {
    int64_t step = sizes[0], total = known_dim(g, 0, dim);
    if (step <= 0) g.fail("split_size must be positive, got " + std::to_string(step));
    sizes.clear();
    for (int64_t s = 0; s < total; s += step) sizes.push_back(std::min(step, total - s));
    if (sizes.empty()) sizes.push_back(0);
  }
  return split_sizes(g, g.input(0), sizes, dim);
}
TONNX_SYMBOLIC("aten::split", 9, split);
TONNX_SYMBOLIC("aten::split_with_sizes", 9, split);
TONNX_SYMBOLIC("aten::unsafe_split", 9, split);
TONNX_SYMBOLIC("aten::unsafe_split_with_sizes", 9, split);

// chunk(self, chunks, dim): PyTorch's sizes: ceil(n / chunks) each, the last one smaller.
// The size of dim d of input i, which must be known (the other dims may vary).
int64_t known_dim(SymbolicContext& g, size_t i, int64_t d) {
  auto t = g.type(i);
  if (!t || !t->shape || !(*t->shape)[d].value)
    g.fail("the size of dim " + std::to_string(d) + " of input " + std::to_string(i) + " (" +
           g.arg_name(i) + ") is not known from the trace; it decides how many outputs there are");
  return *(*t->shape)[d].value;
}

Outputs chunk(SymbolicContext& g, Value* x, RuntimeInt count, int64_t dim) {
  int64_t d = arg_dim(g, 0, dim);
  if (!count.is_constant()) {
    // A count computed at run time (x.size(0)): how many pieces there are is known only then,
    // so the result is an ONNX sequence of pieces of ceil(n / count), as torch.onnx makes it.
    if (g.opset() < 11)
      g.unsupported_below(11, "chunk into a number of pieces computed at run time");
    Value* n = g.op("Gather", {g.op("Shape", {x}), g.constant(at::scalar_tensor(d, at::kLong))},
                    {{"axis", int64_t{0}}});
    Value* one = g.constant(at::scalar_tensor(int64_t{1}, at::kLong));
    Value* k = g.op("Reshape", {count.value, g.constant_ints({})});
    Value* step = g.op("Div", {g.op("Sub", {g.op("Add", {n, k}), one}), k});
    step = g.op("Where", {g.op("Less", {step, one}), one, step});  // an empty dim: one piece
    return g.sequence_op("SplitToSequence", {x, step}, {{"axis", d}});
  }
  int64_t chunks = *count.constant;
  if (chunks <= 0) g.fail("chunks must be positive, got " + std::to_string(chunks));
  auto t = g.type(0);
  if (!t || !t->shape || !(*t->shape)[d].value) {
    // The dim varies: ceil(n / chunks) at run time, as many pieces as unpacked.
    int64_t k = unpacked_count(g);
    Value* n = g.op("Gather", {g.op("Shape", {x}), g.constant_ints({d})}, {{"axis", int64_t{0}}});
    Value* step =
        g.op("Div", {g.op("Add", {n, g.constant_ints({chunks - 1})}), g.constant_ints({chunks})});
    return split_runtime(g, x, d, step, k < 0 ? chunks : k);
  }
  int64_t n = known_dim(g, 0, d);
  int64_t step = (n + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < n; s += step) sizes.push_back(std::min(step, n - s));
  return split_sizes(g, x, sizes, d);
}
TONNX_SYMBOLIC("aten::chunk", 9, chunk);
TONNX_SYMBOLIC("aten::unsafe_chunk", 9, chunk);

// unbind: as many outputs as the dim is long; when the trace forgot that size (it follows
// data-dependent ops), the prim::ListUnpack that takes the list apart says how many.
TONNX_SYMBOLIC("aten::unbind", 9, [](SymbolicContext& g, Value* x, int64_t dim) -> Outputs {
  int64_t d = arg_dim(g, 0, dim);
  auto t = g.type(0);
  int64_t n = -1;
  if (t && t->shape && (*t->shape)[d].value) n = *(*t->shape)[d].value;
  if (n < 0) n = unpacked_count(g);
  if (n < 0 && g.opset() >= 11)  // an ONNX sequence of the slices, as torch.onnx makes it
    return g.sequence_op("SplitToSequence", {x}, {{"axis", d}, {"keepdims", int64_t{0}}});
  if (n < 0) n = known_dim(g, 0, d);  // fails, naming the dim
  std::vector<Value*> parts = split_sizes(g, x, std::vector<int64_t>(n, 1), d);
  for (auto& p : parts) p = squeeze(g, p, {d});
  return parts;
});

// stack(tensors, dim); a list that changes at run time (an ONNX sequence) through
// ConcatFromSequence with new_axis.
TONNX_SYMBOLIC("aten::stack", 9, [](SymbolicContext& g) -> Outputs {
  int64_t dim = g.i(1);
  auto out = g.output_type();
  int64_t d = dim;
  if (dim < 0 || (out && out->shape)) {
    if (!out || !out->shape) g.fail("the rank of the result is not known");
    d = norm_dim(g, dim, static_cast<int64_t>(out->shape->size()));
  }
  at::ScalarType dt = g.output_scalar_type();
  if (g.is_sequence(0)) return from_sequence(g, g.sequence(0), d, true, dt);
  std::vector<Value*> parts;
  for (Value* x : g.inputs_list(0)) parts.push_back(unsqueeze(g, g.cast(x, dt), {d}));
  return g.op("Concat", parts, {{"axis", d}});
});

}  // namespace
}  // namespace tonnx::sym
