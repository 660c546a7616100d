// Tensor manipulation (src/symbolic/tensor.cpp): cat over a negative dim and mixed types.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class TensorSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, TensorSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(TensorSymbolic, CatNegativeDimMixedTypes) {
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b}, -1);
      },
      {torch::randn({2, 3}), torch::randn({2, 1})}, opset(), "cat_neg");
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b}, 0);
      },
      {torch::randn({2, 3}), torch::randn({0, 3})}, opset(), "cat_empty");
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b});
      },
      {torch::ones({2}, torch::kLong), torch::zeros({3}, torch::kLong)}, opset(), "cat_int64");
}

}  // namespace
}  // namespace tonnx::test
