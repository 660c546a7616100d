// Elementwise math with PyTorch's type promotion: arithmetic (add, sub, mul, div, pow,
// remainder, fmod, floor_divide), unary functions, comparisons, logical and bitwise ops,
// clamp, minimum/maximum, where and masked_fill.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// Add, Sub and Mul take uint8, int8 and int16 from opset 14. Below, they run in int32 and wrap
// to the type's range as LibTorch's arithmetic does (Mod with the divisor's sign: never
// negative), then cast back.
Value* arith(SymbolicContext& g, const char* op, Value* a, Value* b, at::ScalarType dt) {
  bool narrow = dt == at::kByte || dt == at::kChar || dt == at::kShort;
  if (!narrow || g.opset() >= 14) return g.op(op, {a, b});
  if (g.opset() < 10) g.unsupported_below(10, std::string(op) + " of 8- and 16-bit integers (Mod)");
  Value* r = g.op(op, {g.cast(a, at::kInt), g.cast(b, at::kInt)});
  int64_t span = dt == at::kShort ? 65536 : 256, low = dt == at::kByte ? 0 : span / 2;
  Value* shift = g.constant_scalar(static_cast<double>(low), at::kInt);
  r = g.op("Mod",
           {g.op("Add", {r, shift}), g.constant_scalar(static_cast<double>(span), at::kInt)});
  return g.cast(g.op("Sub", {r, shift}), dt);
}

// add/sub(self, other, alpha): other is scaled by alpha when alpha != 1.
Outputs add_sub(SymbolicContext& g, const char* op) {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  if (dt == at::kBool) return g.op("Or", {a, b});  // torch: bool + bool is logical or
  if (g.num_inputs() > 2 && !g.is_none(2)) {
    double alpha = g.f(2);
    if (alpha != 1.0) b = arith(g, "Mul", b, g.constant_scalar(alpha, dt), dt);
  }
  return arith(g, op, a, b, dt);
}
TONNX_SYMBOLIC("aten::add", 9, [](SymbolicContext& g) { return add_sub(g, "Add"); });
TONNX_SYMBOLIC("aten::sub", 9, [](SymbolicContext& g) { return add_sub(g, "Sub"); });
TONNX_SYMBOLIC("aten::rsub", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  if (g.num_inputs() > 2 && g.f(2) != 1.0)
    a = arith(g, "Mul", a, g.constant_scalar(g.f(2), dt), dt);
  return arith(g, "Sub", b, a, dt);
});
// mul: bool * bool is logical and (ONNX's Mul has no bool type).
TONNX_SYMBOLIC("aten::mul", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  if (dt == at::kBool) return binary(g, "And", dt);
  return arith(g, "Mul", input_as(g, 0, dt), input_as(g, 1, dt), dt);
});

// a // b, rounded toward -inf, as LibTorch computes it. Integers: q = (a - fmod(a, b)) / b is
// exact, then q - 1 where the remainder is non-zero and its sign differs from b's. Floats:
// the same q (not floor(a / b), which rounds 1.0 / 0.1 to 10 where LibTorch gives 9), then
// floor(q), plus 1 where q - floor(q) > 0.5; a zero q takes the sign of a / b, and b == 0
// gives a / b (IEEE).
Value* floor_div(SymbolicContext& g, Value* a, Value* b, at::ScalarType dt) {
  // int8, int16, uint8: in int32, cast back (wrapping as LibTorch's -128 // -1): ONNX's Div has
  // them only from opset 14, and ONNX Runtime's Where not at all.
  if (dt == at::kChar || dt == at::kShort || dt == at::kByte)
    return g.cast(floor_div(g, g.cast(a, at::kInt), g.cast(b, at::kInt), at::kInt), dt);
  // fmod: for integers a - trunc(a / b) * b (ONNX's Div truncates them), exact at any opset;
  // for floats ONNX's Mod (opset 10).
  bool is_int = at::isIntegralType(dt, /*includeBool=*/false);
  if (!is_int && g.opset() < 10)
    g.unsupported_below(10, "floor division of floating-point tensors (Mod)");
  Value* q = nullptr;  // (a - r) / b, which for integers is ONNX's truncating Div itself
  Value* r = nullptr;
  if (is_int) {
    q = g.op("Div", {a, b});
    r = g.op("Sub", {a, g.op("Mul", {q, b})});
  } else {
    r = g.op("Mod", {a, b}, {{"fmod", int64_t{1}}});
    q = g.op("Div", {g.op("Sub", {a, r}), b});
  }
  Value* zero = g.constant_scalar(0, dt);
  Value* one = g.constant_scalar(1, dt);
  Value* differ = g.op("Xor", {g.op("Less", {r, zero}), g.op("Less", {b, zero})});
  Value* fix = g.op("And", {differ, g.op("Not", {equal(g, r, zero, dt)})});
  q = g.op("Where", {fix, g.op("Sub", {q, one}), q});
  if (is_int) return q;
  Value* f = g.op("Floor", {q});
  Value* up = g.op("Greater", {g.op("Sub", {q, f}), g.constant_scalar(0.5, dt)});
  f = g.op("Where", {up, g.op("Add", {f, one}), f});
  Value* quotient = g.op("Div", {a, b});
  f = g.op("Where", {equal(g, q, zero, dt), g.op("Mul", {quotient, zero}), f});
  return g.op("Where", {equal(g, b, zero, dt), quotient, f});
}

