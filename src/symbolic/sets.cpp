// Ops over sets of values and bags of rows: unique (_unique, _unique2, unique_dim) as ONNX's
// Unique, bucketize by comparison against every boundary, nonzero_numpy, and embedding_bag
// (Gather plus a reduction over bags; bags given by offsets use ScatterND's add reduction).
#include <limits>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// Unique (opset 11) of the flattened input, or along `axis`. Returns (values, inverse,
// counts); inverse in `inverse_shape` (the input's shape for the flattened form). Outputs
// that the aten op was not asked for stay unbound, so a use of them fails the export.
Outputs unique(SymbolicContext& g, bool sorted, bool inverse, bool counts,
               std::optional<int64_t> axis) {
  std::vector<ir::Attr> attrs{{"sorted", int64_t{sorted ? 1 : 0}}};
  if (axis) attrs.push_back({"axis", *axis});
  std::vector<Value*> u = g.op_n("Unique", {g.input(0)}, attrs, 4);
  Value* inv = nullptr;
  if (inverse) inv = axis ? u[2] : g.op("Reshape", {u[2], g.op("Shape", {g.input(0)})});
  return std::vector<Value*>{u[0], inv, counts ? u[3] : nullptr};
}
// torch.unique(sorted=False) returns the values in an order PyTorch leaves unspecified (hash
// order on the CPU); ONNX's sorted=0 gives them in order of first occurrence.
// _unique2(self, sorted, return_inverse, return_counts)
TONNX_SYMBOLIC("aten::_unique2", 11, [](SymbolicContext& g) -> Outputs {
  return unique(g, g.b(1), g.b(2), g.b(3), std::nullopt);
});
// _unique(self, sorted, return_inverse) -> (values, inverse)
TONNX_SYMBOLIC("aten::_unique", 11, [](SymbolicContext& g) -> Outputs {
  Outputs o = unique(g, g.b(1), g.b(2), false, std::nullopt);
  o.values.resize(2);
  return o;
});
// unique_dim(self, dim, sorted, return_inverse, return_counts): PyTorch always sorts the
// slices here.
TONNX_SYMBOLIC("aten::unique_dim", 11, [](SymbolicContext& g) -> Outputs {
  return unique(g, true, g.b(3), g.b(4), arg_dim(g, 0, g.i(1)));
});

// bucketize(self, boundaries, out_int32, right): the number of boundaries below each value
// (right: at or below it). NaN counts as above every boundary, as in PyTorch's binary search.
Outputs bucketize(SymbolicContext& g, Value* x, int64_t rank) {
  if (g.rank(1) != 1) g.fail("boundaries must be 1-D, got rank " + std::to_string(g.rank(1)));
  bool right = g.b(3);
  at::ScalarType t = at::promoteTypes(g.scalar_type(0), g.scalar_type(1));
  x = unsqueeze(g, g.cast(x, t), {rank});
  Value* b = g.cast(g.input(1), t);
  Value* at_or_below = g.op("Less", {x, b});  // right: count boundaries with !(x < b)
  if (!right) at_or_below = g.op("Or", {at_or_below, equal(g, x, b, t)});
  Value* n = g.cast(g.op("Not", {at_or_below}), at::kLong);
  Value* idx = reduce(g, "ReduceSum", n, std::vector<int64_t>{rank}, false);
  return g.b(2) ? g.cast(idx, at::kInt) : idx;
}
TONNX_SYMBOLIC("aten::bucketize", 9, [](SymbolicContext& g) -> Outputs {
  if (g.arg_type(0) != "Tensor") return bucketize(g, g.input(0), 0);
  return bucketize(g, g.input(0), g.rank(0));
});

// nonzero_numpy(self): one 1-D index tensor per dim (torch.nonzero(as_tuple=True)).
TONNX_SYMBOLIC("aten::nonzero_numpy", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  if (rank == 0) g.fail("nonzero(as_tuple=True) of a 0-d tensor is not supported");
  Value* nz = g.op("NonZero", {g.input(0)});  // [rank, count]
  std::vector<Value*> parts = split_sizes(g, nz, std::vector<int64_t>(rank, 1), 0);
  for (auto& p : parts) p = squeeze(g, p, {0});
  return parts;
});

