// Advanced indexing: index (tensor and bool-mask indices) and index_put.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// A bool or uint8 index is a mask (torch indexes with its nonzero() coordinates).
bool is_mask(const Value* v) {
  auto t = v->type();
  return t && (t->dtype == ir::DType::Bool || t->dtype == ir::DType::UInt8);
}

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
    if (!is_mask(i)) {
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

// Where the tensor indices of x[...] sit: the dims they index (a mask of rank r indexes r dims)
// moved to the front by `perm`, in order, then the other dims; the first indexed dim; and
// whether the tensor indices are adjacent in the index list.
struct IndexLayout {
  std::vector<int64_t> perm;
  int64_t first_dim = -1;
  bool adjacent = true;
};
IndexLayout index_layout(SymbolicContext& g, const std::vector<Value*>& idx, int64_t rank) {
  IndexLayout l;
  std::vector<bool> indexed(rank, false);
  int64_t d = 0, last_entry = -1;
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t covers = 1;
    if (idx[e]) {
      auto t = idx[e]->type();
      if (is_mask(idx[e])) {
        if (!t->shape) g.fail("a bool mask index of unknown rank is not supported");
        covers = static_cast<int64_t>(t->shape->size());
      }
      if (last_entry >= 0 && last_entry != static_cast<int64_t>(e) - 1) l.adjacent = false;
      last_entry = static_cast<int64_t>(e);
      if (l.first_dim < 0) l.first_dim = d;
      for (int64_t k = 0; k < covers; ++k) {
        if (d + k >= rank) g.fail("too many indices for a tensor of rank " + std::to_string(rank));
        indexed[d + k] = true;
        l.perm.push_back(d + k);
      }
    }
    d += covers;
  }
  for (int64_t k = 0; k < rank; ++k)
    if (!indexed[k]) l.perm.push_back(k);
  return l;
}

// The permutation from [B (nb dims), first_dim dims, rest] (GatherND's layout over x with the
// indexed dims in front) to PyTorch's [first_dim dims, B, rest], for a result of rank r.
std::vector<int64_t> broadcast_dims_to_torch(int64_t nb, int64_t first_dim, int64_t r) {
  std::vector<int64_t> perm;
  for (int64_t j = 0; j < first_dim; ++j) perm.push_back(nb + j);
  for (int64_t j = 0; j < nb; ++j) perm.push_back(j);
  for (int64_t j = nb + first_dim; j < r; ++j) perm.push_back(j);
  return perm;
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
  // One tensor index: Gather along its dim (a bool vector selects with NonZero; a multi-dim
  // mask on the leading dims is GatherND, past them the general path below).
  if (pos.size() == 1) {
    Value* i = idx[pos[0]];
    bool mask = is_mask(i);
    int64_t mrank =
        i->type() && i->type()->shape ? static_cast<int64_t>(i->type()->shape->size()) : 1;
    if (!mask) return g.op("Gather", {x, g.cast(i, at::kLong)}, {{"axis", pos[0]}});
    if (mrank == 1)
      return g.op("Gather", {x, squeeze(g, g.op("NonZero", {g.cast(i, at::kBool)}), {0})},
                  {{"axis", pos[0]}});
    if (g.opset() < 11) g.unsupported_below(11, "indexing with a bool mask");
    if (pos[0] == 0) return g.op("GatherND", {x, mask_to_indices(g, g.cast(i, at::kBool))});
  }
  // Several tensor indices: GatherND with broadcast index rows over the indexed dims, moved to
  // the front first when they are not the leading ones.
  if (g.opset() < 11) g.unsupported_below(11, "indexing with several tensors");
  bool leading = true;
  for (size_t k = 0; k < pos.size(); ++k) leading = leading && pos[k] == static_cast<int64_t>(k);
  int64_t dims = 0;
  if (leading) return g.op("GatherND", {x, index_rows(g, idx, pos, dims)});
  IndexLayout l = index_layout(g, idx, rank);
  Value* xt = g.op("Transpose", {x}, {{"perm", l.perm}});
  Value* y = g.op("GatherND", {xt, index_rows(g, idx, pos, dims)});  // [B..., rest...]
  // PyTorch puts the broadcast dims B where the first index was when the tensor indices are
  // adjacent (x[:, i, j]), and first otherwise (x[i, :, j]).
  if (!l.adjacent || l.first_dim == 0) return y;
  auto out = g.output_type();
  if (!out || !out->shape) g.fail("the rank of the result is not known");
  int64_t out_rank = static_cast<int64_t>(out->shape->size());
  int64_t nb = out_rank - (rank - dims);
  return g.op("Transpose", {y}, {{"perm", broadcast_dims_to_torch(nb, l.first_dim, out_rank)}});
});

