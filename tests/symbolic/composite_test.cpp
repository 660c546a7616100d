// src/symbolic/composite.cpp: each op exported at several opsets, tonnx's backend and ONNX
// Runtime checked against LibTorch, with negative dims and indices, integers, broadcasting, NaN
// and empty tensors; eye, one_hot, linspace and hann_window of sizes computed at run time,
// scripted from source.
#include "script_check.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class Composite : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(7); }
  template <typename Fn>
  void check(Fn f, std::vector<Tensor> in, const std::string& name, Tolerance tol = {}) {
    expect_fn_matches(f, in, GetParam(), name + "_opset" + std::to_string(GetParam()), tol);
  }
};
INSTANTIATE_TEST_SUITE_P(Opsets, Composite, ::testing::Values(9, 13, 17));

TEST_P(Composite, OneHotAndCross) {
  check([](Tensor a) { return F::one_hot(a, 5); }, {torch::tensor({0L, 4L, 2L})}, "one_hot");
  check([](Tensor a) { return F::one_hot(a); }, {torch::tensor({{1L, 3L}, {0L, 2L}})},
        "one_hot_inferred");
  check([](Tensor a) { return F::one_hot(a, 3); }, {torch::zeros({0}, torch::kLong)},
        "one_hot_empty");
  Tensor a = torch::randn({4, 3}), b = torch::randn({1, 3});
  check([](Tensor p, Tensor q) { return torch::linalg_cross(p, q); }, {a, b}, "linalg_cross");
  check([](Tensor p, Tensor q) { return torch::cross(p, q, 0); },
        {torch::randn({3, 2}), torch::randn({3, 2})}, "cross_dim0");
  check([](Tensor p, Tensor q) { return torch::linalg_cross(p, q, -2); },
        {torch::tensor({{1L, 2L}, {3L, 4L}, {5L, -6L}}),
         torch::tensor({{0L, 1L}, {1L, 0L}, {2L, 2L}})},
        "linalg_cross_int");
}

TEST_P(Composite, Broadcast) {
  check(
      [](Tensor p, Tensor q, Tensor r) {
        return torch::broadcast_tensors({p, q, r});
      },
      {torch::randn({3, 1}), torch::randn({4}), torch::randn({1, 1, 1})}, "broadcast_tensors");
  check(
      [](Tensor p, Tensor q) {
        return torch::broadcast_tensors({p, q});
      },
      {torch::tensor({true, false}), torch::tensor({{1L}, {2L}})}, "broadcast_tensors_bool");
}

TEST_P(Composite, IndexFill) {
  Tensor x = torch::randn({3, 4});
  Tensor idx = torch::tensor({0L, -1L});
  check([](Tensor a, Tensor i) { return a.index_fill(1, i, -2.5); }, {x, idx}, "index_fill");
  check([](Tensor a, Tensor i) { return a.index_fill(-2, i, torch::tensor(7.f)); }, {x, idx},
        "index_fill_tensor");
  check([](Tensor a, Tensor i) { return a.index_fill(0, i, 1); },
        {torch::tensor({{1L, 2L}, {3L, 4L}}), torch::tensor({1L})}, "index_fill_int");
  check([](Tensor a, Tensor i) { return a.index_fill(1, i, 0.5); },
        {x, torch::zeros({0}, torch::kLong)}, "index_fill_no_index");
}

TEST_P(Composite, MaskedSelectAndScatter) {
  if (GetParam() < 11) GTEST_SKIP() << "NonZero, GatherND and ScatterND: opset 11";
  Tensor x = torch::randn({3, 4});
  Tensor m = torch::rand({4}) > 0.5;
  check([](Tensor a, Tensor k) { return torch::masked_select(a, k); }, {x, m}, "masked_select");
  check([](Tensor a, Tensor k) { return torch::masked_select(a, k); },
        {torch::tensor({1L, 2L}), torch::tensor({{true, false}, {true, true}})},
        "masked_select_broadcast_self");
  check([](Tensor a, Tensor k) { return torch::masked_select(a, k); },
        {x, torch::zeros({3, 4}, torch::kBool)}, "masked_select_none");
  check([](Tensor a, Tensor k, Tensor s) { return a.masked_scatter(k, s); },
        {x, m, torch::randn({20})}, "masked_scatter");
  check([](Tensor a, Tensor k, Tensor s) { return a.masked_scatter(k, s); },
        {torch::zeros({2, 2}, torch::kLong), torch::tensor({{true, false}, {false, true}}),
         torch::tensor({{5L, 6L}, {7L, 8L}})},
        "masked_scatter_int");
}

TEST_P(Composite, TakeDiagonalEye) {
  Tensor x = torch::randn({3, 4});
  check([](Tensor a, Tensor i) { return torch::take(a, i); },
        {x, torch::tensor({{0L, -1L}, {5L, 11L}})}, "take");
  check([](Tensor a) { return torch::diagonal(a); }, {x}, "diagonal");
  check([](Tensor a) { return torch::diagonal(a, 1); }, {x}, "diagonal_offset");
  check([](Tensor a) { return torch::diagonal(a, -2, -1, 0); }, {torch::randn({4, 2, 3})},
        "diagonal_negative");
  check([](Tensor a) { return torch::diagonal(a, 5); }, {x}, "diagonal_empty");
  check([](Tensor a) { return a + torch::eye(3, 4); }, {x}, "eye");
  check([](Tensor a) { return a * torch::eye(2, torch::kLong); },
        {torch::tensor({{2L, 3L}, {4L, 5L}})}, "eye_int");
}

