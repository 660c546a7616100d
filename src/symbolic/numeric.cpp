// Numeric ops torch.onnx 1.13 exports that the first wave lacked: isinf, isfinite, nan_to_num,
// addcmul, lerp, outer, mv, dot; views and no-ops on real tensors (view_as, reshape_as,
// movedim, alias, resolve_conj, resolve_neg).
#include <cmath>
#include <limits>
#include <numeric>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// The input converted to the output's floating type, for IsInf and IsNaN (which take floats).
Value* as_float(SymbolicContext& g, size_t i) {
  at::ScalarType t = g.scalar_type(i);
  return at::isFloatingType(t) ? g.input(i) : g.cast(g.input(i), at::kFloat);
}

// isinf / isfinite (IsInf: opset 10). Integers are never infinite.
TONNX_SYMBOLIC("aten::isinf", 10,
               [](SymbolicContext& g) -> Outputs { return g.op("IsInf", {as_float(g, 0)}); });
TONNX_SYMBOLIC("aten::isfinite", 10, [](SymbolicContext& g) -> Outputs {
  Value* x = as_float(g, 0);
  return g.op("Not", {g.op("Or", {g.op("IsInf", {x}), g.op("IsNaN", {x})})});
});

// nan_to_num(self, nan=None, posinf=None, neginf=None): NaN to `nan` (0), +inf to `posinf`
// (the type's largest), -inf to `neginf` (its lowest). Integers pass through.
TONNX_SYMBOLIC("aten::nan_to_num", 10, [](SymbolicContext& g) -> Outputs {
  at::ScalarType t = g.scalar_type(0);
  Value* x = g.input(0);
  if (!at::isFloatingType(t)) return g.op("Identity", {x});
  double hi = 0, lo = 0;
  switch (t) {
    case at::kDouble:
      hi = std::numeric_limits<double>::max();
      break;
    case at::kFloat:
      hi = std::numeric_limits<float>::max();
      break;
    case at::kHalf:
      hi = 65504.0;
      break;
    case at::kBFloat16:
      hi = 3.3895313892515355e38;
      break;
    default:
      g.fail("nan_to_num of " + std::string(c10::toString(t)) + " tensors is not supported");
  }
  lo = -hi;
  double nan = g.is_none(1) ? 0.0 : g.f(1);
  if (!g.is_none(2)) hi = g.f(2);
  if (!g.is_none(3)) lo = g.f(3);
  // IsInf takes float and double only: half and bfloat16 are tested as float.
  Value* probe = t == at::kFloat || t == at::kDouble ? x : g.cast(x, at::kFloat);
  Value* y = g.op("Where", {g.op("IsNaN", {probe}), g.constant_scalar(nan, t), x});
  y = g.op("Where", {g.op("IsInf", {probe}, {{"detect_negative", int64_t{0}}}),
                     g.constant_scalar(hi, t), y});
  return g.op("Where", {g.op("IsInf", {probe}, {{"detect_positive", int64_t{0}}}),
                        g.constant_scalar(lo, t), y});
});

// addcmul(self, t1, t2, value=1) = self + value * t1 * t2, in the result type.
TONNX_SYMBOLIC("aten::addcmul", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* prod = g.op("Mul", {input_as(g, 1, dt), input_as(g, 2, dt)});
  if (g.num_inputs() > 3 && !g.is_none(3) && g.f(3) != 1.0)
    prod = g.op("Mul", {prod, g.constant_scalar(g.f(3), dt)});
  return g.op("Add", {input_as(g, 0, dt), prod});
});

// lerp(self, end, weight), as LibTorch computes it: self + weight * (end - self) where
// |weight| < 0.5, else end - (end - self) * (1 - weight), so that weight 1 gives end exactly
// and an infinite self gives inf, not NaN (a review found the one-formula form wrong on both).
// A number weight picks its formula at export; a tensor one per element.
TONNX_SYMBOLIC("aten::lerp", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  Value* w = input_as(g, 2, dt);
  Value* diff = g.op("Sub", {b, a});
  auto low = [&] { return g.op("Add", {a, g.op("Mul", {w, diff})}); };
  auto high = [&] {
    Value* rest = g.op("Sub", {g.constant_scalar(1, dt), w});
    return g.op("Sub", {b, g.op("Mul", {diff, rest})});
  };
  if (g.is_constant(2) && g.arg_type(2) == "float") return std::abs(g.f(2)) < 0.5 ? low() : high();
  Value* small = g.op("Less", {g.op("Abs", {w}), g.constant_scalar(0.5, dt)});
  return g.op("Where", {small, low(), high()});
});

