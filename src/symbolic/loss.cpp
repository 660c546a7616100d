// Losses: nll_loss (and its 2d / nd entry points) as NegativeLogLikelihoodLoss,
// cross_entropy_loss as SoftmaxCrossEntropyLoss (both opset 12), and
// binary_cross_entropy_with_logits composed in the numerically stable form torch uses.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// aten's reduction enum: 0 none, 1 mean, 2 sum.
std::string reduction_name(SymbolicContext& g, int64_t r) {
  switch (r) {
    case 0:
      return "none";
    case 1:
      return "mean";
    case 2:
      return "sum";
    default:
      g.fail("reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(r));
  }
}

// (self, target, weight?, reduction, ignore_index[, label_smoothing]): an unbatched input
// [C] with a 0-d target gets a batch of one, removed again from an unreduced result.
Outputs class_loss(SymbolicContext& g, const char* op) {
  Value* x = g.input(0);
  Value* target = g.input(1);
  at::ScalarType tt = g.scalar_type(1);
  if (at::isFloatingType(tt))
    g.fail(
        "targets of class probabilities (a floating-point target) are not supported; "
        "give class indices");
  target = g.cast(target, at::kLong);
  std::string reduction = reduction_name(g, g.i(3));
  bool unbatched = g.rank(0) == 1;
  if (unbatched) {
    x = unsqueeze(g, x, {0});
    target = unsqueeze(g, target, {0});
  }
  std::vector<Value*> in{x, target};
  if (!g.is_none(2)) in.push_back(g.input(2));
  std::vector<ir::Attr> attrs{{"reduction", reduction}, {"ignore_index", g.i(4)}};
  Value* loss = g.op(op, in, attrs);
  if (unbatched && reduction == "none") loss = squeeze(g, loss, {0});
  return loss;
}

Outputs nll_loss(SymbolicContext& g) { return class_loss(g, "NegativeLogLikelihoodLoss"); }
TONNX_SYMBOLIC("aten::nll_loss", 12, nll_loss);
TONNX_SYMBOLIC("aten::nll_loss2d", 12, nll_loss);
TONNX_SYMBOLIC("aten::nll_loss_nd", 12, nll_loss);

TONNX_SYMBOLIC("aten::cross_entropy_loss", 12, [](SymbolicContext& g) -> Outputs {
  if (g.num_inputs() > 5 && !g.is_none(5) && g.f(5) != 0.0)
    g.fail("label_smoothing " + std::to_string(g.f(5)) + " is not supported (only 0)");
  return class_loss(g, "SoftmaxCrossEntropyLoss");
});

// binary_cross_entropy_with_logits(x, t, weight?, pos_weight?, reduction):
// (1 - t) x + (1 + (pw - 1) t) (log(1 + exp(-|x|)) + max(-x, 0)), times weight, reduced.
TONNX_SYMBOLIC("aten::binary_cross_entropy_with_logits", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* x = input_as(g, 0, dt);
  Value* t = input_as(g, 1, dt);
  Value* one = g.constant_scalar(1.0, dt);
  Value* zero = g.constant_scalar(0.0, dt);
  Value* neg = g.op("Neg", {x});
  Value* softplus = g.op(
      "Add", {g.op("Log", {g.op("Add", {one, g.op("Exp", {g.op("Neg", {g.op("Abs", {x})})})})}),
              g.op("Max", {neg, zero})});
  Value* coeff = one;
  if (!g.is_none(3))
    coeff = g.op("Add", {one, g.op("Mul", {g.op("Sub", {input_as(g, 3, dt), one}), t})});
  Value* loss =
      g.op("Add", {g.op("Mul", {g.op("Sub", {one, t}), x}), g.op("Mul", {coeff, softplus})});
  if (!g.is_none(2)) loss = g.op("Mul", {loss, input_as(g, 2, dt)});
  std::string reduction = reduction_name(g, g.i(4));
  if (reduction == "none") return loss;
  return reduce(g, reduction == "mean" ? "ReduceMean" : "ReduceSum", loss, std::nullopt, false);
});

// kl_div(self, target, reduction, log_target): target * (log(target) - self), 0 where the
// target is 0 (xlogy); exp(target) * (target - self) for a log target. Reductions over all.
TONNX_SYMBOLIC("aten::kl_div", 9,
               [](SymbolicContext& g, Value*, Value*, int64_t reduction, bool log_target) {
                 at::ScalarType dt = g.output_scalar_type();
                 Value* x = input_as(g, 0, dt);
                 Value* t = input_as(g, 1, dt);
                 Value* loss;
                 if (log_target) {
                   loss = g.op("Mul", {g.op("Exp", {t}), g.op("Sub", {t, x})});
                 } else {
                   Value* zero = g.constant_scalar(0, dt);
                   Value* tlogt = g.op(
                       "Where", {equal(g, t, zero, dt), zero, g.op("Mul", {t, g.op("Log", {t})})});
                   loss = g.op("Sub", {tlogt, g.op("Mul", {t, x})});
                 }
                 std::string r = reduction_name(g, reduction);
                 if (r == "none") return loss;
                 return reduce(g, r == "mean" ? "ReduceMean" : "ReduceSum", loss, std::nullopt,
                               false);
               });

}  // namespace
}  // namespace tonnx::sym
