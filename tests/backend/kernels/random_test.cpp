// The random kernels (src/backend/kernels/random.cpp): no oracle gives the same numbers (they
// draw from LibTorch's generator), so the tests check what every draw must satisfy: shapes and
// dtypes, ranges, Bernoulli at probabilities 0 and 1, a class of probability 0 never drawn by
// Multinomial, and the moments of large draws within bounds that a correct generator misses
// with probability far below 1e-9.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::test::run_one_node;

ir::AttrValue floats(double v) { return ir::AttrValue(static_cast<float>(v)); }

TEST(BackendRandom, UniformStaysInItsRangeWithItsMean) {
  at::Tensor y =
      run_one_node(
          "RandomUniform", {},
          {{"shape", ir::AttrValue(ir::Ints{200, 500})}, {"low", floats(-2)}, {"high", floats(3)}})
          .at(0);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({200, 500}));
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_GE(y.min().item<double>(), -2.0);
  EXPECT_LT(y.max().item<double>(), 3.0);
  // Mean 0.5, standard error 5 / sqrt(12 * 1e5) = 4.6e-3: 0.05 is over ten of them.
  EXPECT_NEAR(y.mean().item<double>(), 0.5, 0.05);
}

TEST(BackendRandom, NormalLikeTakesTheInputsShapeAndItsOwnDtype) {
  at::Tensor x = torch::zeros({300, 400}, torch::kFloat);
  at::Tensor y = run_one_node("RandomNormalLike", {x},
                              {{"mean", floats(4)},
                               {"scale", floats(2)},
                               {"dtype", ir::AttrValue(int64_t{11})}})  // double
                     .at(0);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_EQ(y.scalar_type(), at::kDouble);
  // Standard errors: 2 / sqrt(1.2e5) = 5.8e-3 for the mean; about 4e-3 for the deviation.
  EXPECT_NEAR(y.mean().item<double>(), 4.0, 0.06);
  EXPECT_NEAR(y.std().item<double>(), 2.0, 0.05);
}

TEST(BackendRandom, UniformLikeOfAnEmptyTensorIsEmpty) {
  at::Tensor y = run_one_node("RandomUniformLike", {torch::zeros({0, 3})}, {}).at(0);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({0, 3}));
}

TEST(BackendRandom, BernoulliAtZeroAndOneIsCertain) {
  at::Tensor p = torch::tensor({0.f, 1.f, 0.f, 1.f}).repeat({1000});
  for (int64_t dtype : {int64_t{0}, int64_t{9}}) {  // the input's type; bool
    std::vector<ir::Attr> attrs;
    if (dtype) attrs.push_back({"dtype", ir::AttrValue(dtype)});
    at::Tensor y = run_one_node("Bernoulli", {p}, attrs).at(0);
    EXPECT_EQ(y.scalar_type(), dtype ? at::kBool : at::kFloat);
    EXPECT_TRUE(at::equal(y.to(at::kFloat), p)) << "dtype " << dtype;
  }
}

TEST(BackendRandom, MultinomialNeverDrawsAClassOfProbabilityZero) {
  // Log-probabilities: class 1 has -inf (probability 0) in every row.
  at::Tensor x = torch::tensor({{0.f, -INFINITY, 1.f}, {2.f, -INFINITY, -1.f}});
  at::Tensor y = run_one_node("Multinomial", {x},
                              {{"sample_size", ir::AttrValue(int64_t{500})},
                               {"dtype", ir::AttrValue(int64_t{7})}})
                     .at(0);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({2, 500}));
  EXPECT_EQ(y.scalar_type(), at::kLong);
  EXPECT_FALSE((y == 1).any().item<bool>());
  EXPECT_TRUE(((y == 0) | (y == 2)).all().item<bool>());
}

TEST(BackendRandom, MultinomialOfNoRowsOrNoSamplesIsEmpty) {
  at::Tensor y = run_one_node("Multinomial", {torch::zeros({0, 3})}, {}).at(0);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({0, 1}));
  EXPECT_EQ(y.scalar_type(), at::kInt);
  y = run_one_node("Multinomial", {torch::zeros({2, 3})},
                   {{"sample_size", ir::AttrValue(int64_t{0})}})
          .at(0);
  EXPECT_EQ(y.sizes(), at::IntArrayRef({2, 0}));
}

}  // namespace
