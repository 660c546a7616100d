// Order statistics, counts and products that torch.onnx 1.13 does not export: kthvalue and
// median (TopK), searchsorted (comparison against every element, as bucketize), count_nonzero,
// trace, cumprod, cummax and cummin (reductions over a triangular mask), diag of a vector,
// tile (Tile, as repeat).
#include <limits>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

bool is_float(at::ScalarType t) { return at::isFloatingType(t); }

// The k-th smallest (k: int64 [1], from 1) along `dim` of x (rank >= 1), with its index.
// LibTorch orders NaN above everything: NaN is +inf for TopK, and the value is read back from
// x at the index TopK gives. Indices of tied values are TopK's (the lowest first); LibTorch's
// choice among ties is its quickselect's, which differs between kthvalue and median.
std::pair<Value*, Value*> kth_smallest(SymbolicContext& g, Value* x, Value* k, int64_t dim,
                                       bool keep, at::ScalarType t) {
  Value* key = x;
  if (is_float(t))
    key = g.op("Where", {g.op("IsNaN", {x}),
                         g.constant_scalar(std::numeric_limits<double>::infinity(), t), x});
  std::vector<Value*> top =
      g.op_n("TopK", {key, k}, {{"axis", dim}, {"largest", int64_t{0}}, {"sorted", int64_t{1}}}, 2);
  Value* start = g.op("Sub", {k, g.constant_ints({1})});
  Value* idx = g.op("Slice", {top[1], start, k, g.constant_ints({dim})});
  Value* val = g.op("GatherElements", {x, idx}, {{"axis", dim}});
  if (!keep) {
    idx = squeeze(g, idx, {dim});
    val = squeeze(g, val, {dim});
  }
  return {val, idx};
}

// kthvalue(self, k, dim=-1, keepdim=False) -> (values, indices)
TONNX_SYMBOLIC("aten::kthvalue", 11, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  Value* x = g.input(0);
  if (rank == 0) x = unsqueeze(g, x, {0});
  int64_t dim = norm_dim(g, g.i(2), std::max<int64_t>(rank, 1));
  int64_t k = g.i(1);
  if (k < 1) g.fail("k must be at least 1, got " + std::to_string(k));
  if (auto n = known_size(g, 0, dim); rank > 0 && n && k > *n)
    g.fail("k is " + std::to_string(k) + " but dim " + std::to_string(dim) + " has " +
           std::to_string(*n) + " elements");
  auto [v, i] =
      kth_smallest(g, x, g.constant_ints({k}), dim, g.b(3) || rank == 0, g.scalar_type(0));
  if (rank == 0) return {squeeze(g, v, {0}), squeeze(g, i, {0})};
  return {v, i};
});

// median(self) (lower median of all elements) or median(self, dim, keepdim) -> (values,
// indices). A slice holding NaN gives NaN, at the index of its first NaN, as in LibTorch.
Outputs median(SymbolicContext& g) {
  int64_t rank = g.rank(0);
  bool all = g.num_inputs() == 1;
  Value* x = g.input(0);
  int64_t dim = 0;
  bool keep = false;
  if (all || rank == 0) {
    x = g.op("Reshape", {x, g.constant_ints({-1})});
    if (!all) keep = g.b(2);
  } else {
    dim = norm_dim(g, g.i(1), rank);
    keep = g.b(2);
  }
  at::ScalarType t = g.scalar_type(0);
  Value* n = g.op("Gather", {g.op("Shape", {x}), g.constant_ints({dim})}, {{"axis", int64_t{0}}});
  // k = (n - 1) / 2 + 1; an empty slice is LibTorch's error (median of an empty tensor).
  Value* k =
      g.op("Add", {g.op("Div", {g.op("Sub", {n, g.constant_ints({1})}), g.constant_ints({2})}),
                   g.constant_ints({1})});
  auto [v, i] = kth_smallest(g, x, k, dim, true, t);
  if (is_float(t)) {
    Value* nan = g.op("IsNaN", {x});
    Value* any = reduce(g, "ReduceMax", g.cast(nan, at::kInt), std::vector<int64_t>{dim}, true);
    Value* has = g.cast(any, at::kBool);
    Value* first =
        g.op("ArgMax", {g.cast(nan, at::kInt)}, {{"axis", dim}, {"keepdims", int64_t{1}}});
    v = g.op("Where", {has, g.constant_scalar(std::numeric_limits<double>::quiet_NaN(), t), v});
    i = g.op("Where", {has, first, i});
  }
  if (all) return squeeze(g, v, {0});
  if (rank == 0) {  // median(0-d, dim, keepdim): itself, index 0
    v = squeeze(g, v, {0});
    i = squeeze(g, i, {0});
  } else if (!keep) {
    v = squeeze(g, v, {dim});
    i = squeeze(g, i, {dim});
  }
  return {v, i};
}
TONNX_SYMBOLIC("aten::median", 11, [](SymbolicContext& g) { return median(g); });

