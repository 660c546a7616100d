// Advanced indexing: index (tensor and bool-mask indices) and index_put.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// Turns a bool mask into int64 index rows: NonZero gives [rank, n]; GatherND wants [n, rank].
Value* mask_to_indices(SymbolicContext& g, Value* mask) {
  return g.op("Transpose", {g.op("NonZero", {mask})}, {{"perm", ir::Ints{1, 0}}});
}

// Several tensor indices on the leading dims as GatherND / ScatterND index rows [..., k]:
// a bool (or uint8) mask of rank r becomes its r NonZero coordinate vectors (torch indexes
// with mask.nonzero()), integers are cast to int64, and all are broadcast to a common shape
// (numpy's rule, through an Add of zeros) and stacked on a new last axis. `dims` is set to
// the number of dims the rows index.
Value* index_rows(SymbolicContext& g, const std::vector<Value*>& idx,
                  const std::vector<int64_t>& pos, int64_t& dims) {
  std::vector<Value*> cols;
  dims = 0;
  for (int64_t p : pos) {
    Value* i = idx[static_cast<size_t>(p)];
    auto t = i->type();
    bool mask = t && (t->dtype == ir::DType::Bool || t->dtype == ir::DType::UInt8);
    if (!mask) {
      cols.push_back(g.cast(i, at::kLong));
      ++dims;
      continue;
    }
    if (!t->shape) g.fail("a bool mask index of unknown rank is not supported");
    int64_t r = static_cast<int64_t>(t->shape->size());
    Value* nz = g.op("NonZero", {g.cast(i, at::kBool)});  // [r, n]
    for (int64_t k = 0; k < r; ++k)
      cols.push_back(g.op("Gather", {nz, g.constant(at::scalar_tensor(k, at::kLong))},
                          {{"axis", int64_t{0}}}));
    dims += r;
  }
  Value* zeros = nullptr;
  for (Value* c : cols) {
    Value* z = g.op("Mul", {c, g.constant(at::scalar_tensor(0, at::kLong))});
    zeros = zeros ? g.op("Add", {zeros, z}) : z;
  }
  Value* shape = g.op("Shape", {zeros});
  std::vector<Value*> stacked;
  for (Value* c : cols) stacked.push_back(unsqueeze(g, g.op("Expand", {c, shape}), {-1}));
  return g.op("Concat", stacked, {{"axis", int64_t{-1}}});
}

// index(self, indices: Tensor?[]): None entries keep a dim.
TONNX_SYMBOLIC("aten::index", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  std::vector<Value*> idx = g.inputs_list(1);
  int64_t rank = g.rank(0);
  std::vector<int64_t> pos;
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i]) pos.push_back(static_cast<int64_t>(i));
  if (pos.empty()) return g.op("Identity", {x});
  auto dtype_of = [&](Value* v) { return v->type() ? v->type()->dtype : ir::DType::Int64; };
  // One tensor index: Gather along its dim (a bool vector selects with NonZero).
  if (pos.size() == 1) {
    Value* i = idx[pos[0]];
    if (dtype_of(i) == ir::DType::Bool || dtype_of(i) == ir::DType::UInt8) {
      int64_t mrank =
          i->type() && i->type()->shape ? static_cast<int64_t>(i->type()->shape->size()) : 1;
      if (mrank > 1 || pos[0] != 0) {
        if (pos[0] != 0) g.fail("a multi-dim bool mask after a None index is not supported");
        if (g.opset() < 11) g.unsupported_below(11, "indexing with a bool mask");
        return g.op("GatherND", {x, mask_to_indices(g, g.cast(i, at::kBool))});
      }
      i = squeeze(g, g.op("NonZero", {g.cast(i, at::kBool)}), {0});
    }
    return g.op("Gather", {x, g.cast(i, at::kLong)}, {{"axis", pos[0]}});
  }
  // Several int64 indices on the leading dims: GatherND with broadcast index rows.
  for (size_t k = 0; k < pos.size(); ++k)
    if (pos[k] != static_cast<int64_t>(k))
      g.fail("tensor indices must be on consecutive leading dims (x[i, j], not x[:, i, :, j])");
  if (g.opset() < 11) g.unsupported_below(11, "indexing with several tensors");
  (void)rank;
  int64_t dims = 0;
  return g.op("GatherND", {x, index_rows(g, idx, pos, dims)});
});

// index_put(self, indices, values, accumulate): ScatterND over the same index forms.
TONNX_SYMBOLIC("aten::index_put", 11, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  std::vector<Value*> idx = g.inputs_list(1);
  at::ScalarType dt = g.scalar_type(0);
  bool accumulate = g.b(3);
  std::vector<int64_t> pos;
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i]) pos.push_back(static_cast<int64_t>(i));
  for (size_t k = 0; k < pos.size(); ++k)
    if (pos[k] != static_cast<int64_t>(k))
      g.fail("index_put supports tensor indices on the leading dims only");
  Value* rows;
  int64_t indexed_dims = static_cast<int64_t>(pos.size());
  if (pos.size() == 1 && idx[0]->type() && idx[0]->type()->dtype == ir::DType::Bool) {
    rows = mask_to_indices(g, idx[0]);
    // A mask indexes as many dims as it has.
    if (idx[0]->type()->shape) indexed_dims = static_cast<int64_t>(idx[0]->type()->shape->size());
  } else {
    rows = index_rows(g, idx, pos, indexed_dims);
  }
  // updates must have shape rows.shape[:-1] + x.shape[indexed_dims:]
  Value* row_shape =
      g.op("Slice", {g.op("Shape", {rows}), g.constant_ints({0}), g.constant_ints({-1})});
  Value* tail = g.op("Slice", {g.op("Shape", {x}), g.constant_ints({indexed_dims}),
                               g.constant_ints({std::numeric_limits<int64_t>::max()})});
  Value* upd_shape = g.op("Concat", {row_shape, tail}, {{"axis", int64_t{0}}});
  Value* values = g.op("Expand", {input_as(g, 2, dt), upd_shape});
  if (accumulate) {
    if (g.opset() < 16)
      g.unsupported_below(16, "index_put with accumulate=True (ScatterND reduction)");
    return g.op("ScatterND", {x, rows, values}, {{"reduction", "add"}});
  }
  return g.op("ScatterND", {x, rows, values});
});

}  // namespace
}  // namespace tonnx::sym
