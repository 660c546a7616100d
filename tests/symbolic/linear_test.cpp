// Linear algebra (src/symbolic/linear.cpp): linear, addmm, matmul, mm, bmm and t.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class LinearSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, LinearSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(LinearSymbolic, LinearForms) {
  auto w = torch::randn({5, 4}), b = torch::randn({5});
  expect_fn_matches([&](Tensor x) { return F::linear(x, w, b); }, {torch::randn({3, 4})}, opset(),
                    "linear2d");
  expect_fn_matches([&](Tensor x) { return F::linear(x, w, b); }, {torch::randn({2, 3, 4})},
                    opset(), "linear3d");
  expect_fn_matches([&](Tensor x) { return F::linear(x, w); }, {torch::randn({3, 4})}, opset(),
                    "linear_nobias");
  torch::nn::Linear lin(4, 5);
  ExportOptions opt;
  opt.opset_version = opset();
  auto path = expect_export_matches(make_traceable(lin), {torch::randn({6, 4})}, opt,
                                    "nn_linear" + std::to_string(opset()));
  // The weight stays the parameter: Gemm(transB=1), no transposed copy.
  EXPECT_EQ(op_types(path), std::vector<std::string>{"Gemm"});
}

TEST_P(LinearSymbolic, AddmmMatmulMmBmmT) {
  auto c = torch::randn({3, 5}), a = torch::randn({3, 4}), b = torch::randn({4, 5});
  expect_fn_matches([](Tensor c, Tensor a, Tensor b) { return torch::addmm(c, a, b, 0.5, 2.0); },
                    {c, a, b}, opset(), "addmm");
  expect_fn_matches([](Tensor c, Tensor a, Tensor b) { return torch::addmm(c.select(0, 0), a, b); },
                    {c, a, b}, opset(), "addmm_broadcast");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::mm(a, b); }, {a, b}, opset(), "mm");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::bmm(a, b); },
                    {torch::randn({2, 3, 4}), torch::randn({2, 4, 2})}, opset(), "bmm");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::matmul(a, b); },
                    {torch::randn({2, 1, 3, 4}), torch::randn({3, 4, 2})}, opset(),
                    "matmul_broadcast");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::matmul(a, b); },
                    {torch::randn({4}), torch::randn({4})}, opset(), "matmul_vec");
  expect_fn_matches([](Tensor a) { return a.t(); }, {torch::randn({3, 4})}, opset(), "t");
  expect_fn_matches([](Tensor a) { return a.t() * 2; }, {torch::randn({3})}, opset(), "t_vec");
}

}  // namespace
}  // namespace tonnx::test