// outer(a, b): a[:, None] * b. mv and dot: MatMul has numpy's 1-D semantics.
TONNX_SYMBOLIC("aten::outer", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  return g.op("Mul", {unsqueeze(g, input_as(g, 0, dt), {1}), input_as(g, 1, dt)});
});
TONNX_SYMBOLIC("aten::mv", 9, [](SymbolicContext& g, Value* m, Value* v) -> Outputs {
  return g.op("MatMul", {m, v});
});
TONNX_SYMBOLIC("aten::dot", 9, [](SymbolicContext& g, Value* a, Value* b) -> Outputs {
  return g.op("MatMul", {a, b});
});

// view_as / reshape_as: x in other's shape.
Outputs reshape_as(SymbolicContext& g) {
  return g.op("Reshape", {g.input(0), g.op("Shape", {g.input(1)})});
}
TONNX_SYMBOLIC("aten::view_as", 9, reshape_as);
TONNX_SYMBOLIC("aten::reshape_as", 9, reshape_as);

// No-ops on real tensors: aliasing, resolving lazy conjugation and negation.
Outputs real_identity(SymbolicContext& g) {
  if (at::isComplexType(g.scalar_type(0))) g.fail("complex tensors have no ONNX type");
  return g.op("Identity", {g.input(0)});
}
TONNX_SYMBOLIC("aten::alias", 9, real_identity);
TONNX_SYMBOLIC("aten::resolve_conj", 9, real_identity);
TONNX_SYMBOLIC("aten::resolve_neg", 9, real_identity);
TONNX_SYMBOLIC("aten::conj_physical", 9, real_identity);
// lift / lift_fresh mark a tensor made by torch.tensor(...) in scripted code.
TONNX_SYMBOLIC("aten::lift", 9, real_identity);
TONNX_SYMBOLIC("aten::lift_fresh", 9, real_identity);

// is_floating_point / is_pinned: known at export (CPU tensors are never pinned here).
TONNX_SYMBOLIC("aten::is_floating_point", 9, [](SymbolicContext& g) -> Outputs {
  return g.constant(at::scalar_tensor(at::isFloatingType(g.scalar_type(0)), at::kBool));
});
TONNX_SYMBOLIC("aten::is_pinned", 9, [](SymbolicContext& g) -> Outputs {
  return g.constant(at::scalar_tensor(false, at::kBool));
});

// item(): the one element as a 0-d tensor (a Python number in TorchScript).
TONNX_SYMBOLIC("aten::item", 9, [](SymbolicContext& g, Value* x) -> Outputs {
  if (auto t = g.type(0); t && t->shape) {
    for (const auto& d : *t->shape)
      if (d.value && *d.value != 1)
        g.fail("item() of a tensor with " + std::to_string(*d.value) +
               " elements along a dim; it needs exactly one element");
  }
  return g.op("Reshape", {x, g.constant(at::zeros({0}, at::kLong))});
});

// as_tensor(data, dtype, device): a cast when dtype is given.
TONNX_SYMBOLIC("aten::as_tensor", 9, [](SymbolicContext& g) -> Outputs {
  if (g.num_inputs() < 2 || g.is_none(1)) return g.op("Identity", {g.input(0)});
  return g.cast(g.input(0), static_cast<at::ScalarType>(g.i(1)));
});

// movedim(self, source, destination): int or int[] dims; a Transpose.
TONNX_SYMBOLIC("aten::movedim", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  std::vector<int64_t> src = g.ints(1), dst = g.ints(2);
  if (src.size() != dst.size())
    g.fail("source has " + std::to_string(src.size()) + " dims but destination has " +
           std::to_string(dst.size()));
  std::vector<int64_t> perm(rank, -1);
  std::vector<bool> used(rank, false);
  for (size_t k = 0; k < src.size(); ++k) {
    int64_t s = norm_dim(g, src[k], rank), d = norm_dim(g, dst[k], rank);
    if (perm[d] != -1 || used[s]) g.fail("source and destination dims must be unique");
    perm[d] = s;
    used[s] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p != -1) continue;
    while (used[next]) ++next;
    p = next;
    used[next] = true;
  }
  return g.op("Transpose", {g.input(0)}, {{"perm", perm}});
});

}  // namespace
}  // namespace tonnx::sym