// div(self, other[, rounding_mode]): true division in the result type (float for ints).
Outputs div(SymbolicContext& g) {
  at::ScalarType dt = g.output_scalar_type();
  std::string mode = g.num_inputs() > 2 && !g.is_none(2) ? g.s(2) : "";
  if (mode.empty()) return binary(g, "Div", dt);
  // Rounded division: floats round the quotient; integers use exact integer arithmetic
  // (trunc: ONNX Div on integers truncates; floor: see floor_divide below).
  bool is_int = at::isIntegralType(dt, /*includeBool=*/false);
  if (is_int && mode == "trunc") return binary(g, "Div", dt);
  if (mode == "floor") return floor_div(g, input_as(g, 0, dt), input_as(g, 1, dt), dt);
  if (mode != "trunc") g.fail("rounding_mode '" + mode + "' is not one of 'floor', 'trunc'");
  Value* q = binary(g, "Div", dt);
  // trunc(q) = sign(q) * floor(|q|)
  q = g.op("Mul", {g.op("Sign", {q}), g.op("Floor", {g.op("Abs", {q})})});
  return g.cast(q, dt);
}
TONNX_SYMBOLIC("aten::div", 9, div);

// ---- Unary ops: one table. The input is converted to the result's type first (sqrt of an
// int tensor is a float tensor in PyTorch; ONNX's Sqrt needs a float input).

Value* unary_input(SymbolicContext& g) {
  auto out = g.output_type();
  if (out && out->dtype != ir::DType::Undefined)
    return g.cast(g.input(0), ir::scalar_type_from_dtype(out->dtype));
  return g.input(0);
}

const bool kUnaryTable = [] {
  const std::pair<const char*, const char*> table[] = {
      {"aten::neg", "Neg"},     {"aten::sqrt", "Sqrt"},
      {"aten::tanh", "Tanh"},   {"aten::sigmoid", "Sigmoid"},
      {"aten::abs", "Abs"},     {"aten::exp", "Exp"},
      {"aten::log", "Log"},     {"aten::sin", "Sin"},
      {"aten::cos", "Cos"},     {"aten::tan", "Tan"},
      {"aten::asin", "Asin"},   {"aten::acos", "Acos"},
      {"aten::atan", "Atan"},   {"aten::sinh", "Sinh"},
      {"aten::cosh", "Cosh"},   {"aten::asinh", "Asinh"},
      {"aten::acosh", "Acosh"}, {"aten::atanh", "Atanh"},
      {"aten::erf", "Erf"},     {"aten::floor", "Floor"},
      {"aten::ceil", "Ceil"},   {"aten::reciprocal", "Reciprocal"},
      {"aten::sign", "Sign"},   {"aten::logical_not", "Not"},
      {"aten::isnan", "IsNaN"}};
  for (const auto& [aten, onnx] : table) {
    std::string op = onnx;
    detail::register_builtin(aten, 9, [op](SymbolicContext& g) -> Outputs {
      if (op == "Not") return g.op(op, {g.cast(g.input(0), at::kBool)});
      if (op == "IsNaN") return g.op(op, {g.input(0)});
      // ONNX's Neg has no uint8; PyTorch's -x of one wraps (256 - x), as int32 cast back does.
      if (op == "Neg" && g.output_scalar_type() == at::kByte)
        return g.cast(g.op(op, {g.cast(g.input(0), at::kInt)}), at::kByte);
      if (op == "Floor" || op == "Ceil") {
        // floor/ceil of an integer tensor is the tensor (ONNX's Floor takes floats only);
        // math.floor(x) -> int rounds in floats, then converts.
        auto integral = [](const std::optional<ir::TensorType>& t) {
          return t && t->dtype != ir::DType::Undefined &&
                 at::isIntegralType(ir::scalar_type_from_dtype(t->dtype), /*includeBool=*/true);
        };
        if (integral(g.type(0))) return unary_input(g);
        if (integral(g.output_type()))
          return g.cast(g.op(op, {g.input(0)}), g.output_scalar_type());
      }
      return g.op(op, {unary_input(g)});
    });
  }
  return true;
}();