// searchsorted(sorted_sequence, self, out_int32, right, side, sorter): for each value, how many
// elements of its row of the sequence lie below it (right: at or below). NaN values count as
// above everything, as LibTorch's binary search leaves them. self may be a number.
TONNX_SYMBOLIC("aten::searchsorted", 9, [](SymbolicContext& g) -> Outputs {
  bool scalar = g.arg_type(1) != "Tensor";
  int64_t srank = g.rank(0);
  int64_t vrank = scalar ? 0 : g.rank(1);
  if (srank < 1) g.fail("sorted_sequence must have at least one dim");
  if (srank > 1 && srank != vrank)
    g.fail("an N-D sorted_sequence needs values of the same rank, got " + std::to_string(srank) +
           " and " + std::to_string(vrank));
  bool right = g.b(3);
  if (g.num_inputs() > 4 && !g.is_none(4)) {
    std::string side = g.s(4);
    if (side != "left" && side != "right")
      g.fail("side must be 'left' or 'right', got '" + side + "'");
    right = side == "right";
  }
  at::ScalarType t =
      scalar ? g.scalar_type(0) : at::promoteTypes(g.scalar_type(0), g.scalar_type(1));
  Value* seq = g.cast(g.input(0), t);
  if (g.num_inputs() > 5 && !g.is_none(5))
    seq = g.op("GatherElements", {seq, g.input(5)}, {{"axis", srank - 1}});
  Value* v = scalar ? g.constant_scalar(g.f(1), t) : g.cast(g.input(1), t);
  // values [..., k] against the sequence [..., m]: [..., k, 1] with [..., 1, m].
  Value* vv = unsqueeze(g, v, {vrank});
  Value* ss = srank == 1 ? seq : unsqueeze(g, seq, {srank - 1});
  Value* below = g.op("Less", {ss, vv});
  if (right) below = g.op("Or", {below, equal(g, ss, vv, t)});
  Value* idx = reduce(g, "ReduceSum", g.cast(below, at::kLong), std::vector<int64_t>{vrank}, false);
  if (is_float(t) && !scalar)  // NaN: after every element
    idx = g.op("Where", {g.op("IsNaN", {v}), dim_size(g, 0, srank - 1), idx});
  return g.b(2) ? g.cast(idx, at::kInt) : idx;
});

// count_nonzero(self, dim: int[] or int?): NaN counts, as it is not zero.
TONNX_SYMBOLIC("aten::count_nonzero", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  at::ScalarType t = g.scalar_type(0);
  Value* x = g.input(0);
  Value* nz = t == at::kBool ? x : g.op("Not", {equal(g, x, g.constant_scalar(0, t), t)});
  std::optional<std::vector<int64_t>> dims;
  if (!g.is_none(1)) {
    dims = g.ints(1);
    for (auto& d : *dims) d = norm_dim(g, d, std::max<int64_t>(rank, 1));
    if (dims->empty()) dims.reset();
  }
  return reduce(g, "ReduceSum", g.cast(nz, at::kLong), dims, false);
});

// trace(self): the sum of the main diagonal of a matrix (int64 for integer inputs). Where, not
// a product with the identity, keeps inf and NaN off the diagonal out of the sum.
TONNX_SYMBOLIC("aten::trace", 9, [](SymbolicContext& g) -> Outputs {
  if (g.rank(0) != 2) g.fail("trace needs a matrix, got rank " + std::to_string(g.rank(0)));
  at::ScalarType out = g.output_scalar_type();
  Value* x = g.cast(g.input(0), out);
  Value* eye = g.cast(g.op("EyeLike", {g.input(0)}, {{"dtype", int64_t{1}}}), at::kBool);
  return reduce(g, "ReduceSum", g.op("Where", {eye, x, g.constant_scalar(0, out)}), std::nullopt,
                false);
});

