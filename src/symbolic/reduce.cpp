// Reductions: sum, mean, prod, amax/amin, max/min (three overloads), argmax/argmin, norm,
// var/std with correction, logsumexp, cumsum.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// The reduced dims as PyTorch means them: an empty or absent list is "all dims".
std::optional<std::vector<int64_t>> dims_arg(SymbolicContext& g, size_t i, int64_t rank) {
  if (i >= g.num_inputs() || g.is_none(i)) return std::nullopt;
  std::vector<int64_t> dims = g.ints(i);
  if (dims.empty()) return std::nullopt;
  for (auto& d : dims) d = norm_dim(g, d, std::max<int64_t>(rank, 1));
  return dims;
}

// sum/mean/prod: (self, dtype) or (self, dim, keepdim, dtype).
Outputs reduce_op(SymbolicContext& g, const char* op) {
  at::ScalarType dt = g.output_scalar_type();
  Value* x = g.cast(g.input(0), dt);
  int64_t rank = g.rank(0);
  if (g.num_inputs() <= 2) return reduce(g, op, x, std::nullopt, false);
  return reduce(g, op, x, dims_arg(g, 1, rank), g.b(2));
}
TONNX_SYMBOLIC("aten::sum", 9, [](SymbolicContext& g) { return reduce_op(g, "ReduceSum"); });
TONNX_SYMBOLIC("aten::mean", 9, [](SymbolicContext& g) { return reduce_op(g, "ReduceMean"); });
// prod(self, dtype) or prod(self, dim: int, keepdim, dtype)
TONNX_SYMBOLIC("aten::prod", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* x = g.cast(g.input(0), dt);
  if (g.num_inputs() <= 2) return reduce(g, "ReduceProd", x, std::nullopt, false);
  return reduce(g, "ReduceProd", x, std::vector<int64_t>{arg_dim(g, 0, g.i(1))}, g.b(2));
});
TONNX_SYMBOLIC("aten::amax", 9, [](SymbolicContext& g) {
  return reduce(g, "ReduceMax", g.input(0), dims_arg(g, 1, g.rank(0)), g.b(2));
});
TONNX_SYMBOLIC("aten::amin", 9, [](SymbolicContext& g) {
  return reduce(g, "ReduceMin", g.input(0), dims_arg(g, 1, g.rank(0)), g.b(2));
});
TONNX_SYMBOLIC("aten::logsumexp", 9, [](SymbolicContext& g) {
  return reduce(g, "ReduceLogSumExp", g.input(0), dims_arg(g, 1, g.rank(0)), g.b(2));
});

// max/min: (self) -> all; (self, other) -> elementwise; (self, dim, keepdim) -> values, indices
Outputs max_min(SymbolicContext& g, bool is_max) {
  if (g.num_inputs() == 1)
    return reduce(g, is_max ? "ReduceMax" : "ReduceMin", g.input(0), std::nullopt, false);
  if (g.num_inputs() == 2) {
    at::ScalarType dt = g.output_scalar_type();
    return g.op(is_max ? "Max" : "Min", {input_as(g, 0, dt), input_as(g, 1, dt)});
  }
  int64_t rank = g.rank(0);
  int64_t dim = norm_dim(g, g.i(1), rank);
  bool keep = g.b(2);
  Value* x = g.input(0);
  Value* values = reduce(g, is_max ? "ReduceMax" : "ReduceMin", x, std::vector<int64_t>{dim}, keep);
  if (g.num_outputs() < 2) return values;
  if (narrow_int(x)) x = g.cast(x, at::kInt);  // no bool ArgMax; none of int16 in ONNX Runtime
  Value* idx =
      g.op(is_max ? "ArgMax" : "ArgMin", {x}, {{"axis", dim}, {"keepdims", int64_t{keep}}});
  return {values, idx};
}
TONNX_SYMBOLIC("aten::max", 9, [](SymbolicContext& g) { return max_min(g, true); });
TONNX_SYMBOLIC("aten::min", 9, [](SymbolicContext& g) { return max_min(g, false); });

