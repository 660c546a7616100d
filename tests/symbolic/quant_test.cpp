// Fake quantization (src/symbolic/quant.cpp): fake_quantize_per_tensor_affine and
// fake_quantize_per_channel_affine, scripted from source, exported at several opsets, and
// checked on tonnx's backend and ONNX Runtime against LibTorch, with values on both sides of
// the range.
#include "script_check.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class QuantParity11 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, QuantParity11, ::testing::Values(11, 16, 17));

// Fake quantization (QAT): the usual ranges, a 4-bit one (beyond torch.onnx), qparams as
// tensors, per channel on a negative axis; values on both sides of the range.
TEST_P(QuantParity11, FakeQuantize) {
  Tensor x = torch::randn({2, 3, 4}) * 3;
  check_script(R"(
def forward(self, x, s, z):
    a = torch.fake_quantize_per_tensor_affine(x, 0.1, 3, 0, 255)
    b = torch.fake_quantize_per_tensor_affine(x, 0.05, -2, -128, 127)
    e = torch.fake_quantize_per_tensor_affine(x, s, z, 0, 255)
    return a, b, e
)",
               {x, torch::tensor({0.25f}), torch::tensor({10}, torch::kInt)}, opset(),
               "fake_quantize_per_tensor");
  expect_export_error(R"(
def forward(self, x):
    return torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -200, 200)
)",
                      {x}, opset(), "fits neither uint8 nor int8");
  if (opset() < 13) return;  // Clip of integers (12), QuantizeLinear's axis (13)
  check_script(R"(
def forward(self, x):
    c = torch.fake_quantize_per_tensor_affine(x, 0.2, 0, 0, 127)
    d = torch.fake_quantize_per_tensor_affine(x, 0.5, 7, 0, 15)
    return c, d
)",
               {x}, opset(), "fake_quantize_narrow_ranges");
  check_script(
      R"(
def forward(self, x, s, z, s2, z2):
    return torch.fake_quantize_per_channel_affine(x, s, z, 1, -128, 127), torch.fake_quantize_per_channel_affine(x, s2, z2, 2, 0, 255)
)",
      {x, torch::tensor({0.1f, 0.02f, 0.5f}), torch::tensor({0, 5, -3}, torch::kInt),
       torch::tensor({0.1f, 0.2f, 0.05f, 1.f}), torch::tensor({0, 5, 3, 128}, torch::kInt)},
      opset(), "fake_quantize_per_channel");
}

}  // namespace
}  // namespace tonnx::test