// x with `dim` moved last, the permutation that moves it back, and the mask [n, n] of the
// positions j <= i (rows i, columns j) for a scan along that dim.
struct Scan {
  Value* last;
  std::vector<int64_t> back;
  Value* upto;
  Value* positions;  // j as int64 [n]
};
Scan scan_along(SymbolicContext& g, Value* x, int64_t dim, int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  std::vector<int64_t> back(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) back[static_cast<size_t>(perm[static_cast<size_t>(d)])] = d;
  Value* n = g.op("Gather", {g.op("Shape", {x}), g.constant(at::scalar_tensor(dim, at::kLong))},
                  {{"axis", int64_t{0}}});
  Value* r = g.op("Range", {g.constant(at::scalar_tensor(0, at::kLong)), n,
                            g.constant(at::scalar_tensor(1, at::kLong))});
  Value* upto = g.op("Not", {g.op("Greater", {unsqueeze(g, r, {0}), unsqueeze(g, r, {1})})});
  return {g.op("Transpose", {x}, {{"perm", perm}}), back, upto, r};
}

// cumprod(self, dim, dtype): out[i] = prod of x[j] for j <= i, as ReduceProd over a lower
// triangular mask (ones elsewhere). It takes n^2 elements per row of n: fine for the short
// dims cumprod is used on (schedules, lengths); the products' order is ReduceProd's.
TONNX_SYMBOLIC("aten::cumprod", 11, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  at::ScalarType t = g.output_scalar_type();
  Value* x = g.cast(g.input(0), t);
  if (rank == 0) return x;
  Scan sc = scan_along(g, x, norm_dim(g, g.i(1), rank), rank);
  Value* rows =
      g.op("Where", {sc.upto, unsqueeze(g, sc.last, {rank - 1}), g.constant_scalar(1, t)});
  Value* prod = reduce(g, "ReduceProd", rows, std::vector<int64_t>{rank}, false);
  return g.op("Transpose", {prod}, {{"perm", sc.back}});
});

// cummax/cummin(self, dim) -> (values, indices), as LibTorch's scan: a NaN, once seen, is the
// value from there on (at the latest NaN's index); among equal values the latest index wins.
Outputs cum_extreme(SymbolicContext& g, bool is_max) {
  int64_t rank = g.rank(0);
  at::ScalarType t = g.scalar_type(0);
  Value* x = g.input(0);
  if (rank == 0) return {x, g.constant(at::scalar_tensor(0, at::kLong))};
  int64_t dim = norm_dim(g, g.i(1), rank);
  bool wide = narrow_int(x).has_value();  // compared in int32 (bool too), cast back
  at::ScalarType ct = wide ? at::kInt : t;
  Scan s = scan_along(g, g.cast(x, ct), dim, rank);
  Value* xj = unsqueeze(g, s.last, {rank - 1});  // [..., 1, n]: j along the last axis
  double far = is_float(ct) ? (is_max ? -1 : 1) * std::numeric_limits<double>::infinity()
               : is_max     ? static_cast<double>(ct == at::kInt ? INT32_MIN : INT64_MIN)
                            : static_cast<double>(ct == at::kInt ? INT32_MAX : INT64_MAX);
  Value* far_c = ct == at::kLong
                     ? g.constant(at::scalar_tensor(is_max ? INT64_MIN : INT64_MAX, at::kLong))
                     : g.constant_scalar(far, ct);
  Value* isnan = is_float(ct) ? g.op("IsNaN", {xj}) : nullptr;
  Value* key = isnan ? g.op("Where", {isnan, far_c, xj}) : xj;
  Value* v = reduce(g, is_max ? "ReduceMax" : "ReduceMin", g.op("Where", {s.upto, key, far_c}),
                    std::vector<int64_t>{rank}, false);  // [..., n]
  Value* vi = unsqueeze(g, v, {rank});                   // [..., n, 1]
  Value* none = g.constant(at::scalar_tensor(-1, at::kLong));
  Value* hit = g.op("And", {s.upto, equal(g, xj, vi, ct)});
  Value* idx = reduce(g, "ReduceMax", g.op("Where", {hit, s.positions, none}),
                      std::vector<int64_t>{rank}, false);
  if (isnan) {
    Value* nan_at =
        reduce(g, "ReduceMax", g.op("Where", {g.op("And", {s.upto, isnan}), s.positions, none}),
               std::vector<int64_t>{rank}, false);
    Value* seen = g.op("Greater", {nan_at, none});
    v = g.op("Where", {seen, g.constant_scalar(std::numeric_limits<double>::quiet_NaN(), ct), v});
    idx = g.op("Where", {seen, nan_at, idx});
  }
  v = g.op("Transpose", {v}, {{"perm", s.back}});
  idx = g.op("Transpose", {idx}, {{"perm", s.back}});
  return {wide ? g.cast(v, t) : v, idx};
}
TONNX_SYMBOLIC("aten::cummax", 11, [](SymbolicContext& g) { return cum_extreme(g, true); });
TONNX_SYMBOLIC("aten::cummin", 11, [](SymbolicContext& g) { return cum_extreme(g, false); });

