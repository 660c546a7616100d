// Convolutions (src/symbolic/conv.cpp): conv1d/2d/3d with strides, pads, dilations,
// groups and SAME padding, conv_transpose with output_padding, an empty batch.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
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

}  // namespace
}  // namespace tonnx::test