// Round: half to even in both PyTorch and ONNX (Round is opset 11).
TONNX_SYMBOLIC("aten::round", 11, [](SymbolicContext& g) -> Outputs {
  if (g.num_inputs() > 1 && !g.is_none(1) && g.i(1) != 0)
    g.fail("round with decimals has no ONNX equivalent");
  // An integer tensor rounds to itself (ONNX's Round takes floats only).
  if (at::isIntegralType(g.scalar_type(0), /*includeBool=*/true))
    return g.op("Identity", {g.input(0)});
  return g.op("Round", {g.input(0)});
});
TONNX_SYMBOLIC("aten::rsqrt", 9, [](SymbolicContext& g) {
  return g.op("Reciprocal", {g.op("Sqrt", {unary_input(g)})});
});
TONNX_SYMBOLIC("aten::square", 9, [](SymbolicContext& g) {
  Value* x = unary_input(g);
  return g.op("Mul", {x, x});
});
TONNX_SYMBOLIC("aten::log1p", 9, [](SymbolicContext& g) {
  Value* x = unary_input(g);
  return g.op("Log", {g.op("Add", {x, g.constant_scalar(1, g.output_scalar_type())})});
});
TONNX_SYMBOLIC("aten::expm1", 9, [](SymbolicContext& g) {
  Value* x = unary_input(g);
  return g.op("Sub", {g.op("Exp", {x}), g.constant_scalar(1, g.output_scalar_type())});
});
TONNX_SYMBOLIC("aten::log2", 9, [](SymbolicContext& g) {
  return g.op("Div", {g.op("Log", {unary_input(g)}),
                      g.constant_scalar(std::log(2.0), g.output_scalar_type())});
});
TONNX_SYMBOLIC("aten::log10", 9, [](SymbolicContext& g) {
  return g.op("Div", {g.op("Log", {unary_input(g)}),
                      g.constant_scalar(std::log(10.0), g.output_scalar_type())});
});
// trunc(x) = sign(x) * floor(|x|): ONNX has no Trunc.
TONNX_SYMBOLIC("aten::trunc", 9, [](SymbolicContext& g) {
  Value* x = g.input(0);
  return g.op("Mul", {g.op("Sign", {x}), g.op("Floor", {g.op("Abs", {x})})});
});
TONNX_SYMBOLIC("aten::bitwise_not", 9, [](SymbolicContext& g) -> Outputs {
  if (g.scalar_type(0) != at::kBool)
    g.fail("bitwise_not of integers has no ONNX op before opset 18 (BitwiseNot)");
  return g.op("Not", {g.input(0)});
});

// ---- Binary ops with PyTorch's type promotion.