TEST_P(Composite, Casts) {
  Tensor x = torch::tensor({-1.7f, 0.f, 2.5f, 300.f});
  check([](Tensor a) { return torch::_cast_Int(a); }, {x}, "cast_int");
  check([](Tensor a) { return torch::_cast_Double(a); }, {x}, "cast_double");
  check([](Tensor a) { return torch::_cast_Byte(torch::relu(a)); }, {x}, "cast_byte");
  check([](Tensor a) { return torch::_cast_Long(a); }, {x}, "cast_long");
  check([](Tensor a) { return torch::_cast_Float(a); }, {x}, "cast_same");
  check([](Tensor a) { return torch::_cast_Char(a); }, {x}, "cast_char");
  check([](Tensor a) { return torch::_cast_Short(a); }, {x}, "cast_short");
  check([](Tensor a) { return torch::_cast_Float(torch::_cast_Half(a)); }, {x}, "cast_half");
}

TEST_P(Composite, RepeatSplitWindows) {
  Tensor x = torch::randn({2, 3});
  check([](Tensor a) { return torch::repeat_interleave(a, 2, 1); }, {x}, "repeat_interleave_int");
  check([](Tensor a) { return torch::repeat_interleave(a, 3); }, {x}, "repeat_interleave_flat");
  check(
      [](Tensor a) {
        return torch::repeat_interleave(a, torch::tensor({1L, 0L, 2L}), -1);
      },
      {x}, "repeat_interleave_const_tensor");
  if (GetParam() >= 11)
    check([](Tensor a, Tensor r) { return torch::repeat_interleave(a, r, 0); },
          {x, torch::tensor({3L, 1L})}, "repeat_interleave_runtime");
  Tensor y = torch::randn({7, 2});
  check([](Tensor a) { return torch::tensor_split(a, 3, 0); }, {y}, "tensor_split_sections");
  check(
      [](Tensor a) {
        return torch::tensor_split(a, std::vector<int64_t>{2, -1, 9}, 0);
      },
      {y}, "tensor_split_indices");
  check([](Tensor a) { return a + torch::linspace(-1, 2, 2); }, {y}, "linspace");
  check([](Tensor a) { return a.unsqueeze(0) * torch::hann_window(7, false).unsqueeze(1); }, {y},
        "hann_window");
  check([](Tensor a) { return a.numpy_T(); }, {torch::randn({2, 3, 4})}, "numpy_T");
  check([](Tensor a) { return torch::aminmax(a, 1, true); }, {y}, "aminmax_dim");
  check([](Tensor a) { return torch::aminmax(a); }, {torch::tensor({3L, -2L, 7L})}, "aminmax_int");
  check([](Tensor a, Tensor b) { return F::cosine_similarity(a, b); },
        {torch::randn({4, 5}), torch::randn({1, 5})}, "cosine_similarity");
  check([](Tensor a, Tensor b) { return a.__xor__(b); },
        {torch::tensor({true, false, true}), torch::tensor({true, true, false})}, "xor_bool");
}

TEST_P(Composite, DistancesAndActivations) {
  Tensor a = torch::randn({4, 5}), b = torch::randn({4, 5});
  check([](Tensor x, Tensor y) { return F::pairwise_distance(x, y); }, {a, b}, "pairwise_l2");
  check(
      [](Tensor x, Tensor y) {
        return F::pairwise_distance(x, y, F::PairwiseDistanceFuncOptions().p(1).keepdim(true));
      },
      {a, b}, "pairwise_l1_keep");
  check([](Tensor x,
           Tensor y) { return F::pairwise_distance(x, y, F::PairwiseDistanceFuncOptions().p(3)); },
        {a, b}, "pairwise_p3");
  check([](Tensor x) { return torch::rrelu(x, 0.1, 0.3, false); },
        {torch::tensor({-2.f, -0.f, 0.5f, NAN, -INFINITY})}, "rrelu_eval");
  check([](Tensor x) { return torch::_dim_arange(x, 1) * 2; }, {a}, "dim_arange");
}

class Composite11 : public Composite {};
INSTANTIATE_TEST_SUITE_P(Opsets, Composite11, ::testing::Values(11, 16, 17));

