// Elementwise arithmetic: add, sub, mul, div with PyTorch's type promotion.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// add/sub(self, other, alpha): other is scaled by alpha when alpha != 1.
Outputs add_sub(SymbolicContext& g, const char* op) {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  if (g.num_inputs() > 2 && !g.is_none(2)) {
    double alpha = g.f(2);
    if (alpha != 1.0) b = g.op("Mul", {b, g.constant_scalar(alpha, dt)});
  }
  return g.op(op, {a, b});
}
TONNX_SYMBOLIC("aten::add", 9, [](SymbolicContext& g) { return add_sub(g, "Add"); });
TONNX_SYMBOLIC("aten::sub", 9, [](SymbolicContext& g) { return add_sub(g, "Sub"); });
TONNX_SYMBOLIC("aten::rsub", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  if (g.num_inputs() > 2 && g.f(2) != 1.0) a = g.op("Mul", {a, g.constant_scalar(g.f(2), dt)});
  return g.op("Sub", {b, a});
});
TONNX_SYMBOLIC("aten::mul", 9,
               [](SymbolicContext& g) { return binary(g, "Mul", g.output_scalar_type()); });

// div(self, other[, rounding_mode]): true division in the result type (float for ints).
TONNX_SYMBOLIC("aten::div", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  std::string mode = g.num_inputs() > 2 && !g.is_none(2) ? g.s(2) : "";
  if (mode.empty()) return binary(g, "Div", dt);
  // Rounded division: compute in floating point, round, convert back.
  bool is_int = at::isIntegralType(dt, /*includeBool=*/false);
  at::ScalarType work = is_int ? at::kDouble : dt;
  Value* q = binary(g, "Div", work);
  if (mode == "floor") return g.cast(g.op("Floor", {q}), dt);
  if (mode != "trunc") g.fail("rounding_mode '" + mode + "' is not one of 'floor', 'trunc'");
  // trunc(q) = sign(q) * floor(|q|)
  q = g.op("Mul", {g.op("Sign", {q}), g.op("Floor", {g.op("Abs", {q})})});
  return g.cast(q, dt);
});

}  // namespace
}  // namespace tonnx::sym