// The common type of inputs 0 and 1 as PyTorch computes it (c10's result_type): operands
// fall in three classes, tensors with dimensions, zero-dim tensors and scalars (a Python
// number, or a constant zero-dim tensor, as a trace records one); a later class decides the
// type only where its category (bool < integer < float) is higher, so `x > thr` with x
// float32 and thr a float64 zero-dim buffer compares in float32, and `u > lim` with u uint8
// and lim an int64 zero-dim tensor in uint8.
at::ScalarType common_type(SymbolicContext& g) {
  const at::ScalarType dflt = c10::typeMetaToScalarType(c10::get_default_dtype());
  at::ScalarType cls[3] = {at::ScalarType::Undefined, at::ScalarType::Undefined,
                           at::ScalarType::Undefined};
  for (size_t i = 0; i < 2; ++i) {
    auto t = g.type(i);
    at::ScalarType dt = t ? ir::scalar_type_from_dtype(t->dtype) : at::kFloat;
    bool zero_dim = t && t->shape && t->shape->empty();
    size_t c = g.arg_type(i) != "Tensor" || (zero_dim && g.is_constant(i)) ? 2 : zero_dim ? 1 : 0;
    if (c == 2 && at::isFloatingType(dt)) dt = dflt;  // a float scalar counts as the default
    cls[c] = cls[c] == at::ScalarType::Undefined ? dt : at::promote_types(cls[c], dt);
  }
  // c10's combine_categories: the higher class's type, unless the lower one's category is
  // higher (then both promote).
  auto combine = [](at::ScalarType higher, at::ScalarType lower) {
    if (higher == at::ScalarType::Undefined) return lower;
    if (lower == at::ScalarType::Undefined || at::isFloatingType(higher)) return higher;
    if (higher == at::kBool || at::isFloatingType(lower)) return at::promote_types(higher, lower);
    return higher;
  };
  return combine(cls[0], combine(cls[1], cls[2]));
}

Outputs compare(SymbolicContext& g, const char* op, bool negate = false) {
  at::ScalarType t = common_type(g);
  // Greater, Less and their OrEqual forms have no bool type: false < true as 0 < 1.
  if (t == at::kBool && std::string(op) != "Equal") t = at::kInt;
  Value* a = input_as(g, 0, t);
  Value* b = input_as(g, 1, t);
  Value* r = std::string(op) == "Equal" ? equal(g, a, b, t) : g.op(op, {a, b});
  return negate ? g.op("Not", {r}) : r;
}
TONNX_SYMBOLIC("aten::eq", 9, [](SymbolicContext& g) { return compare(g, "Equal"); });
TONNX_SYMBOLIC("aten::ne", 9, [](SymbolicContext& g) { return compare(g, "Equal", true); });
TONNX_SYMBOLIC("aten::gt", 9, [](SymbolicContext& g) { return compare(g, "Greater"); });
TONNX_SYMBOLIC("aten::lt", 9, [](SymbolicContext& g) { return compare(g, "Less"); });
// GreaterOrEqual / LessOrEqual arrive in opset 12. Before: a >= b is not (a < b), and
// for floats also neither side NaN.
Outputs compare_or_equal(SymbolicContext& g, const char* opposite) {
  at::ScalarType t = common_type(g);
  if (t == at::kBool) t = at::kInt;
  Value* a = input_as(g, 0, t);
  Value* b = input_as(g, 1, t);
  Value* bad = g.op(opposite, {a, b});
  if (at::isFloatingType(t))
    bad = g.op("Or", {bad, g.op("Or", {g.op("IsNaN", {a}), g.op("IsNaN", {b})})});
  return g.op("Not", {bad});
}
TONNX_SYMBOLIC("aten::ge", 9, [](SymbolicContext& g) { return compare_or_equal(g, "Less"); });
TONNX_SYMBOLIC("aten::le", 9, [](SymbolicContext& g) { return compare_or_equal(g, "Greater"); });
TONNX_SYMBOLIC("aten::ge", 12, [](SymbolicContext& g) { return compare(g, "GreaterOrEqual"); });
TONNX_SYMBOLIC("aten::le", 12, [](SymbolicContext& g) { return compare(g, "LessOrEqual"); });

Outputs logical(SymbolicContext& g, const char* op) {
  Value* r = g.op(op, {input_as(g, 0, at::kBool), input_as(g, 1, at::kBool)});
  return g.cast(r, g.output_scalar_type());
}
TONNX_SYMBOLIC("aten::logical_and", 9, [](SymbolicContext& g) { return logical(g, "And"); });
TONNX_SYMBOLIC("aten::logical_or", 9, [](SymbolicContext& g) { return logical(g, "Or"); });
TONNX_SYMBOLIC("aten::logical_xor", 9, [](SymbolicContext& g) { return logical(g, "Xor"); });
Outputs bitwise(SymbolicContext& g, const char* op) {
  if (g.output_scalar_type() != at::kBool)
    g.fail("bitwise ops on integers have no ONNX op before opset 18");
  return logical(g, op);
}
TONNX_SYMBOLIC("aten::bitwise_and", 9, [](SymbolicContext& g) { return bitwise(g, "And"); });
TONNX_SYMBOLIC("aten::bitwise_or", 9, [](SymbolicContext& g) { return bitwise(g, "Or"); });
TONNX_SYMBOLIC("aten::bitwise_xor", 9, [](SymbolicContext& g) { return bitwise(g, "Xor"); });
TONNX_SYMBOLIC("aten::__and__", 9, [](SymbolicContext& g) { return bitwise(g, "And"); });
TONNX_SYMBOLIC("aten::__or__", 9, [](SymbolicContext& g) { return bitwise(g, "Or"); });

