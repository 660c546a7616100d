// Random ops: rand / randn (and *_like), normal, bernoulli, multinomial as ONNX's random ops.
// The exported model draws new numbers on every run, as the PyTorch model does on every
// call; no runtime reproduces LibTorch's generator, so the values differ and only the
// distribution is the same. Constant folding never folds them (backend/fold.cpp).
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

int64_t onnx_dtype(SymbolicContext& g, at::ScalarType t) {
  if (!at::isFloatingType(t))
    g.fail(std::string("random numbers of type ") + c10::toString(t) +
           " are not supported: ONNX draws floating-point values only");
  return static_cast<int64_t>(ir::dtype_from_scalar_type(t));
}

// rand(size, dtype?, ...) / randn: a fixed shape as an attribute; a shape known only at run
// time through a ConstantOfShape that the *Like op copies.
Outputs of_size(SymbolicContext& g, bool normal) {
  int64_t dtype = onnx_dtype(g, g.output_scalar_type());
  if (g.is_constant(0)) {
    std::vector<int64_t> size = g.ints(0);
    for (int64_t d : size)
      if (d < 0) g.fail("size has a negative dim " + std::to_string(d));
    return g.op(normal ? "RandomNormal" : "RandomUniform", {}, {{"shape", size}, {"dtype", dtype}});
  }
  Value* zeros = g.op("ConstantOfShape", {g.cast(g.input(0), at::kLong)});
  return g.op(normal ? "RandomNormalLike" : "RandomUniformLike", {zeros}, {{"dtype", dtype}});
}
TONNX_SYMBOLIC("aten::rand", 9, [](SymbolicContext& g) { return of_size(g, false); });
TONNX_SYMBOLIC("aten::randn", 9, [](SymbolicContext& g) { return of_size(g, true); });

Outputs like(SymbolicContext& g, bool normal) {
  int64_t dtype = onnx_dtype(g, g.output_scalar_type());
  return g.op(normal ? "RandomNormalLike" : "RandomUniformLike", {g.input(0)}, {{"dtype", dtype}});
}
TONNX_SYMBOLIC("aten::rand_like", 9, [](SymbolicContext& g) { return like(g, false); });
TONNX_SYMBOLIC("aten::randn_like", 9, [](SymbolicContext& g) { return like(g, true); });

// normal(mean, std, ...): a standard normal sample of the broadcast shape, times std plus mean.
// Overloads: (Tensor, Tensor), (Tensor, float), (float, Tensor), (float, float, size, ...).
TONNX_SYMBOLIC("aten::normal", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  int64_t dtype = onnx_dtype(g, dt);
  bool mean_t = g.arg_type(0) == "Tensor", std_t = g.arg_type(1) == "Tensor";
  Value* eps;
  if (!mean_t && !std_t) {
    if (!g.is_constant(2)) g.fail("normal with a size known only at run time is not supported");
    eps = g.op("RandomNormal", {}, {{"shape", g.ints(2)}, {"dtype", dtype}});
  } else {
    // The sample takes the shape of mean + std (their broadcast).
    Value* shape_src = g.op("Add", {input_as(g, 0, dt), input_as(g, 1, dt)});
    eps = g.op("RandomNormalLike", {shape_src}, {{"dtype", dtype}});
  }
  if (!std_t && g.f(1) < 0) g.fail("std must be >= 0, got " + std::to_string(g.f(1)));
  return g.op("Add", {g.op("Mul", {eps, input_as(g, 1, dt)}), input_as(g, 0, dt)});
});

// bernoulli(self) draws 1 with probability self; bernoulli(self, p) with probability p, in
// self's shape and type.
TONNX_SYMBOLIC("aten::bernoulli", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  at::ScalarType in = g.scalar_type(0);
  bool scalar_p = g.num_inputs() > 1 && g.arg_type(1) == "float";
  at::ScalarType work = at::isFloatingType(in) ? in : at::kFloat;
  Value* u =
      g.op("RandomUniformLike", {g.cast(g.input(0), work)}, {{"dtype", onnx_dtype(g, work)}});
  Value* p = scalar_p ? g.constant_scalar(g.f(1), work) : g.cast(g.input(0), work);
  if (scalar_p && (g.f(1) < 0 || g.f(1) > 1))
    g.fail("p must be in [0, 1], got " + std::to_string(g.f(1)));
  return g.cast(g.op("Less", {u, p}), dt);
});

// multinomial(self [classes] or [batch, classes], num_samples, replacement): ONNX's
// Multinomial takes log-probabilities and always draws with replacement, so without
// replacement only one sample can be exported.
TONNX_SYMBOLIC(
    "aten::multinomial", 9,
    [](SymbolicContext& g, Value* probs, int64_t n, bool replacement) -> Outputs {
      if (!replacement && n != 1)
        g.fail(
            "multinomial without replacement is exported for num_samples = 1 "
            "only (ONNX's Multinomial draws with replacement); got " +
            std::to_string(n));
      int64_t rank = g.rank(0);
      if (rank != 1 && rank != 2) g.fail("multinomial needs a 1-D or 2-D input");
      at::ScalarType work = at::isFloatingType(g.scalar_type(0)) ? g.scalar_type(0) : at::kFloat;
      Value* logp = g.op("Log", {g.cast(probs, work)});
      if (rank == 1) logp = unsqueeze(g, logp, {0});
      Value* y = g.op("Multinomial", {logp}, {{"sample_size", n}, {"dtype", int64_t{7}}});
      return rank == 1 ? squeeze(g, y, {0}) : y;
    });

}  // namespace
}  // namespace tonnx::sym
