// Normalization: batch_norm (eval and training statistics), instance_norm, group_norm,
// layer_norm.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn)
Outputs batch_norm(SymbolicContext& g) {
  Value* x = g.input(0);
  const int64_t rank = g.rank(0);
  if (rank < 2) g.fail("batch_norm needs an input of rank >= 2 (N, C, ...)");
  // The channel count is needed only to make a missing weight or bias (sizes along other dims
  // may vary: a scripted block, dynamic axes).
  auto channels = [&]() {
    const ir::Dim& d = (*g.type(0)->shape)[1];
    if (!d.value)
      g.fail(
          "batch_norm without weight or bias needs the channel count (dim 1 of the input), "
          "which is not known from the trace");
    return *d.value;
  };
  at::ScalarType dt = g.scalar_type(0);
  Value* scale = g.is_none(1) ? g.constant(at::ones({channels()}, dt)) : g.input(1);
  Value* bias = g.is_none(2) ? g.constant(at::zeros({channels()}, dt)) : g.input(2);
  bool training = g.b(5);
  double momentum = g.f(6), eps = g.f(7);
  if (training || g.is_none(3)) {
    // Batch statistics: the normalization is computed explicitly (ONNX's training_mode
    // would also update running stats, which an inference graph must not do).
    std::vector<int64_t> axes{0};
    for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
    Value* mean = reduce(g, "ReduceMean", x, axes, true);
    Value* centered = g.op("Sub", {x, mean});
    Value* var = reduce(g, "ReduceMean", g.op("Mul", {centered, centered}), axes, true);
    Value* denom = g.op("Sqrt", {g.op("Add", {var, g.constant_scalar(eps, dt)})});
    std::vector<int64_t> bshape(static_cast<size_t>(rank), 1);
    bshape[1] = -1;  // [C, 1, ...] against [N, C, ...]
    Value* shp = g.constant_ints(bshape);
    Value* y = g.op("Div", {centered, denom});
    y = g.op("Mul", {y, g.op("Reshape", {scale, shp})});
    return g.op("Add", {y, g.op("Reshape", {bias, shp})});
  }
  return g.op("BatchNormalization", {x, scale, bias, g.input(3), g.input(4)},
              {{"epsilon", eps}, {"momentum", 1.0 - momentum}});
}
TONNX_SYMBOLIC("aten::batch_norm", 9, batch_norm);

// layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable):
// LayerNormalization from opset 17; before, mean/variance over the trailing dims.
TONNX_SYMBOLIC("aten::layer_norm", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  int64_t rank = g.rank(0);
  int64_t n = static_cast<int64_t>(g.ints(1).size());
  double eps = g.f(4);
  at::ScalarType dt = g.scalar_type(0);
  if (g.opset() >= 17) {
    std::vector<Value*> in{x};
    Value* scale = g.is_none(2) ? g.constant(at::ones(g.ints(1), dt)) : g.input(2);
    in.push_back(scale);
    if (!g.is_none(3)) in.push_back(g.input(3));
    return g.op("LayerNormalization", in, {{"axis", -n}, {"epsilon", eps}});
  }
  std::vector<int64_t> axes;
  for (int64_t i = rank - n; i < rank; ++i) axes.push_back(i);
  Value* mean = reduce(g, "ReduceMean", x, axes, true);
  Value* c = g.op("Sub", {x, mean});
  Value* var = reduce(g, "ReduceMean", g.op("Mul", {c, c}), axes, true);
  Value* y = g.op("Div", {c, g.op("Sqrt", {g.op("Add", {var, g.constant_scalar(eps, dt)})})});
  if (!g.is_none(2)) y = g.op("Mul", {y, g.input(2)});
  if (!g.is_none(3)) y = g.op("Add", {y, g.input(3)});
  return y;
});

