// Arithmetic (src/symbolic/math.cpp): add, sub, mul and div with type promotion and
// broadcasting.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class MathSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, MathSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(MathSymbolic, AddSubMulDivPromotionAndBroadcast) {
  auto a = torch::randn({2, 3}), b = torch::randn({3});
  expect_fn_matches([](Tensor a, Tensor b) { return torch::add(a, b, 2.5); }, {a, b}, opset(),
                    "add_alpha");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::sub(a, b, -1); }, {a, b}, opset(),
                    "sub_alpha");
  expect_fn_matches([](Tensor a) { return a + 1; }, {a}, opset(), "add_scalar");
  expect_fn_matches([](Tensor a) { return 3 - a; }, {a}, opset(), "rsub_scalar");
  expect_fn_matches([](Tensor a, Tensor b) { return a * b; },
                    {torch::arange(6, torch::kLong).reshape({2, 3}), torch::tensor({-2L, 0L, 5L})},
                    opset(), "mul_int64");
  expect_fn_matches([](Tensor a, Tensor b) { return a + b; },
                    {torch::arange(6, torch::kInt).reshape({2, 3}), b}, opset(),
                    "add_int_float_promotes");
  expect_fn_matches([](Tensor a, Tensor b) { return a / b; },
                    {torch::tensor({7L, -7L, 9L}), torch::tensor({2L, 2L, -4L})}, opset(),
                    "div_int_true");
  auto div_floor = [](Tensor a, Tensor b) { return torch::div(a, b, "floor"); };
  expect_fn_matches(div_floor, {torch::tensor({7L, -7L, 9L}), torch::tensor({2L, 2L, -4L})},
                    opset(), "div_floor_int");
  std::vector<Tensor> floats{torch::tensor({7.5f, -7.5f, 9.f}), torch::tensor({2.f, 2.f, -4.f})};
  if (opset() >= 10) {
    expect_fn_matches(div_floor, floats, opset(), "div_floor");
  } else {  // LibTorch's floor division of floats needs fmod (Mod); floor(a / b) is not it
    ExportOptions opt;
    opt.opset_version = opset();
    std::string e = error_of([&] {
      export_traceable(make_traceable_fn(div_floor), floats, temp_dir("df9") + "/m.onnx", opt);
    });
    EXPECT_NE(e.find("floor division of floating-point tensors (Mod) needs opset 10"),
              std::string::npos)
        << e;
  }
  expect_fn_matches([](Tensor a, Tensor b) { return torch::div(a, b, "trunc"); },
                    {torch::tensor({7L, -7L, 9L}), torch::tensor({2L, 2L, -4L})}, opset(),
                    "div_trunc_int");
  expect_fn_matches(
      [](Tensor a, Tensor b) { return a + b; },
      {torch::tensor({1.f, NAN, INFINITY}), torch::tensor({-INFINITY, 1.f, INFINITY})}, opset(),
      "add_naninf");
  expect_fn_matches([](Tensor a, Tensor b) { return a * b; },
                    {torch::randn({0, 3}), torch::randn({3})}, opset(), "mul_empty");
}

}  // namespace
}  // namespace tonnx::test
