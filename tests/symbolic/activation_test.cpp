// Activations, softmax and dropout (src/symbolic/activation.cpp): relu on NaN and inf and in
// place, dropout as identity in eval, softmax over any dim and with inf.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class ActivationSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ActivationSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(ActivationSymbolic, ReluWithNanInfAndInplace) {
  auto x = torch::tensor({-1.0f, 0.0f, 2.5f, NAN, INFINITY, -INFINITY}).reshape({2, 3});
  expect_fn_matches([](Tensor x) { return torch::relu(x); }, {x}, opset(), "relu");
  expect_fn_matches(
      [](Tensor x) {
        auto y = x * 1;
        return torch::relu_(y);
      },
      {x}, opset(), "relu_inplace");
}

TEST_P(ActivationSymbolic, DropoutIsIdentityInEval) {
  torch::nn::Sequential m(torch::nn::Linear(4, 4), torch::nn::Dropout(0.5),
                          torch::nn::Dropout2d(0.3));
  m->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  auto path = expect_export_matches(make_traceable(m), {torch::randn({2, 4})}, opt,
                                    "dropout" + std::to_string(opset()));
  for (const auto& op : op_types(path)) EXPECT_NE(op, "Dropout");
}

TEST_P(ActivationSymbolic, SoftmaxAnyDim) {
  auto x = torch::randn({2, 3, 4});
  for (int64_t dim : {-1, 0, 1, 2, -2}) {
    expect_fn_matches([dim](Tensor x) { return torch::softmax(x, dim); }, {x}, opset(),
                      "softmax" + std::to_string(dim + 2));
    expect_fn_matches([dim](Tensor x) { return torch::log_softmax(x, dim); }, {x}, opset(),
                      "logsoftmax" + std::to_string(dim + 2));
  }
  expect_fn_matches([](Tensor x) { return torch::softmax(x, 1, torch::kDouble); }, {x}, opset(),
                    "softmax_dtype");
  expect_fn_matches([](Tensor x) { return torch::softmax(x, -1); },
                    {torch::tensor({1.f, INFINITY, 2.f})}, opset(), "softmax_inf");
}

}  // namespace
}  // namespace tonnx::test