// argmax(self, dim?, keepdim): no dim flattens first. PyTorch returns the first maximal
// index, which is ONNX's default (select_last_index=0).
Outputs arg_op(SymbolicContext& g, const char* op) {
  Value* x = g.input(0);
  if (narrow_int(x)) x = g.cast(x, at::kInt);  // ONNX Runtime has no int16 ArgMax
  bool keep = g.b(2);
  if (g.is_none(1)) {
    x = g.op("Reshape", {x, g.constant_ints({-1})});
    Value* r = g.op(op, {x}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}});
    if (keep) {
      std::vector<int64_t> ones(static_cast<size_t>(g.rank(0)), 1);
      return g.op("Reshape", {r, g.constant_ints(ones)});
    }
    return r;
  }
  int64_t dim = arg_dim(g, 0, g.i(1));
  return g.op(op, {x}, {{"axis", dim}, {"keepdims", int64_t{keep}}});
}
TONNX_SYMBOLIC("aten::argmax", 9, [](SymbolicContext& g) { return arg_op(g, "ArgMax"); });
TONNX_SYMBOLIC("aten::argmin", 9, [](SymbolicContext& g) { return arg_op(g, "ArgMin"); });

// norm / linalg_vector_norm with p = 1, 2, inf, -inf, 0 or any other p.
Value* p_norm(SymbolicContext& g, Value* x, double p,
              const std::optional<std::vector<int64_t>>& dims, bool keep) {
  at::ScalarType dt = g.output_scalar_type();
  x = g.cast(x, dt);
  if (p == 1) return reduce(g, "ReduceL1", x, dims, keep);
  if (p == 2) return reduce(g, "ReduceL2", x, dims, keep);
  if (std::isinf(p))
    return reduce(g, p > 0 ? "ReduceMax" : "ReduceMin", g.op("Abs", {x}), dims, keep);
  if (p == 0) {
    Value* nz = g.cast(g.op("Not", {equal(g, x, g.constant_scalar(0, dt), dt)}), dt);
    return reduce(g, "ReduceSum", nz, dims, keep);
  }
  Value* powed = g.op("Pow", {g.op("Abs", {x}), g.constant_scalar(p, dt)});
  return g.op("Pow", {reduce(g, "ReduceSum", powed, dims, keep), g.constant_scalar(1.0 / p, dt)});
}
// norm(self, p, dim, keepdim[, dtype]) or norm(self, p)
TONNX_SYMBOLIC("aten::norm", 9, [](SymbolicContext& g) -> Outputs {
  double p = g.is_none(1) ? 2.0 : g.f(1);
  if (g.num_inputs() == 2) return p_norm(g, g.input(0), p, std::nullopt, false);
  return p_norm(g, g.input(0), p, dims_arg(g, 2, g.rank(0)), g.b(3));
});
// linalg_vector_norm(self, ord, dim, keepdim, dtype)
TONNX_SYMBOLIC("aten::linalg_vector_norm", 9, [](SymbolicContext& g) -> Outputs {
  return p_norm(g, g.input(0), g.f(1), dims_arg(g, 2, g.rank(0)), g.b(3));
});
TONNX_SYMBOLIC("aten::frobenius_norm", 9, [](SymbolicContext& g) -> Outputs {
  return p_norm(g, g.input(0), 2.0, dims_arg(g, 1, g.rank(0)), g.num_inputs() > 2 && g.b(2));
});