// ScatterND with reduction='add' before opset 16: the rows' positions in the first k dims as
// one linear index into x flattened to [positions, rest...], added there by a one-hot sum.
// Memory grows with rows x positions.
Value* accumulate_before_16(SymbolicContext& g, Value* x, Value* rows, Value* values, int64_t k,
                            int64_t rank, at::ScalarType dt) {
  Value* shape = g.op("Shape", {x});
  auto dim_of = [&](int64_t j) {
    return g.op("Gather", {shape, g.constant(at::scalar_tensor(j, at::kLong))},
                {{"axis", int64_t{0}}});
  };
  Value* zero = g.constant(at::scalar_tensor(int64_t{0}, at::kLong));
  Value* linear = nullptr;
  Value* stride = g.constant(at::scalar_tensor(int64_t{1}, at::kLong));
  for (int64_t j = k - 1; j >= 0; --j) {
    Value* r = g.op("Gather", {rows, g.constant(at::scalar_tensor(j, at::kLong))},
                    {{"axis", int64_t{-1}}});
    Value* n = dim_of(j);
    r = g.op("Where", {g.op("Less", {r, zero}), g.op("Add", {r, n}), r});  // negative: from the end
    Value* term = g.op("Mul", {r, stride});
    linear = linear ? g.op("Add", {linear, term}) : term;
    stride = g.op("Mul", {stride, n});
  }
  Value* tail = g.op("Slice", {shape, g.constant_ints({k}), g.constant_ints({kInt64Max})});
  Value* flat_shape = g.op("Concat", {g.constant_ints({-1}), tail}, {{"axis", int64_t{0}}});
  Value* flat_x = g.op("Reshape", {x, flat_shape});
  Value* flat_values = g.op("Reshape", {values, flat_shape});
  int64_t frank = 1 + rank - k;
  std::vector<int64_t> column(static_cast<size_t>(frank), 1);
  column[0] = -1;
  Value* index = g.op(
      "Expand", {g.op("Reshape", {linear, g.constant_ints(column)}), g.op("Shape", {flat_values})});
  Value* sum = scatter_add_onehot(g, flat_x, index, flat_values, 0, frank, dt);
  return g.op("Reshape", {sum, shape});
}

// index_put(self, indices, values, accumulate): ScatterND over the same index forms. Indices
// that are not on the leading dims scatter into x with the indexed dims moved to the front,
// and the values are laid out as there (from PyTorch's layout of x[indices]).
TONNX_SYMBOLIC("aten::index_put", 11, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  std::vector<Value*> idx = g.inputs_list(1);
  at::ScalarType dt = g.scalar_type(0);
  bool accumulate = g.b(3);
  std::vector<int64_t> pos;
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i]) pos.push_back(static_cast<int64_t>(i));
  if (pos.empty()) g.fail("index_put without a tensor index");
  bool leading = true;
  for (size_t k = 0; k < pos.size(); ++k) leading = leading && pos[k] == static_cast<int64_t>(k);
  Value* rows;
  int64_t indexed_dims = static_cast<int64_t>(pos.size());
  if (pos.size() == 1 && pos[0] == 0 && idx[0]->type() &&
      idx[0]->type()->dtype == ir::DType::Bool) {
    rows = mask_to_indices(g, idx[0]);
    // A mask indexes as many dims as it has.
    if (idx[0]->type()->shape) indexed_dims = static_cast<int64_t>(idx[0]->type()->shape->size());
  } else {
    rows = index_rows(g, idx, pos, indexed_dims);
  }
  IndexLayout l;
  Value* xt = x;
  if (!leading) {
    l = index_layout(g, idx, g.rank(0));
    xt = g.op("Transpose", {x}, {{"perm", l.perm}});
  }
  // updates must have shape rows.shape[:-1] + xt.shape[indexed_dims:]
  Value* row_shape =
      g.op("Slice", {g.op("Shape", {rows}), g.constant_ints({0}), g.constant_ints({-1})});
  Value* tail = g.op("Slice", {g.op("Shape", {xt}), g.constant_ints({indexed_dims}),
                               g.constant_ints({kInt64Max})});
  Value* upd_shape = g.op("Concat", {row_shape, tail}, {{"axis", int64_t{0}}});
  Value* values;
  if (!leading && l.adjacent && l.first_dim > 0) {
    // PyTorch's layout puts the broadcast dims B after the first_dim leading dims.
    int64_t nb = 0;
    for (int64_t p : pos) {
      auto t = idx[static_cast<size_t>(p)]->type();
      bool mask = is_mask(idx[static_cast<size_t>(p)]);
      if (!mask && (!t || !t->shape)) g.fail("the rank of an index is not known");
      nb = std::max<int64_t>(nb, mask ? 1 : static_cast<int64_t>(t->shape->size()));
    }
    int64_t r = nb + g.rank(0) - indexed_dims;
    std::vector<int64_t> to_torch = broadcast_dims_to_torch(nb, l.first_dim, r), back(r);
    for (int64_t j = 0; j < r; ++j) back[to_torch[j]] = j;
    Value* torch_shape = g.op("Gather", {upd_shape, g.constant_ints(to_torch)});
    values = g.op("Expand", {input_as(g, 2, dt), torch_shape});
    values = g.op("Transpose", {values}, {{"perm", back}});
  } else {
    values = g.op("Expand", {input_as(g, 2, dt), upd_shape});
  }
  std::vector<ir::Attr> attrs;
  if (accumulate) attrs.push_back({"reduction", "add"});
  Value* y = accumulate && g.opset() < 16
                 ? accumulate_before_16(g, xt, rows, values, indexed_dims, g.rank(0), dt)
                 : g.op("ScatterND", {xt, rows, values}, attrs);
  if (leading) return y;
  std::vector<int64_t> inverse(l.perm.size());
  for (size_t j = 0; j < l.perm.size(); ++j) inverse[l.perm[j]] = static_cast<int64_t>(j);
  return g.op("Transpose", {y}, {{"perm", inverse}});
});

}  // namespace
}  // namespace tonnx::sym
