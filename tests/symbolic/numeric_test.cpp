// src/symbolic/numeric.cpp: each op exported at several opsets, tonnx's backend and ONNX
// Runtime checked against LibTorch, with NaN and infinities, integers, broadcasting, negative
// dims and empty tensors; the small ops of scripted code (conj_physical, lift, as_tensor, item,
// is_floating_point, is_pinned) scripted from source.
#include "script_check.h"
#include "special_values.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class Numeric : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(5); }
  template <typename Fn>
  void check(Fn f, std::vector<Tensor> in, const std::string& name, Tolerance tol = {}) {
    expect_fn_matches(f, in, GetParam(), name, tol);
  }
};
// IsInf needs opset 10; the others have opset-9 forms (tested at 9 below).
INSTANTIATE_TEST_SUITE_P(Opsets, Numeric, ::testing::Values(10, 13, 17));

TEST_P(Numeric, InfiniteAndFinite) {
  check([](Tensor x) { return torch::isinf(x); }, {special()}, "isinf");
  check([](Tensor x) { return torch::isfinite(x); }, {special()}, "isfinite");
  check([](Tensor x) { return torch::isinf(x); }, {torch::tensor({1L, -5L})}, "isinf_int");
  check([](Tensor x) { return torch::isfinite(x); }, {torch::zeros({0, 3})}, "isfinite_empty");
  check([](Tensor x) { return torch::isinf(x).logical_or(torch::isfinite(x)); },
        {special().to(torch::kDouble)}, "isinf_double");
}

TEST_P(Numeric, NanToNum) {
  check([](Tensor x) { return torch::nan_to_num(x); }, {special()}, "nan_to_num_default");
  check([](Tensor x) { return torch::nan_to_num(x, 1.5, 100.0, -100.0); }, {special()},
        "nan_to_num_values");
  check([](Tensor x) { return torch::nan_to_num(x, 0.0, c10::nullopt, -7.0); },
        {special().to(torch::kDouble)}, "nan_to_num_double");
  check([](Tensor x) { return torch::nan_to_num(x) + 1; }, {torch::tensor({3L, -4L})},
        "nan_to_num_int");
}

class Numeric9 : public Numeric {};
INSTANTIATE_TEST_SUITE_P(Opsets, Numeric9, ::testing::Values(9, 13, 17));

TEST_P(Numeric9, Arithmetic) {
  Tensor a = torch::randn({2, 3}), b = torch::randn({3}), c = torch::randn({2, 1});
  // LibTorch's true_divide and tanhshrink trace as div and tanh/sub (no symbolic of their own
  // is reached): these check the export's behaviour for a C++ user of either.
  check([](Tensor x, Tensor y) { return torch::true_divide(x, y); }, {a, b}, "true_divide");
  check([](Tensor x, Tensor y) { return torch::true_divide(x, y); },
        {torch::tensor({7L, -7L, 0L}), torch::tensor({2L, 2L, 0L})}, "true_divide_int");
  check([](Tensor x, Tensor y, Tensor z) { return torch::addcmul(x, y, z, 0.5); }, {a, b, c},
        "addcmul");
  check([](Tensor x, Tensor y, Tensor z) { return torch::addcmul(x, y, z); },
        {torch::tensor({1L, 2L}), torch::tensor({3L, 4L}), torch::tensor({-1L, 5L})},
        "addcmul_int");
  check([](Tensor x, Tensor y) { return torch::lerp(x, y, 0.3); }, {a, b}, "lerp_scalar");
  check([](Tensor x, Tensor y, Tensor w) { return torch::lerp(x, y, w); }, {a, b, c},
        "lerp_tensor");
  // Both of LibTorch's formulas: weight 1 gives end exactly, an infinite start stays infinite.
  Tensor s = torch::tensor({1e8f, INFINITY, 3.f, -1e8f, 0.1f, -INFINITY, 1e20f});
  Tensor e = torch::tensor({1.f, 0.5f, 1e-8f, 7.f, 0.7f, 2.f, 3.f});
  Tensor w = torch::tensor({1.f, 0.5f, 0.9f, 0.75f, 0.6f, 0.7f, -0.6f});
  check(
      [](Tensor x, Tensor y, Tensor w) {
        return std::make_tuple(torch::lerp(x, y, w), torch::lerp(x, y, 1.0),
                               torch::lerp(x, y, 0.75), torch::lerp(x, y, -0.6),
                               torch::lerp(x, y, 0.3));
      },
      {s, e, w}, "lerp_both_formulas");
  check([](Tensor x) { return torch::nn::functional::tanhshrink(x); }, {special()}, "tanhshrink");
}