// Matrix norms over dims (d0, d1): 'fro', and the induced 1 / inf norms (max or min over one dim
// of the absolute sums over the other). 'nuc' and 2 need singular values: ONNX has no SVD.
Value* matrix_norm(SymbolicContext& g, Value* x, const std::string& ord, double p,
                   std::vector<int64_t> dims, bool keep) {
  int64_t rank = g.rank(0);
  if (dims.size() != 2) g.fail("a matrix norm needs 2 dims, got " + std::to_string(dims.size()));
  for (auto& d : dims) d = norm_dim(g, d, rank);
  if (dims[0] == dims[1]) g.fail("a matrix norm needs 2 different dims");
  if (ord == "fro") return p_norm(g, x, 2.0, dims, keep);
  if (!ord.empty() || !(std::abs(p) == 1 || std::isinf(p)))
    g.fail("the matrix norm of order " + (ord.empty() ? std::to_string(p) : "'" + ord + "'") +
           " needs singular values, which ONNX cannot compute; 'fro', 1, -1, inf and -inf can");
  at::ScalarType dt = g.output_scalar_type();
  // 1: max over columns of the column sums (sum over d0); inf: the same with rows.
  int64_t sum_dim = std::isinf(p) ? dims[1] : dims[0];
  int64_t pick_dim = std::isinf(p) ? dims[0] : dims[1];
  Value* sums = reduce(g, "ReduceSum", g.op("Abs", {g.cast(x, dt)}), std::vector{sum_dim}, true);
  Value* r = reduce(g, p > 0 ? "ReduceMax" : "ReduceMin", sums, std::vector{pick_dim}, true);
  if (keep) return r;
  return squeeze(g, r, {std::min(dims[0], dims[1]), std::max(dims[0], dims[1])});
}
// linalg_matrix_norm(self, ord: number or str, dim=[-2, -1], keepdim, dtype)
TONNX_SYMBOLIC("aten::linalg_matrix_norm", 9, [](SymbolicContext& g) -> Outputs {
  bool str = g.arg_type(1) == "str";
  return matrix_norm(g, g.input(0), str ? g.s(1) : "", str ? 0.0 : g.f(1), g.ints(2), g.b(3));
});
// linalg_norm(self, ord?, dim?, keepdim, dtype): with no ord, the 2-norm of the flattened
// dims; a numeric ord is a vector norm over one dim (or a 1-D input) and a matrix norm over two
// (or a 2-D input); a string ord is a matrix norm.
TONNX_SYMBOLIC("aten::linalg_norm", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  bool keep = g.b(3);
  std::optional<std::vector<int64_t>> dims;
  if (!g.is_none(2)) dims = g.ints(2);
  if (g.is_none(1)) return p_norm(g, g.input(0), 2.0, dims_arg(g, 2, rank), keep);
  bool str = g.arg_type(1) == "str";
  size_t n = dims ? dims->size() : static_cast<size_t>(rank);
  if (!str && n == 1) return p_norm(g, g.input(0), g.f(1), dims_arg(g, 2, rank), keep);
  if (n != 2)
    g.fail("linalg_norm with ord needs 1 or 2 dims (or a 1-D or 2-D input); got " +
           std::to_string(n));
  return matrix_norm(g, g.input(0), str ? g.s(1) : "", str ? 0.0 : g.f(1),
                     dims ? *dims : std::vector<int64_t>{-2, -1}, keep);
});

// cdist(x1 [..., P, M], x2 [..., R, M], p, compute_mode): the p-norm of every row pair's
// difference, [..., P, R], by broadcasting [..., P, 1, M] against [..., 1, R, M].
TONNX_SYMBOLIC("aten::cdist", 9, [](SymbolicContext& g) -> Outputs {
  double p = g.f(2);
  if (p < 0) g.fail("cdist's p must be >= 0, got " + std::to_string(p));
  if (g.rank(0) < 2 || g.rank(1) < 2) g.fail("cdist needs inputs of rank >= 2");
  at::ScalarType dt = g.output_scalar_type();
  int64_t r0 = g.rank(0), r1 = g.rank(1);
  Value* diff = g.op("Sub", {unsqueeze(g, input_as(g, 0, dt), {r0 - 1}),
                             unsqueeze(g, input_as(g, 1, dt), {r1 - 2})});
  return p_norm(g, diff, p, std::vector<int64_t>{std::max(r0, r1)}, false);
});

