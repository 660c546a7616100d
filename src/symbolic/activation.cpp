// Activations: relu and its relatives (leaky_relu, prelu, elu, selu, celu, gelu, silu, mish,
// hardtanh, relu6, hardsigmoid, hardswish, hardshrink, softshrink, softplus, log_sigmoid,
// threshold, glu), softmax and log_softmax, and the dropout family (identity in eval).
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// Relu takes integers only from opset 14, and ONNX Runtime not int64 even there: an integer
// input is max(x, 0) by Where at every opset.
TONNX_SYMBOLIC("aten::relu", 9, [](SymbolicContext& g, Value* x) {
  auto t = g.type(0);
  at::ScalarType st =
      t && t->dtype != ir::DType::Undefined ? ir::scalar_type_from_dtype(t->dtype) : at::kFloat;
  if (at::isFloatingType(st)) return g.op("Relu", {x});
  Value* zero = g.constant_scalar(0, st);
  return g.op("Where", {g.op("Less", {x, zero}), zero, x});
});

// softmax / log_softmax (self, dim, dtype)
Outputs softmax_like(SymbolicContext& g, const char* op) {
  Value* x = g.input(0);
  if (!g.is_none(2)) x = g.cast(x, g.output_scalar_type());
  int64_t rank = g.rank(0);
  int64_t dim = rank == 0 ? 0 : norm_dim(g, g.i(1), rank);
  if (rank == 0) return g.op("Identity", {x});
  if (g.opset() >= 13 || dim == rank - 1) return g.op(op, {x}, {{"axis", dim}});
  // Before opset 13 Softmax flattens everything after `axis` into one row: move dim last.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[dim], perm[rank - 1]);
  Value* t = g.op("Transpose", {x}, {{"perm", perm}});
  Value* y = g.op(op, {t}, {{"axis", rank - 1}});
  return g.op("Transpose", {y}, {{"perm", perm}});
}
TONNX_SYMBOLIC("aten::softmax", 9, [](SymbolicContext& g) { return softmax_like(g, "Softmax"); });
TONNX_SYMBOLIC("aten::log_softmax", 9,
               [](SymbolicContext& g) { return softmax_like(g, "LogSoftmax"); });
TONNX_SYMBOLIC("aten::_softmax", 9, [](SymbolicContext& g) { return softmax_like(g, "Softmax"); });
TONNX_SYMBOLIC("aten::_log_softmax", 9,
               [](SymbolicContext& g) { return softmax_like(g, "LogSoftmax"); });

// dropout(input, p, train): identity in eval; Dropout with training_mode from opset 12.
Outputs dropout(SymbolicContext& g) {
  Value* x = g.input(0);
  if (!g.b(2)) return x;
  if (g.opset() < 12) g.unsupported_below(12, "dropout in training mode");
  Value* ratio = g.constant_scalar(g.f(1), at::kFloat);
  Value* training = g.constant(at::scalar_tensor(true, at::kBool));
  return g.op_n("Dropout", {x, ratio, training}, {}, 2)[0];
}
TONNX_SYMBOLIC("aten::dropout", 9, dropout);
TONNX_SYMBOLIC("aten::feature_dropout", 9, dropout);
TONNX_SYMBOLIC("aten::alpha_dropout", 9, dropout);
TONNX_SYMBOLIC("aten::feature_alpha_dropout", 9, dropout);

TONNX_SYMBOLIC("aten::leaky_relu", 9, [](SymbolicContext& g, Value* x, double slope) {
  return g.op("LeakyRelu", {x}, {{"alpha", slope}});
});

// elu(self, alpha, scale, input_scale): Elu when both scales are 1.
TONNX_SYMBOLIC(
    "aten::elu", 9,
    [](SymbolicContext& g, Value* x, double alpha, double scale, double input_scale) -> Outputs {
      if (scale == 1.0 && input_scale == 1.0) return g.op("Elu", {x}, {{"alpha", alpha}});
      // scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1))
      at::ScalarType dt = g.scalar_type(0);
      Value* neg = g.op(
          "Mul", {g.constant_scalar(alpha, dt),
                  g.op("Sub", {g.op("Exp", {g.op("Mul", {x, g.constant_scalar(input_scale, dt)})}),
                               g.constant_scalar(1, dt)})});
      Value* y = g.op("Where", {g.op("Greater", {x, g.constant_scalar(0, dt)}), x, neg});
      return g.op("Mul", {y, g.constant_scalar(scale, dt)});
    });