TONNX_SYMBOLIC("aten::maximum", 9,
               [](SymbolicContext& g) { return binary(g, "Max", g.output_scalar_type()); });
TONNX_SYMBOLIC("aten::minimum", 9,
               [](SymbolicContext& g) { return binary(g, "Min", g.output_scalar_type()); });

// An integer power by a constant exponent, as LibTorch computes it: squarings and products
// in the integer type, which wrap where the result overflows (2**70 is 0, 3037000499**3 wraps),
// and exact beyond 2**53. Empty where the exponent is not a constant int >= 0.
std::optional<Value*> int_pow_by_constant(SymbolicContext& g, at::ScalarType dt) {
  int64_t k = 0;
  if (g.is_constant(1) && g.arg_type(1) == "int") {
    k = g.i(1);
  } else {
    std::optional<at::Tensor> e = g.constant_tensor(1);
    if (!e || e->numel() != 1 || e->dim() > 0 ||
        !at::isIntegralType(e->scalar_type(), /*includeBool=*/false))
      return std::nullopt;
    k = e->item<int64_t>();
  }
  if (k < 0) return std::nullopt;  // (LibTorch refuses negative integer powers)
  if (dt != at::kInt && dt != at::kLong && g.opset() < 14) return std::nullopt;  // (Mul's types)
  Value* base = input_as(g, 0, dt);
  Value* result = nullptr;
  for (; k > 0; k >>= 1) {
    if (k & 1) result = result ? g.op("Mul", {result, base}) : base;
    if (k > 1) base = g.op("Mul", {base, base});
  }
  // x ** 0 is 1 (0 ** 0 too), of x's shape.
  if (!result)
    result = g.op("Add", {g.op("Mul", {input_as(g, 0, dt), g.constant_scalar(0, dt)}),
                          g.constant_scalar(1, dt)});
  return result;
}

// pow(self, exponent): the base keeps its type; an integer result by a constant exponent is
// squarings and products (above); by a tensor exponent it is computed in double and rounded
// (ONNX Runtime's integer Pow overflows differently): exact up to 2**53, not where LibTorch
// wraps.
TONNX_SYMBOLIC("aten::pow", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  if (at::isIntegralType(dt, /*includeBool=*/false)) {
    if (auto r = int_pow_by_constant(g, dt)) return *r;
    Value* r = g.op("Pow", {input_as(g, 0, at::kDouble), input_as(g, 1, at::kDouble)});
    // Round arrives in opset 11; integer powers are exact in double anyway.
    return g.cast(g.opset() >= 11 ? g.op("Round", {r}) : r, dt);
  }
  return g.op("Pow", {input_as(g, 0, dt), input_as(g, 1, dt)});
});

// NonZero: [rank, N] int64 indices of the non-zero elements, in row-major order.
Value* nonzero_rows(SymbolicContext& g) {
  Value* x = g.input(0);
  if (g.opset() < 9) g.unsupported_below(9, "nonzero");
  return g.op("NonZero", {x});
}

// nonzero(self) -> [N, rank]
TONNX_SYMBOLIC("aten::nonzero", 9, [](SymbolicContext& g) -> Outputs {
  return g.op("Transpose", {nonzero_rows(g)}, {{"perm", ir::Ints{1, 0}}});
});

// The type Where selects in: int8 and int16 as int32 (ONNX Runtime has no Where for them).
at::ScalarType where_type(at::ScalarType dt) {
  return dt == at::kChar || dt == at::kShort ? at::kInt : dt;
}