// var/std: var(self, unbiased), var(self, dim, unbiased, keepdim), or
// var.correction(self, dim, correction, keepdim). Computed as sum((x - mean)^2) / (n - c).
Outputs var_std(SymbolicContext& g, bool is_std, bool with_mean = false) {
  Value* x = g.input(0);
  at::ScalarType dt = g.output_scalar_type();
  int64_t rank = g.rank(0);
  std::optional<std::vector<int64_t>> dims;
  double correction = 1;
  bool keep = false;
  if (g.num_inputs() == 2) {
    correction = g.b(1) ? 1 : 0;
  } else {
    dims = dims_arg(g, 1, rank);
    if (g.arg_type(2) == "bool")
      correction = g.b(2) ? 1 : 0;
    else if (!g.is_none(2))
      correction = g.f(2);
    keep = g.b(3);
  }
  Value* mean = reduce(g, "ReduceMean", x, dims, true);
  Value* c = g.op("Sub", {x, mean});
  Value* ss = reduce(g, "ReduceSum", g.op("Mul", {c, c}), dims, keep);
  // The divisor is max(0, n - correction), as in ATen (an empty or too short dim gives NaN or
  // inf); n is the count of reduced elements, read at run time when sizes vary.
  Value* divisor;
  auto t = g.type(0);
  bool known = t && t->shape &&
               std::all_of(t->shape->begin(), t->shape->end(), [](auto& d) { return d.value; });
  if (known && !g.dynamic_shapes()) {
    std::vector<int64_t> sizes = g.sizes(0);
    int64_t n = 1;
    if (dims) {
      for (int64_t d : *dims) n *= sizes[d];
    } else {
      for (int64_t s : sizes) n *= s;
    }
    divisor = g.constant_scalar(std::max(0.0, static_cast<double>(n) - correction), dt);
  } else {
    Value* n = dims ? reduce(g, "ReduceProd",
                             g.op("Gather", {g.op("Shape", {x}), g.constant_ints(*dims)},
                                  {{"axis", int64_t{0}}}),
                             std::nullopt, false)
                    : g.op("Size", {x});
    divisor = g.op("Max", {g.op("Sub", {g.cast(n, dt), g.constant_scalar(correction, dt)}),
                           g.constant_scalar(0, dt)});
  }
  Value* v = g.op("Div", {ss, divisor});
  if (is_std) v = g.op("Sqrt", {v});
  if (!with_mean) return v;
  return {v, keep ? mean : reduce(g, "ReduceMean", x, dims, false)};
}
TONNX_SYMBOLIC("aten::var", 9, [](SymbolicContext& g) { return var_std(g, false); });
TONNX_SYMBOLIC("aten::std", 9, [](SymbolicContext& g) { return var_std(g, true); });
// var_mean / std_mean: (var or std, mean) with var's arguments.
TONNX_SYMBOLIC("aten::var_mean", 9, [](SymbolicContext& g) { return var_std(g, false, true); });
TONNX_SYMBOLIC("aten::std_mean", 9, [](SymbolicContext& g) { return var_std(g, true, true); });

// cumsum(self, dim, dtype): CumSum is opset 11.
TONNX_SYMBOLIC("aten::cumsum", 11, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  int64_t dim = arg_dim(g, 0, g.i(1));
  Value* x = g.cast(g.input(0), dt);
  std::optional<at::ScalarType> narrow = narrow_int(x);  // in int32, then cast back
  Value* sum = g.op(
      "CumSum", {narrow ? g.cast(x, at::kInt) : x, g.constant(at::scalar_tensor(dim, at::kLong))});
  return narrow ? g.cast(sum, *narrow) : sum;
});

}  // namespace
}  // namespace tonnx::sym