TEST_P(Numeric9, Products) {
  check([](Tensor x, Tensor y) { return torch::outer(x, y); },
        {torch::randn({4}), torch::randn({3})}, "outer");
  check([](Tensor x, Tensor y) { return torch::outer(x, y); },
        {torch::tensor({1L, 2L}), torch::tensor({3L, -1L, 0L})}, "outer_int");
  check([](Tensor m, Tensor v) { return torch::mv(m, v); },
        {torch::randn({3, 4}), torch::randn({4})}, "mv");
  check([](Tensor x, Tensor y) { return torch::dot(x, y); }, {torch::randn({5}), torch::randn({5})},
        "dot");
  check([](Tensor x, Tensor y) { return torch::dot(x, y); }, {torch::zeros({0}), torch::zeros({0})},
        "dot_empty");
}

TEST_P(Numeric9, ViewsAndNoOps) {
  Tensor x = torch::randn({2, 3, 4});
  check([](Tensor a, Tensor b) { return a.view_as(b); }, {x, torch::zeros({6, 4})}, "view_as");
  check([](Tensor a, Tensor b) { return a.reshape_as(b) * 2; }, {x, torch::zeros({4, 6})},
        "reshape_as");
  check([](Tensor a) { return torch::movedim(a, 0, -1); }, {x}, "movedim_int");
  check([](Tensor a) { return torch::movedim(a, {-1, 0}, {0, 2}); }, {x}, "movedim_list");
  check([](Tensor a) { return torch::movedim(a, 1, 1) + 1; }, {torch::zeros({2, 0, 3})},
        "movedim_empty");
  check([](Tensor a) { return a.resolve_conj().resolve_neg() + torch::alias(a); }, {x},
        "resolve_alias");
  // is_floating_point is answered while tracing (a C++ bool).
  check([](Tensor a) { return a.is_floating_point() ? a * 2 : a; }, {x}, "is_floating_point");
}

class NumericParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, NumericParity, ::testing::Values(9, 11, 13, 17));

TEST_P(NumericParity, SmallOps) {
  Tensor x = torch::randn({2, 3});
  check_script(R"(
def forward(self, x, i):
    a = torch.conj_physical(x) * 2
    b = torch.lift(x) * torch.lift_fresh(x)
    d = x.new_zeros([2, 3]).fill_(i[0])
    e = torch.as_tensor(i, dtype=6) * 0.5
    f = x * x[0, 1].item()
    g, m = torch.native_dropout(x, 0.5, False)
    l: List[int] = i.tolist()
    return a, b, d, e, f, torch.fill(i, 7), g, m, x * l[1]
)",
               {x, torch::tensor({3L, -1L})}, opset(), "small_ops");
  check_script(R"(
def forward(self, x, s):
    y = torch._reshape_from_tensor(x, s)
    z = x.detach()
    return y, z.data + 1
)",
               {torch::randn({2, 3, 4}), torch::tensor({4L, -1L})}, opset(), "reshape_from_tensor");
  if (opset() < 11) return;  // the branches below are ONNX If (opset 11)
  check_script(R"(
def forward(self, x, i):
    a = x * 2 if x.is_floating_point() else x
    b = i * 2 if i.is_floating_point() or x.is_pinned() else i + 1
    return a, b
)",
               {x, torch::tensor({3L, -1L})}, opset(), "type_predicates");
}

TEST(NumericErrors, MovedimNamesTheProblem) {
  ExportOptions opt;
  std::string dir = temp_dir("movedim_bad");
  try {
    export_traceable(make_traceable_fn([](Tensor a) {
                       return torch::movedim(a, {0, 0}, {1, 2});
                     }),
                     {torch::randn({2, 3, 4})}, dir + "/m.onnx", opt);
    ADD_FAILURE() << "movedim with a repeated source dim exported";
  } catch (const std::exception& e) {
    // LibTorch refuses it while tracing; either way the export fails loudly.
    EXPECT_NE(std::string(e.what()).find("movedim"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tonnx::test