// where(condition, self, other); where(condition) is nonzero as one index tensor per dim.
TONNX_SYMBOLIC("aten::where", 9, [](SymbolicContext& g) -> Outputs {
  if (g.num_inputs() == 1) {
    Value* rows = nonzero_rows(g);
    std::vector<Value*> per_dim;
    for (int64_t d = 0; d < g.rank(0); ++d)
      per_dim.push_back(g.op("Gather", {rows, g.constant(at::scalar_tensor(d, at::kLong))},
                             {{"axis", int64_t{0}}}));
    return per_dim;
  }
  at::ScalarType dt = g.output_scalar_type();
  at::ScalarType in = where_type(dt);
  Value* r = g.op("Where", {g.cast(g.input(0), at::kBool), input_as(g, 1, in), input_as(g, 2, in)});
  return in == dt ? r : g.cast(r, dt);
});
// masked_fill(self, mask, value)
TONNX_SYMBOLIC("aten::masked_fill", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.scalar_type(0);
  at::ScalarType in = where_type(dt);
  if (in == dt)
    return g.op("Where", {g.cast(g.input(1), at::kBool), input_as(g, 2, dt), g.input(0)});
  Value* r = g.op("Where", {g.cast(g.input(1), at::kBool), input_as(g, 2, in), input_as(g, 0, in)});
  return g.cast(r, dt);
});

// clamp(self, min, max): scalars or tensors; either may be None.
Outputs clamp(SymbolicContext& g, bool has_min, bool has_max) {
  at::ScalarType dt = g.output_scalar_type();
  Value* x = g.cast(g.input(0), dt);
  size_t lo = 1, hi = has_min ? 2 : 1;
  bool use_min = has_min && !g.is_none(lo), use_max = has_max && !g.is_none(hi);
  // Max/Min broadcast tensor bounds; they take integers from opset 12, Where before.
  bool where_form = g.opset() < 12 && !at::isFloatingType(dt);
  if (use_min) {
    Value* b = input_as(g, lo, dt);
    x = where_form ? g.op("Where", {g.op("Less", {x, b}), b, x}) : g.op("Max", {x, b});
  }
  if (use_max) {
    Value* b = input_as(g, hi, dt);
    x = where_form ? g.op("Where", {g.op("Greater", {x, b}), b, x}) : g.op("Min", {x, b});
  }
  if (!use_min && !use_max) x = g.op("Identity", {x});
  return x;
}
TONNX_SYMBOLIC("aten::clamp", 9, [](SymbolicContext& g) { return clamp(g, true, true); });
TONNX_SYMBOLIC("aten::clamp_min", 9, [](SymbolicContext& g) { return clamp(g, true, false); });
TONNX_SYMBOLIC("aten::clamp_max", 9, [](SymbolicContext& g) { return clamp(g, false, true); });

// ---- Integer division and remainders exactly as PyTorch computes them.

// fmod(self, other): sign of the dividend (C fmod). ONNX Mod with fmod=1 (opset 10).
TONNX_SYMBOLIC("aten::fmod", 10, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  return g.op("Mod", {input_as(g, 0, dt), input_as(g, 1, dt)}, {{"fmod", int64_t{1}}});
});

// remainder(self, other): sign of the divisor (Python %). For integers that is ONNX Mod
// with fmod=0; floats take r = fmod(a, b), then r + b where r and b differ in sign.
TONNX_SYMBOLIC("aten::remainder", 10, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  if (at::isIntegralType(dt, /*includeBool=*/false))
    return g.op("Mod", {a, b}, {{"fmod", int64_t{0}}});
  Value* r = g.op("Mod", {a, b}, {{"fmod", int64_t{1}}});
  Value* zero = g.constant_scalar(0, dt);
  Value* differ = g.op("Xor", {g.op("Less", {r, zero}), g.op("Less", {b, zero})});
  Value* fix = g.op("And", {differ, g.op("Not", {equal(g, r, zero, dt)})});
  return g.op("Where", {fix, g.op("Add", {r, b}), r});
});

// floor_divide: rounds toward -inf (PyTorch >= 1.13), as div(rounding_mode='floor').
// aten::floordiv is Python's // on scalars in scripted code (head_dim = embed_dim // heads).
Outputs floor_divide(SymbolicContext& g) {
  at::ScalarType dt = g.output_scalar_type();
  return floor_div(g, input_as(g, 0, dt), input_as(g, 1, dt), dt);
}
TONNX_SYMBOLIC("aten::floor_divide", 10, floor_divide);
TONNX_SYMBOLIC("aten::floordiv", 10, floor_divide);

}  // namespace
}  // namespace tonnx::sym
