// Activations, softmax and dropout (src/symbolic/activation.cpp): relu on NaN and inf and in
// place, dropout as identity in eval, softmax over any dim and with inf, relu's relatives
// (leaky_relu, elu, selu, celu, prelu, threshold, hardtanh, relu6, glu, softplus, hardsigmoid,
// hardswish, silu, mish, the shrinks, gelu).
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "special_values.h"
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

// Where a symbolic has an opset-9 form too.
class ActivationOps9 : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ActivationOps9, ::testing::Values(9, 12, 17));

TEST_P(ActivationOps9, Activations) {
  Tensor s = special_values();
  Tensor x = torch::randn({2, 4, 3, 3});
  check([](Tensor x) { return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.3)); },
        {s}, "leaky_relu");
  check([](Tensor x) { return torch::elu(x, 0.7) + torch::selu(x) + torch::celu(x, 1.3); },
        {torch::randn({9})}, "elu_family");
  check([](Tensor x) { return torch::elu(x, 1.0, 2.0, 0.5); }, {torch::randn({9})}, "elu_scales");
  auto w1 = torch::tensor({0.25f}), w4 = torch::rand({4});
  check([w1, w4](Tensor x) { return torch::prelu(x, w1) + torch::prelu(x, w4); }, {x}, "prelu");
  // A 0-d input keeps rank 0 (the check compares shapes too).
  check([w1](Tensor x) { return torch::prelu(x, w1); }, {torch::tensor(-2.0f)}, "prelu_0d");
  check([](Tensor x) { return torch::threshold(x, 0.2, -3.0); }, {x}, "threshold");
  check([](Tensor x) { return torch::hardtanh(x, -0.5, 0.7) + F::relu6(x * 5); }, {x},
        "hardtanh_relu6");
  check([](Tensor x) { return F::glu(x, 1) + F::glu(x, -3); }, {x}, "glu");
  check(
      [](Tensor x) {
        return F::softplus(x) + F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(1));
      },
      {x * 10}, "softplus");
  check(
      [](Tensor x) {
        return torch::hardsigmoid(x) + torch::hardswish(x) + F::silu(x) + F::mish(x);
      },
      {x * 4}, "mobile_acts");
  check(
      [](Tensor x) {
        return F::logsigmoid(x) + F::tanhshrink(x) + F::hardshrink(x, 0.5) + F::softshrink(x, 0.5);
      },
      {x}, "shrinks");
  check([](Tensor x) { return F::gelu(x) + F::gelu(x, F::GELUFuncOptions().approximate("tanh")); },
        {x * 3}, "gelu");
}

}  // namespace
}  // namespace tonnx::test
