// Resizing (src/symbolic/resize.cpp): nearest neighbours at non-integer scales.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class ResizeSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ResizeSymbolic, ::testing::ValuesIn(key_opsets()));

// Non-integer scale factors: the output size (5 x 1.4 is 7 in float) and nearest neighbours
// (output 29 at scale 2.9 reads input 10) as LibTorch and ONNX Runtime compute them.
TEST_P(ResizeSymbolic, InterpolateNearestAtNonIntegerScales) {
  if (opset() < 11) GTEST_SKIP() << "checked from opset 11 (Resize)";
  namespace F = torch::nn::functional;
  for (double scale : {1.4, 2.9})
    for (const auto& shape : {std::vector<int64_t>{1, 2, 5, 5}, std::vector<int64_t>{1, 1, 15, 20}})
      expect_fn_matches(
          [scale](Tensor x) {
            return F::interpolate(x, F::InterpolateFuncOptions()
                                         .scale_factor(std::vector<double>{scale, scale})
                                         .mode(torch::kNearest));
          },
          {torch::randn(shape)}, opset(),
          "nearest_scale_" + std::to_string(scale) + "_" + std::to_string(shape[3]));
}

}  // namespace
}  // namespace tonnx::test