// embedding_bag(weight, indices [n], offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights, include_last_offset[, padding_idx]) -> (output, offset2bag, bag_size,
// max_indices); only the output is exported. mode: 0 sum, 1 mean, 2 max. Bag b holds
// indices [offsets[b], offsets[b + 1]) (F.embedding_bag makes the offsets of 2-D indices).
// Sum and mean add every row into its bag with ScatterND (opset 16); max, and sum and mean
// before 16, pad the bags to the longest and mask (opset 11: Range). Rows of padding_idx are
// left out (and not counted by the mean); an empty bag is zeros.
Outputs embedding_bag(SymbolicContext& g) {
  Value* weight = g.input(0);
  int64_t mode = g.i(4);
  if (mode < 0 || mode > 2)
    g.fail("mode must be 0 (sum), 1 (mean) or 2 (max), got " + std::to_string(mode));
  bool has_psw = !g.is_none(6);
  if (has_psw && mode != 0) g.fail("per_sample_weights are only supported with mode='sum'");
  bool include_last = g.b(7);
  std::optional<int64_t> padding;
  if (g.num_inputs() > 8 && !g.is_none(8) && g.i(8) >= 0) padding = g.i(8);
  at::ScalarType dt = g.scalar_type(0);
  Value* idx = g.cast(g.input(1), at::kLong);
  // The indices that count: all but padding_idx.
  Value* keep = nullptr;
  if (padding)
    keep = g.op("Not", {g.op("Equal", {idx, g.constant(at::scalar_tensor(*padding, at::kLong))})});
  Value* zero = g.constant_scalar(0, dt);
  Value* one = g.constant_scalar(1, dt);
  int64_t rank = g.rank(1);
  if (rank != 1)
    g.fail("indices must be 1-D, got rank " + std::to_string(rank) +
           " (F.embedding_bag flattens 2-D indices and makes the offsets)");
  // Bag b holds indices [starts[b], ends[b]).
  Value* l0 = g.constant_ints({0});
  Value* offsets = g.cast(g.input(2), at::kLong);
  Value* n_bags = g.op("Shape", {offsets});
  if (include_last) n_bags = g.op("Sub", {n_bags, g.constant_ints({1})});
  Value* n_idx = g.op("Shape", {idx});
  Value* starts = g.op("Slice", {offsets, l0, n_bags, l0});
  Value* ends =
      include_last
          ? g.op("Slice",
                 {offsets, g.constant_ints({1}), g.op("Add", {n_bags, g.constant_ints({1})}), l0})
          : g.op("Concat",
                 {g.op("Slice", {offsets, g.constant_ints({1}), g.constant_ints({kInt64Max}), l0}),
                  n_idx},
                 {{"axis", int64_t{0}}});
  Value* s0 = g.constant(at::scalar_tensor(0, at::kLong));
  Value* s1 = g.constant(at::scalar_tensor(1, at::kLong));
  if (mode != 2 && g.opset() >= 16) {
    // Sum and mean in O(indices + bags): index j belongs to bag #(starts <= j) - 1, the
    // running sum of the starts marked at their positions (ScatterElements add; a start at n,
    // an empty bag at the end, marks the extra last slot); past the last offset, to an extra
    // bag that is dropped. ScatterND adds the rows into their bags.
    Value* pos = g.op("Range", {s0, squeeze(g, n_idx, {0}), s1});
    Value* marks = g.op("ConstantOfShape", {g.op("Add", {n_idx, g.constant_ints({1})})},
                        {{"value", at::zeros({1}, at::kLong)}});
    Value* start_marks =
        g.op("ConstantOfShape", {g.op("Shape", {starts})}, {{"value", at::ones({1}, at::kLong)}});
    marks = g.op("ScatterElements", {marks, starts, start_marks}, {{"reduction", "add"}});
    marks = g.op("Slice", {marks, l0, n_idx, l0});
    Value* bag = g.op("Sub", {g.op("CumSum", {marks, s0}), s1});
    Value* last = g.op("Gather", {ends, g.op("Sub", {squeeze(g, n_bags, {0}), s1})});
    bag = g.op("Where", {g.op("Less", {pos, last}), bag, squeeze(g, n_bags, {0})});
    Value* bag_idx = unsqueeze(g, bag, {1});
    Value* slots = g.op("Add", {n_bags, g.constant_ints({1})});
    Value* d =
        g.op("Slice", {g.op("Shape", {weight}), g.constant_ints({1}), g.constant_ints({2}), l0});
    Value* zeros = g.op("ConstantOfShape", {g.op("Concat", {slots, d}, {{"axis", int64_t{0}}})},
                        {{"value", at::zeros({1}, dt)}});
    Value* rows = g.op("Gather", {weight, idx});  // [n, D]
    // Each index's weight: per_sample_weights, 0 for padding_idx.
    Value* w = has_psw ? g.cast(g.input(6), dt) : nullptr;
    if (keep) w = w ? g.op("Mul", {w, g.cast(keep, dt)}) : g.cast(keep, dt);
    if (w) rows = g.op("Mul", {rows, unsqueeze(g, w, {1})});
    Value* sum = g.op("ScatterND", {zeros, bag_idx, rows}, {{"reduction", "add"}});
    sum = g.op("Slice", {sum, l0, n_bags, l0});
    if (mode == 0) return sum;
    Value* ones =
        keep ? g.cast(keep, dt) : g.op("ConstantOfShape", {n_idx}, {{"value", at::ones({1}, dt)}});
    Value* zcount = g.op("ConstantOfShape", {slots}, {{"value", at::zeros({1}, dt)}});
    Value* count = g.op("ScatterND", {zcount, bag_idx, ones}, {{"reduction", "add"}});
    count = g.op("Slice", {count, l0, n_bags, l0});
    return g.op("Div", {sum, unsqueeze(g, g.op("Max", {count, one}), {1})});
  }
  // Max (and sum / mean before opset 16): bags padded to the longest, [bags, longest, D],
  // the padding masked out. Memory grows with bags * longest bag.
  Value* len = g.op("Sub", {ends, starts});
  Value* longest =
      reduce(g, "ReduceMax", g.op("Concat", {len, g.constant_ints({1})}, {{"axis", int64_t{0}}}),
             std::vector<int64_t>{0}, false);
  Value* r = unsqueeze(g, g.op("Range", {s0, longest, s1}), {0});  // [1, L]
  Value* valid = g.op("Less", {r, unsqueeze(g, len, {1})});        // [B, L]
  Value* at = g.op("Where", {valid, g.op("Add", {unsqueeze(g, starts, {1}), r}), s0});
  Value* bag_rows = g.op("Gather", {weight, g.op("Gather", {idx, at})});  // [B, L, D]
  if (keep) valid = g.op("And", {valid, g.op("Gather", {keep, at})});
  Value* count = reduce(g, "ReduceSum", g.cast(valid, dt), std::vector<int64_t>{1}, true);
  Value* valid3 = unsqueeze(g, valid, {2});
  if (mode == 2) {
    Value* lowest = g.constant_scalar(-std::numeric_limits<double>::infinity(), dt);
    Value* m = reduce(g, "ReduceMax", g.op("Where", {valid3, bag_rows, lowest}),
                      std::vector<int64_t>{1}, false);
    return g.op("Where", {g.op("Greater", {count, zero}), m, zero});
  }
  if (has_psw)
    bag_rows =
        g.op("Mul", {bag_rows, unsqueeze(g, g.op("Gather", {g.cast(g.input(6), dt), at}), {2})});
  Value* sum = reduce(g, "ReduceSum", g.op("Where", {valid3, bag_rows, zero}),
                      std::vector<int64_t>{1}, false);
  if (mode == 0) return sum;
  return g.op("Div", {sum, g.op("Max", {count, one})});
}
TONNX_SYMBOLIC("aten::embedding_bag", 11, embedding_bag);
TONNX_SYMBOLIC("aten::_embedding_bag", 11, embedding_bag);

}  // namespace
}  // namespace tonnx::sym