// group_norm(input, num_groups, weight, bias, eps, cudnn_enabled): normalize [N, G, -1],
// then the per-channel affine.
TONNX_SYMBOLIC("aten::group_norm", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  std::vector<int64_t> s = g.sizes(0);
  int64_t groups = g.i(1);
  double eps = g.f(4);
  at::ScalarType dt = g.scalar_type(0);
  // 0 copies the batch dim, so the graph works for any batch size.
  Value* r = g.op("Reshape", {x, g.constant_ints({0, groups, -1})});
  Value* mean = reduce(g, "ReduceMean", r, std::vector<int64_t>{2}, true);
  Value* c = g.op("Sub", {r, mean});
  Value* var = reduce(g, "ReduceMean", g.op("Mul", {c, c}), std::vector<int64_t>{2}, true);
  Value* y = g.op("Div", {c, g.op("Sqrt", {g.op("Add", {var, g.constant_scalar(eps, dt)})})});
  y = g.op("Reshape", {y, g.op("Shape", {x})});
  std::vector<int64_t> bshape(s.size(), 1);
  bshape[1] = s[1];
  if (!g.is_none(2)) y = g.op("Mul", {y, g.op("Reshape", {g.input(2), g.constant_ints(bshape)})});
  if (!g.is_none(3)) y = g.op("Add", {y, g.op("Reshape", {g.input(3), g.constant_ints(bshape)})});
  return y;
});

// instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
// eps, cudnn_enabled): InstanceNormalization with statistics of each instance; with the
// running statistics (track_running_stats, in eval) it is BatchNormalization's inference.
TONNX_SYMBOLIC("aten::instance_norm", 9, [](SymbolicContext& g) -> Outputs {
  std::vector<int64_t> s = g.sizes(0);
  if (s.size() < 2) g.fail("instance_norm needs an input of rank >= 2 (N, C, ...)");
  at::ScalarType dt = g.scalar_type(0);
  Value* scale = g.is_none(1) ? g.constant(at::ones({s[1]}, dt)) : g.input(1);
  Value* bias = g.is_none(2) ? g.constant(at::zeros({s[1]}, dt)) : g.input(2);
  if (!g.b(5)) {
    if (g.is_none(3) || g.is_none(4))
      g.fail("instance_norm without input statistics needs running_mean and running_var");
    return g.op("BatchNormalization", {g.input(0), scale, bias, g.input(3), g.input(4)},
                {{"epsilon", g.f(7)}});
  }
  return g.op("InstanceNormalization", {g.input(0), scale, bias}, {{"epsilon", g.f(7)}});
});

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd), mean and
// rstd with the normalized dims kept as 1 (what layer_norm's decomposition leaves in a trace).
TONNX_SYMBOLIC("aten::native_layer_norm", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  int64_t rank = g.rank(0);
  int64_t n = static_cast<int64_t>(g.ints(1).size());
  if (n > rank)
    g.fail("normalized_shape has " + std::to_string(n) + " dims but the input only " +
           std::to_string(rank));
  at::ScalarType dt = g.scalar_type(0);
  std::vector<int64_t> axes;
  for (int64_t i = rank - n; i < rank; ++i) axes.push_back(i);
  Value* mean = reduce(g, "ReduceMean", x, axes, true);
  Value* c = g.op("Sub", {x, mean});
  Value* var = reduce(g, "ReduceMean", g.op("Mul", {c, c}), axes, true);
  Value* rstd =
      g.op("Reciprocal", {g.op("Sqrt", {g.op("Add", {var, g.constant_scalar(g.f(4), dt)})})});
  Value* y = g.op("Mul", {c, rstd});
  if (!g.is_none(2)) y = g.op("Mul", {y, g.input(2)});
  if (!g.is_none(3)) y = g.op("Add", {y, g.input(3)});
  return {y, mean, rstd};
});

// _weight_norm(v, g, dim): v * g / ||v||, the norm over every dim but `dim` (all of them for
// dim -1), kept as 1 so it broadcasts against g's shape.
TONNX_SYMBOLIC("aten::_weight_norm", 9,
               [](SymbolicContext& g, Value* v, Value* gain, int64_t dim) -> Outputs {
                 int64_t rank = g.rank(0);
                 std::vector<int64_t> axes;
                 if (dim != -1) dim = norm_dim(g, dim, rank);
                 for (int64_t i = 0; i < rank; ++i)
                   if (i != dim) axes.push_back(i);
                 Value* norm =
                     axes.empty() ? g.op("Abs", {v}) : reduce(g, "ReduceL2", v, axes, true);
                 return g.op("Mul", {v, g.op("Div", {gain, norm})});
               });

}  // namespace
}  // namespace tonnx::sym