TONNX_SYMBOLIC("aten::selu", 9, [](SymbolicContext& g, Value* x) { return g.op("Selu", {x}); });
// celu(x, alpha) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); Celu is opset 12.
TONNX_SYMBOLIC("aten::celu", 9, [](SymbolicContext& g, Value* x, double alpha) -> Outputs {
  at::ScalarType dt = g.scalar_type(0);
  if (g.opset() >= 12 && dt == at::kFloat) return g.op("Celu", {x}, {{"alpha", alpha}});
  Value* a = g.constant_scalar(alpha, dt);
  Value* neg =
      g.op("Mul", {a, g.op("Sub", {g.op("Exp", {g.op("Div", {x, a})}), g.constant_scalar(1, dt)})});
  Value* zero = g.constant_scalar(0, dt);
  return g.op("Add", {g.op("Max", {x, zero}), g.op("Min", {neg, zero})});
});

// prelu(self, weight): ONNX PRelu broadcasts the slope from the right, so a per-channel
// weight [C] becomes [C, 1, ...] for inputs of rank > 2.
TONNX_SYMBOLIC("aten::prelu", 9, [](SymbolicContext& g, Value* x, Value* w) -> Outputs {
  int64_t rank = g.rank(0);
  std::vector<int64_t> wsizes = g.sizes(1);
  // A 0-d input stays 0-d: the one weight becomes a scalar too (PRelu broadcasts).
  if (rank == 0) w = g.op("Reshape", {w, g.constant(at::empty({0}, at::kLong))});
  if (rank > 2 && wsizes.size() == 1 && wsizes[0] != 1) {
    std::vector<int64_t> axes;
    for (int64_t i = 1; i < rank - 1; ++i) axes.push_back(i);
    w = unsqueeze(g, w, axes);
  }
  return g.op("PRelu", {x, w});
});

// threshold(self, threshold, value): value where x <= threshold, else x (so NaN stays NaN).
TONNX_SYMBOLIC("aten::threshold", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.scalar_type(0);
  Value* x = g.input(0);
  Value* keep = g.op("Greater", {x, input_as(g, 1, dt)});
  if (at::isFloatingType(dt)) keep = g.op("Or", {keep, g.op("IsNaN", {x})});
  return g.op("Where", {keep, x, input_as(g, 2, dt)});
});

Outputs clip(SymbolicContext& g, Value* x, double lo, double hi) {
  at::ScalarType dt = g.scalar_type(0);
  // Clip takes min/max as inputs from opset 11 (attributes before).
  if (g.opset() >= 11)
    return g.op("Clip", {x, g.constant_scalar(lo, dt), g.constant_scalar(hi, dt)});
  if (dt != at::kFloat && dt != at::kDouble)
    return g.op("Min", {g.op("Max", {x, g.constant_scalar(lo, dt)}), g.constant_scalar(hi, dt)});
  return g.op("Clip", {x}, {{"min", lo}, {"max", hi}});
}
TONNX_SYMBOLIC("aten::hardtanh", 9, [](SymbolicContext& g, Value* x, double lo, double hi) {
  return clip(g, x, lo, hi);
});
TONNX_SYMBOLIC("aten::relu6", 9, [](SymbolicContext& g, Value* x) { return clip(g, x, 0, 6); });

// glu(self, dim): a * sigmoid(b) for the two halves along dim.
TONNX_SYMBOLIC("aten::glu", 9, [](SymbolicContext& g, Value* x, int64_t dim) -> Outputs {
  int64_t rank = g.rank(0);
  int64_t d = norm_dim(g, dim, rank);
  int64_t size = g.sizes(0)[d];
  if (size % 2)
    g.fail("glu halves dim " + std::to_string(dim) + " of odd size " + std::to_string(size));
  std::vector<Value*> halves;
  if (g.opset() >= 13)
    halves = g.op_n("Split", {x, g.constant_ints({size / 2, size / 2})}, {{"axis", d}}, 2);
  else
    halves = g.op_n("Split", {x}, {{"axis", d}, {"split", ir::Ints{size / 2, size / 2}}}, 2);
  return g.op("Mul", {halves[0], g.op("Sigmoid", {halves[1]})});
});