// diag(self, diagonal=0): a vector of n becomes the square matrix of n + |k| with it on
// diagonal k (zeros elsewhere); a matrix gives its diagonal k, as diagonal() does.
TONNX_SYMBOLIC("aten::diag", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  int64_t k = g.num_inputs() > 1 ? g.i(1) : 0;
  at::ScalarType t = g.scalar_type(0);
  if (rank == 2) {  // elements (i + max(0, -k), i + max(0, k))
    std::vector<int64_t> sizes = g.sizes(0);
    int64_t r0 = std::max<int64_t>(0, -k), c0 = std::max<int64_t>(0, k);
    int64_t count = std::max<int64_t>(0, std::min(sizes[0] - r0, sizes[1] - c0));
    std::vector<int64_t> flat;
    for (int64_t i = 0; i < count; ++i) flat.push_back((i + r0) * sizes[1] + i + c0);
    Value* x = g.op("Reshape", {g.input(0), g.constant_ints({-1})});
    return g.op("Gather", {x, g.constant_ints(flat)}, {{"axis", int64_t{0}}});
  }
  if (rank != 1) g.fail("diag takes a vector or a matrix, got rank " + std::to_string(rank));
  auto n = known_size(g, 0, 0);
  if (!n || g.dynamic_shapes())
    g.fail("diag of a vector needs its length at export (the matrix's size depends on it)");
  int64_t m = *n + std::abs(k);
  // out[i][j] = x[min(i, j)] where j - i == k: a gather of x at clipped positions, masked.
  std::vector<int64_t> at_pos(static_cast<size_t>(m * m), 0);
  std::vector<int64_t> on(static_cast<size_t>(m * m), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j)
      if (j - i == k) {
        at_pos[static_cast<size_t>(i * m + j)] = std::min(i, j);
        on[static_cast<size_t>(i * m + j)] = 1;
      }
  Value* picked = g.op("Gather", {g.input(0), g.constant(at::tensor(at_pos).reshape({m, m}))},
                       {{"axis", int64_t{0}}});
  at::Tensor mask =
      torch::tensor(std::vector<int64_t>(on.begin(), on.end())).reshape({m, m}).to(at::kBool);
  Value* zero =
      t == at::kBool ? g.constant(at::scalar_tensor(false, at::kBool)) : g.constant_scalar(0, t);
  return g.op("Where", {g.constant(mask), picked, zero});
});

// tile(self, dims): repeat with dims padded in front with 1s to the tensor's rank.
TONNX_SYMBOLIC("aten::tile", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  std::vector<int64_t> dims = g.ints(1);
  while (static_cast<int64_t>(dims.size()) < rank) dims.insert(dims.begin(), 1);
  for (int64_t d : dims)
    if (d < 0) g.fail("tile's dims must be >= 0, got " + std::to_string(d));
  Value* x = g.input(0);
  int64_t extra = static_cast<int64_t>(dims.size()) - rank;
  if (extra > 0) {
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < extra; ++a) axes.push_back(a);
    x = unsqueeze(g, x, axes);
  }
  return g.op("Tile", {x, g.constant_ints(dims)});
});

}  // namespace
}  // namespace tonnx::sym
