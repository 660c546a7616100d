// The normalization kernels (src/backend/kernels/normalization.cpp) against LibTorch or, where
// LibTorch has no equal, the ONNX definition computed in double: LayerNormalization over any
// axis (negative too) with its Mean and InvStdDev outputs, InstanceNormalization,
// LRN at odd and even sizes, and MeanVarianceNormalization on data far from zero (where
// E[x^2] - E[x]^2 in float cancels), constant data and NaN.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::test::expect_close;
using tonnx::test::run_one_node;

TEST(BackendNormalization, LayerNormOverEveryAxisAsLibTorch) {
  torch::manual_seed(5);
  at::Tensor x = torch::randn({2, 3, 4, 5}) * 3 + 1;
  for (int64_t axis : {1, 2, -1, -2, 3}) {
    int64_t a = axis < 0 ? axis + 4 : axis;
    std::vector<int64_t> shape(x.sizes().begin() + a, x.sizes().end());
    at::Tensor scale = torch::randn(shape), bias = torch::randn(shape);
    std::string what = "axis " + std::to_string(axis);
    // Y alone: LibTorch's layer_norm; with Mean and InvStdDev: the double-precision path.
    at::Tensor want = at::layer_norm(x, shape, scale, bias, 1e-5);
    expect_close(
        run_one_node("LayerNormalization", {x, scale, bias}, {{"axis", ir::AttrValue(axis)}}).at(0),
        want, {1e-5, 1e-5}, what);
    auto all =
        run_one_node("LayerNormalization", {x, scale, bias}, {{"axis", ir::AttrValue(axis)}}, 3);
    expect_close(all.at(0), want, {1e-5, 1e-5}, what + ", with Mean and InvStdDev");
    std::vector<int64_t> dims;
    for (int64_t d = a; d < 4; ++d) dims.push_back(d);
    at::Tensor xd = x.to(at::kDouble), mean = xd.mean(dims, true);
    at::Tensor inv = at::rsqrt((xd - mean).pow(2).mean(dims, true) + 1e-5);
    expect_close(all.at(1), mean.to(at::kFloat), {1e-6, 1e-6}, what + ": Mean");
    expect_close(all.at(2), inv.to(at::kFloat), {1e-6, 1e-6}, what + ": InvStdDev");
  }
}

TEST(BackendNormalization, InstanceNormAsLibTorch) {
  torch::manual_seed(6);
  at::Tensor x = torch::randn({2, 3, 5, 4}) * 2 - 1, scale = torch::randn({3}),
             bias = torch::randn({3});
  at::Tensor want = at::instance_norm(x, scale, bias, {}, {}, true, 0.0, 1e-3, false);
  expect_close(
      run_one_node("InstanceNormalization", {x, scale, bias}, {{"epsilon", ir::AttrValue(1e-3f)}})
          .at(0),
      want, {1e-5, 1e-5}, "instance norm");
}

// ONNX's LRN, computed in double: the window of channel c is [c - floor((size - 1) / 2),
// c + ceil((size - 1) / 2)], clipped to [0, C - 1].
at::Tensor lrn_reference(const at::Tensor& x, int64_t size, double alpha, double beta,
                         double bias) {
  at::Tensor xd = x.to(at::kDouble), sum = at::zeros_like(xd);
  int64_t C = x.size(1), lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = std::max<int64_t>(0, c - lo); i <= std::min<int64_t>(C - 1, c + hi); ++i)
      sum.select(1, c).add_(xd.select(1, i).pow(2));
  return (xd / (bias + alpha / static_cast<double>(size) * sum).pow(beta)).to(x.scalar_type());
}

TEST(BackendNormalization, LrnAtOddAndEvenSizes) {
  torch::manual_seed(7);
  at::Tensor x = torch::randn({2, 6, 3, 3}) * 4;
  for (int64_t size : {1, 2, 3, 4, 5, 7}) {
    at::Tensor got = run_one_node("LRN", {x},
                                  {{"size", ir::AttrValue(size)},
                                   {"alpha", ir::AttrValue(2e-2f)},
                                   {"beta", ir::AttrValue(0.6f)},
                                   {"bias", ir::AttrValue(1.5f)}})
                         .at(0);
    expect_close(got, lrn_reference(x, size, 2e-2f, 0.6f, 1.5f), {1e-5, 1e-6},
                 "size " + std::to_string(size));
  }
}

// ONNX's MeanVarianceNormalization in double: (X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9).
at::Tensor mvn_reference(const at::Tensor& x, std::vector<int64_t> axes) {
  at::Tensor xd = x.to(at::kDouble), mean = xd.mean(axes, true);
  at::Tensor sd = (xd - mean).pow(2).mean(axes, true).sqrt();
  return ((xd - mean) / (sd + 1e-9)).to(x.scalar_type());
}

TEST(BackendNormalization, MeanVarianceNormalizationFarFromZero) {
  torch::manual_seed(8);
  // Values around 1e4 with a spread of 1: in float, E[x^2] - E[x]^2 loses every digit of the
  // variance (1e8 has an ulp of 8) and may come out negative.
  at::Tensor x = torch::randn({2, 3, 4, 5}) + 1e4;
  for (std::vector<int64_t> axes :
       {std::vector<int64_t>{0, 2, 3}, std::vector<int64_t>{1}, std::vector<int64_t>{2, 3}}) {
    std::vector<ir::Attr> attrs;
    if (axes.size() != 3) attrs.push_back({"axes", ir::AttrValue(ir::Ints(axes))});
    at::Tensor got = run_one_node("MeanVarianceNormalization", {x}, attrs).at(0);
    EXPECT_FALSE(got.isnan().any().item<bool>()) << c10::str(axes);
    // The float input itself is only good to an ulp of 1e4 (1e-3) against a spread of 1.
    expect_close(got, mvn_reference(x, axes), {0, 2e-3}, "axes " + c10::str(axes));
  }
}

TEST(BackendNormalization, MeanVarianceNormalizationOfConstantAndNan) {
  at::Tensor x = torch::full({1, 2, 2, 2}, 7.f);
  x[0][1][0][0] = NAN;
  at::Tensor got = run_one_node("MeanVarianceNormalization", {x}, {}).at(0);
  // Channel 0 is constant: 0 / (0 + 1e-9) = 0. Channel 1 holds a NaN: NaN throughout.
  EXPECT_TRUE(at::equal(got.select(1, 0), torch::zeros({1, 2, 2}))) << got;
  EXPECT_TRUE(got.select(1, 1).isnan().all().item<bool>()) << got;
}

}  // namespace