// softplus(self, beta, threshold): ONNX's Softplus is log(1 + e^x); PyTorch returns x where
// beta * x > threshold, which equals it within float precision for the default threshold.
TONNX_SYMBOLIC(
    "aten::softplus", 9,
    [](SymbolicContext& g, Value* x, double beta, double threshold) -> Outputs {
      at::ScalarType dt = g.scalar_type(0);
      Value* bx = beta == 1.0 ? x : g.op("Mul", {x, g.constant_scalar(beta, dt)});
      Value* sp = g.op("Softplus", {bx});
      if (beta != 1.0) sp = g.op("Div", {sp, g.constant_scalar(beta, dt)});
      if (threshold >= 15) return sp;
      return g.op("Where", {g.op("Greater", {bx, g.constant_scalar(threshold, dt)}), x, sp});
    });

TONNX_SYMBOLIC("aten::hardsigmoid", 9, [](SymbolicContext& g, Value* x) {
  return g.op("HardSigmoid", {x}, {{"alpha", 1.0f / 6}, {"beta", 0.5f}});
});
TONNX_SYMBOLIC("aten::hardswish", 9, [](SymbolicContext& g, Value* x) {
  return g.op("Mul", {x, g.op("HardSigmoid", {x}, {{"alpha", 1.0f / 6}, {"beta", 0.5f}})});
});
TONNX_SYMBOLIC("aten::hardswish", 14,
               [](SymbolicContext& g, Value* x) { return g.op("HardSwish", {x}); });
TONNX_SYMBOLIC("aten::silu", 9, [](SymbolicContext& g, Value* x) {
  return g.op("Mul", {x, g.op("Sigmoid", {x})});
});
TONNX_SYMBOLIC("aten::mish", 9, [](SymbolicContext& g, Value* x) {
  return g.op("Mul", {x, g.op("Tanh", {g.op("Softplus", {x})})});
});
TONNX_SYMBOLIC("aten::log_sigmoid", 9, [](SymbolicContext& g, Value* x) {
  return g.op("Neg", {g.op("Softplus", {g.op("Neg", {x})})});
});
// hardshrink: 0 where -lambd <= x <= lambd, else x: NaN stays NaN (ONNX's Shrink gives 0).
TONNX_SYMBOLIC("aten::hardshrink", 9, [](SymbolicContext& g, Value* x, double lambd) -> Outputs {
  Value* y = g.op("Shrink", {x}, {{"lambd", lambd}, {"bias", 0.0f}});
  if (!at::isFloatingType(g.scalar_type(0))) return y;
  return g.op("Where", {g.op("IsNaN", {x}), x, y});
});
TONNX_SYMBOLIC("aten::softshrink", 9, [](SymbolicContext& g, Value* x, double lambd) {
  return g.op("Shrink", {x}, {{"lambd", lambd}, {"bias", lambd}});
});

// gelu(self, approximate): exact 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation.
TONNX_SYMBOLIC("aten::gelu", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  at::ScalarType dt = g.scalar_type(0);
  std::string approx = g.num_inputs() > 1 ? g.s(1) : "none";
  Value* half = g.constant_scalar(0.5, dt);
  Value* one = g.constant_scalar(1.0, dt);
  if (approx == "tanh") {
    Value* x3 = g.op("Mul", {g.op("Mul", {x, x}), x});
    Value* inner = g.op("Add", {x, g.op("Mul", {x3, g.constant_scalar(0.044715, dt)})});
    inner = g.op("Mul", {inner, g.constant_scalar(std::sqrt(2.0 / M_PI), dt)});
    return g.op("Mul", {g.op("Mul", {x, half}), g.op("Add", {one, g.op("Tanh", {inner})})});
  }
  if (approx != "none") g.fail("gelu approximate='" + approx + "' is not 'none' or 'tanh'");
  Value* e = g.op("Erf", {g.op("Div", {x, g.constant_scalar(std::sqrt(2.0), dt)})});
  return g.op("Mul", {g.op("Mul", {x, half}), g.op("Add", {one, e})});
});

// native_dropout(input, p, train) -> (output, mask): in eval the input and an all-true mask;
// in training Dropout's two outputs (opset 12).
TONNX_SYMBOLIC("aten::native_dropout", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  if (g.is_none(2) || !g.b(2)) {
    Value* mask =
        g.op("Expand", {g.constant(at::scalar_tensor(true, at::kBool)), g.op("Shape", {x})});
    return {g.op("Identity", {x}), mask};
  }
  if (g.opset() < 12) g.unsupported_below(12, "dropout in training mode");
  Value* ratio = g.constant_scalar(g.f(1), at::kFloat);
  Value* training = g.constant(at::scalar_tensor(true, at::kBool));
  return g.op_n("Dropout", {x, ratio, training}, {}, 2);
});

}  // namespace
}  // namespace tonnx::sym
