// Convolutions (src/symbolic/conv.cpp): conv1d/2d/3d with strides, pads, dilations,
// groups and SAME padding, conv_transpose with output_padding, an empty batch; conv_tbc (and
// lstm_cell) and the convolution entry points of scripted code, scripted from source.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "script_check.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class ConvSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ConvSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(ConvSymbolic, Conv2dStridePadDilationGroups) {
  auto w = torch::randn({8, 2, 3, 3}), b = torch::randn({8});
  expect_fn_matches(
      [&](Tensor x) {
        return F::conv2d(
            x, w,
            F::Conv2dFuncOptions().bias(b).stride({2, 1}).padding({1, 2}).dilation({1, 2}).groups(
                2));
      },
      {torch::randn({2, 4, 9, 11})}, opset(), "conv2d_groups");
}

TEST_P(ConvSymbolic, Conv1dAnd3dNoBias) {
  auto w1 = torch::randn({3, 2, 4}), w3 = torch::randn({2, 2, 2, 3, 2});
  expect_fn_matches([&](Tensor x) { return F::conv1d(x, w1, F::Conv1dFuncOptions().stride(2)); },
                    {torch::randn({1, 2, 10})}, opset(), "conv1d");
  expect_fn_matches([&](Tensor x) { return F::conv3d(x, w3, F::Conv3dFuncOptions().padding(1)); },
                    {torch::randn({1, 2, 4, 5, 6})}, opset(), "conv3d");
}

TEST_P(ConvSymbolic, ConvSamePaddingEvenKernel) {
  auto w = torch::randn({2, 3, 4, 4});
  expect_fn_matches(
      [&](Tensor x) {
        return F::conv2d(x, w, F::Conv2dFuncOptions().padding(torch::kSame).dilation(2));
      },
      {torch::randn({1, 3, 9, 8})}, opset(), "conv_same");
}

TEST_P(ConvSymbolic, ConvTranspose2dOutputPadding) {
  torch::nn::ConvTranspose2d m(
      torch::nn::ConvTranspose2dOptions(4, 3, 3).stride(2).padding(1).output_padding(1));
  m->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  expect_export_matches(make_traceable(m), {torch::randn({2, 4, 5, 6})}, opt,
                        "convtranspose_" + std::to_string(opset()));
}

TEST_P(ConvSymbolic, ConvEmptyBatch) {
  auto w = torch::randn({4, 3, 3, 3});
  expect_fn_matches([&](Tensor x) { return F::conv2d(x, w); }, {torch::randn({0, 3, 8, 8})},
                    opset(), "conv_empty");
}

class ConvParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ConvParity, ::testing::Values(9, 11, 13, 17));

TEST_P(ConvParity, ConvTbcAndLstmCell) {
  check_script(R"(
def forward(self, x, w, b):
    return torch.conv_tbc(x, w, b, 1), torch.conv_tbc(x, w, b, 0)
)",
               {torch::randn({6, 2, 3}), torch::randn({3, 3, 4}), torch::randn({4})}, opset(),
               "conv_tbc");
  Tensor x = torch::randn({2, 3}), h = torch::randn({2, 5}), c = torch::randn({2, 5});
  Tensor wi = torch::randn({20, 3}), wh = torch::randn({20, 5});
  check_script(R"(
def forward(self, x, h, c, wi, wh, bi, bh):
    h1, c1 = torch.lstm_cell(x, [h, c], wi, wh, bi, bh)
    h2, c2 = torch.lstm_cell(x, [h1, c1], wi, wh)
    return h1, c1, h2, c2
)",
               {x, h, c, wi, wh, torch::randn({20}), torch::randn({20})}, opset(), "lstm_cell");
}

TEST(ConvScripted, ConvolutionEntryPoints) {
  expect_script_matches(R"JIT(
def forward(self, x, w, w1, w3):
    a = torch.conv2d(x, w, None, [1, 1], [1, 1])
    b = torch.convolution(x, w, None, [2, 1], [0, 1], [1, 1], False, [0, 0], 1)
    c = torch.conv1d(x[0], w1)
    d = torch.conv3d(x.unsqueeze(0), w3)
    return a, b, c, d
)JIT",
                        {torch::randn({1, 2, 6, 7}), torch::randn({3, 2, 3, 3}),
                         torch::randn({4, 6, 2}), torch::randn({2, 1, 2, 2, 2})},
                        "script_conv");
  expect_script_matches(R"JIT(
def forward(self, x, w):
    a = torch.conv_transpose2d(x, w, None, 2, 1)
    b = torch.conv_transpose1d(x[:, :, 0], w[:, :, 0], None, 1)
    c = torch.conv_transpose3d(x.unsqueeze(2), w.unsqueeze(2))
    return a, b, c
)JIT",
                        {torch::randn({1, 2, 4, 5}), torch::randn({2, 3, 3, 3})},
                        "script_conv_transpose");
}

}  // namespace
}  // namespace tonnx::test
