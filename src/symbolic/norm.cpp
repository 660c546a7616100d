// Normalization: batch_norm (eval and training statistics).
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn)
Outputs batch_norm(SymbolicContext& g) {
  Value* x = g.input(0);
  std::vector<int64_t> sizes = g.sizes(0);
  if (sizes.size() < 2) g.fail("batch_norm needs an input of rank >= 2 (N, C, ...)");
  int64_t c = sizes[1];
  at::ScalarType dt = g.scalar_type(0);
  Value* scale = g.is_none(1) ? g.constant(at::ones({c}, dt)) : g.input(1);
  Value* bias = g.is_none(2) ? g.constant(at::zeros({c}, dt)) : g.input(2);
  bool training = g.b(5);
  double momentum = g.f(6), eps = g.f(7);
  if (training || g.is_none(3)) {
    // Batch statistics: the normalization is computed explicitly (ONNX's training_mode
    // would also update running stats, which an inference graph must not do).
    std::vector<int64_t> axes{0};
    for (size_t i = 2; i < sizes.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    Value* mean = reduce(g, "ReduceMean", x, axes, true);
    Value* centered = g.op("Sub", {x, mean});
    Value* var = reduce(g, "ReduceMean", g.op("Mul", {centered, centered}), axes, true);
    Value* denom = g.op("Sqrt", {g.op("Add", {var, g.constant_scalar(eps, dt)})});
    std::vector<int64_t> bshape(sizes.size(), 1);
    bshape[1] = c;
    Value* shp = g.constant_ints(bshape);
    Value* y = g.op("Div", {centered, denom});
    y = g.op("Mul", {y, g.op("Reshape", {scale, shp})});
    return g.op("Add", {y, g.op("Reshape", {bias, shp})});
  }
  return g.op("BatchNormalization", {x, scale, bias, g.input(3), g.input(4)},
              {{"epsilon", eps}, {"momentum", 1.0 - momentum}});
}
TONNX_SYMBOLIC("aten::batch_norm", 9, batch_norm);

}  // namespace
}  // namespace tonnx::sym