TEST_P(Composite11, IndexCopyAndAdd) {
  Tensor x = torch::randn({4, 3});
  Tensor src = torch::randn({2, 3});
  check([](Tensor a, Tensor i, Tensor s) { return a.index_copy(0, i, s); },
        {x, torch::tensor({3L, 0L}), src}, "index_copy");
  check([](Tensor a, Tensor i, Tensor s) { return a.index_copy(-1, i, s); },
        {x, torch::tensor({2L}), torch::randn({4, 1})}, "index_copy_negative_dim");
  // index_add: ScatterElements' reduction from opset 16, a one-hot sum at 11.
  check([](Tensor a, Tensor i, Tensor s) { return a.index_add(0, i, s, 2.0); },
        {x, torch::tensor({1L, 1L}), src}, "index_add_repeated");
  check([](Tensor a, Tensor i, Tensor s) { return a.index_add(1, i, s); },
        {torch::zeros({2, 3}, torch::kLong), torch::tensor({2L, 0L, 2L}),
         torch::tensor({{1L, 2L, 3L}, {4L, 5L, 6L}})},
        "index_add_int");
  // torch broadcasts each source slice over self's slice (torch.onnx's
  // test_index_add_dynamic_axes): a source of size 1 in dim 0 reaches every row.
  check(
      [](Tensor a, Tensor s) {
        return a.index_add(1, torch::tensor({0L, 2L, 3L, 1L}), s);
      },
      {torch::ones({5, 4, 3}), torch::randn({1, 4, 3})}, "index_add_broadcast_source");
  // A source with fewer dims than self: each slice source.select(dim, i) aligns with self's
  // slice from the right (torch.onnx's test_index_add_normal).
  check(
      [](Tensor a, Tensor s) {
        return a.index_add(0, torch::tensor({0L, 2L, 3L, 1L, 4L}), s);
      },
      {torch::ones({5, 4, 3}), torch::randn({5, 1})}, "index_add_fewer_dims_dim0");
  check(
      [](Tensor a, Tensor s) {
        return a.index_add(1, torch::tensor({0L, 2L}), s);
      },
      {torch::ones({2, 4, 3}), torch::randn({3, 2})}, "index_add_fewer_dims_dim1");
}

TEST_P(Composite11, Determinants) {
  Tensor m = torch::randn({3, 4, 4});
  check([](Tensor x) { return torch::linalg_det(x); }, {m}, "linalg_det", Tolerance{1e-3, 1e-4});
  check([](Tensor x) { return torch::det(x); }, {torch::randn({2, 2})}, "det");
  check([](Tensor x) { return torch::logdet(x); },
        {torch::tensor({{2.f, 1.f}, {1.f, 3.f}}).expand({2, 2, 2}).contiguous() *
         torch::tensor({1.f, -1.f}).reshape({2, 1, 1})},
        "logdet_nan_for_negative");
}

TEST_P(Composite11, Shifts) {
  Tensor x = torch::tensor({-7L, -1L, 0L, 5L, 1024L});
  Tensor s = torch::tensor({1L, 0L, 3L, 2L, 10L});
  check([](Tensor a, Tensor b) { return a.__lshift__(b); }, {x, s}, "lshift");
  check([](Tensor a, Tensor b) { return a.__rshift__(b); }, {x, s}, "rshift_negative");
  check([](Tensor a) { return a.__rshift__(1); }, {x}, "rshift_scalar");
  check([](Tensor a, Tensor b) { return a.__lshift__(b); },
        {torch::tensor({1, 3, 200}, torch::kByte), torch::tensor({1, 2, 1}, torch::kByte)},
        "lshift_uint8");
}

class Composite12 : public Composite {};
INSTANTIATE_TEST_SUITE_P(Opsets, Composite12, ::testing::Values(12, 17));

TEST_P(Composite12, Einsum) {
  Tensor a = torch::randn({2, 3, 4}), b = torch::randn({2, 4, 5});
  check(
      [](Tensor p, Tensor q) {
        return torch::einsum("bij,bjk->bik", {p, q});
      },
      {a, b}, "einsum_bmm");
  check([](Tensor p) { return torch::einsum("i i", {p}); }, {torch::randn({3, 3})}, "einsum_trace");
  check(
      [](Tensor p, Tensor q) {
        return torch::einsum("...j,...j->...", {p, q});
      },
      {torch::randn({2, 3}), torch::randn({2, 3})}, "einsum_ellipsis");
  check([](Tensor p, Tensor q) { return torch::tensordot(p, q, {2}, {1}); }, {a, b}, "tensordot");
  check(
      [](Tensor p, Tensor q) {
        return torch::tensordot(p, q, {-1, 0}, {1, 0});
      },
      {a, torch::randn({2, 4})}, "tensordot_two_dims");
}

// Factories whose sizes or ends are computed at run time (torch.onnx's scripted tests).
TEST(CompositeScripted, FactoriesOfRuntimeSizes) {
  expect_script_matches(R"(
def forward(self, x, n):
    k = int(n)
    return torch.eye(k, 3) * 2.0, torch.one_hot(x, k + 1), torch.linspace(float(n), 5.0, 4), torch.hann_window(k, False), torch.hann_window(k), torch.eye(k)
)",
                        {torch::tensor({0L, 2L, 1L}), torch::tensor(4L)}, "runtime_factories");
  expect_script_matches(R"(
def forward(self, n):
    return torch.hann_window(int(n), False) + 1
)",
                        {torch::tensor(1L)}, "hann_window_of_one");
}

}  // namespace
}  // namespace tonnx::test
