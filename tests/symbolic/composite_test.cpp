// src/symbolic/composite.cpp and the ops added beside their relatives (var_mean, std_mean,
// argsort, unsafe_chunk, unsafe_split_with_sizes): each exported at several opsets, tonnx's
// backend and ONNX Runtime checked against LibTorch, with negative dims and indices,
// integers, broadcasting, NaN and empty tensors.
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

TEST_P(Composite, Statistics) {
  Tensor x = torch::randn({3, 4, 5});
  check([](Tensor a) { return torch::var_mean(a, {1}, true, true); }, {x}, "var_mean_keep");
  check([](Tensor a) { return torch::std_mean(a, {-1, 0}, false, false); }, {x}, "std_mean");
  check([](Tensor a) { return torch::var_mean(a); }, {x}, "var_mean_all");
  Tensor nan = torch::tensor({{1.f, NAN, 2.f}, {0.f, 1.f, 2.f}});
  check([](Tensor a) { return torch::std_mean(a, {1}); }, {nan}, "std_mean_nan");
}

TEST_P(Composite, SortsAndSplits) {
  Tensor x = torch::randperm(24).to(torch::kFloat).reshape({2, 3, 4});
  check([](Tensor a) { return torch::argsort(a, 1, true); }, {x}, "argsort_desc");
  if (GetParam() >= 11) {  // ascending: TopK's `largest` is opset 11
    check([](Tensor a) { return torch::argsort(a, -1, false); }, {x}, "argsort");
    check([](Tensor a) { return torch::argsort(a, 0, false); }, {torch::tensor({5L, -3L, 9L, 0L})},
          "argsort_int");
  }
  check([](Tensor a) { return a.unsafe_chunk(3, -1); }, {x}, "unsafe_chunk");
  check([](Tensor a) { return a.unsafe_split_with_sizes({1, 3}, 2); }, {x}, "unsafe_split_sizes");
}

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

TEST_P(Composite, AnyAllOverADim) {
  Tensor b = torch::tensor({{true, false, false}, {true, true, true}});
  check([](Tensor a) { return torch::any(a, 1); }, {b}, "any_dim");
  check([](Tensor a) { return torch::all(a, -1, true); }, {b}, "all_dim_keep");
  check([](Tensor a) { return torch::any(a, 0); }, {torch::tensor({{0.f, NAN}, {0.f, 0.f}})},
        "any_float_nan");
  check([](Tensor a) { return torch::all(a, 0); }, {torch::tensor({{2L, 0L}, {-1L, 3L}})},
        "all_int");
  check([](Tensor a) { return torch::all(a, 1); }, {torch::zeros({2, 0}, torch::kBool)},
        "all_empty");
  check([](Tensor a) { return torch::any(a); }, {torch::zeros({0}, torch::kBool)}, "any_empty");
}

// Bools through arithmetic and comparisons, which ONNX's Mul, Add, Greater and Less lack
// (torch.onnx's test_mul_bool, test_where_condition).
TEST_P(Composite, BoolArithmetic) {
  Tensor p = torch::tensor({true, true, false, false}),
         q = torch::tensor({true, false, true, false});
  check([](Tensor a, Tensor b) { return a * b; }, {p, q}, "mul_bool");
  check([](Tensor a, Tensor b) { return a + b; }, {p, q}, "add_bool");
  check([](Tensor a, Tensor b) { return a > b; }, {p, q}, "gt_bool");
  check([](Tensor a, Tensor b) { return a <= b; }, {p, q}, "le_bool");
  // (ONNX Runtime has no Where of bools: the values are floats)
  check([](Tensor a, Tensor b) { return torch::where(a > b, a.to(torch::kFloat), 2.f); }, {p, q},
        "where_gt_bool");
  if (GetParam() >= 10)  // IsInf
    check([](Tensor a) { return torch::nan_to_num(a.to(torch::kHalf), 2.0).to(torch::kFloat); },
          {torch::tensor({1.f, NAN, INFINITY, -INFINITY})}, "nan_to_num_half");
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

TEST_P(Composite, InstanceNormRunningStats) {
  Tensor x = torch::randn({2, 3, 5});
  Tensor mean = torch::randn({3}), var = torch::rand({3}) + 0.5, w = torch::randn({3});
  check(
      [=](Tensor a) {
        return F::instance_norm(
            a,
            F::InstanceNormFuncOptions().running_mean(mean).running_var(var).weight(w).eps(1e-3));
      },
      {x}, "instance_norm_running_stats");
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

// Several indices of which some are bool masks: each mask indexes with its nonzero()
// coordinates (torch.onnx's test_input_mask_model); casting it to 0/1 would be wrong.
TEST_P(Composite11, MasksAmongSeveralIndices) {
  Tensor y = torch::randn({4, 4});
  Tensor m1 = torch::tensor({true, false, false, false});
  Tensor m2 = torch::tensor({true, false, true, true});
  using torch::indexing::TensorIndex;
  check(
      [](Tensor v, Tensor a, Tensor b) {
        v = v.clone();
        v.index_put_({a, b}, 0.5);
        return v;
      },
      {y, m1, m2}, "index_put_two_masks");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        return v.index({a, b});
      },
      {y, m1, m2}, "index_two_masks");
  check(
      [](Tensor v, Tensor a, Tensor i) {
        return v.index({a, i});
      },
      {torch::randn({3, 4, 2}), torch::tensor({false, true, true}), torch::tensor({3L, -1L})},
      "index_mask_and_ints");
  check(
      [](Tensor v, Tensor a) {
        v = v.clone();
        v.index_put_({a, torch::tensor({1L})}, torch::tensor(7.f));
        return v;
      },
      {torch::zeros({3, 2}), torch::tensor({true, false, true})}, "index_put_mask_and_int");
}

// Tensor indices past the leading dims: adjacent ones put the broadcast dims where the first
// index was (x[:, i, j]), separated ones put them first (x[i, :, j]); a rank-2 mask after a
// slice; index_put through the same layouts; a constant uint8 mask (a mask, not indices).
TEST_P(Composite11, IndicesPastTheLeadingDims) {
  using torch::indexing::Ellipsis;
  using torch::indexing::Slice;
  Tensor x = torch::randn({3, 4, 5, 6});
  Tensor i = torch::tensor({{0L, 2L}, {1L, -1L}}), j = torch::tensor({4L, 0L});
  check(
      [](Tensor v, Tensor a, Tensor b) {
        return v.index({Slice(), a, b});
      },
      {x, i, j}, "index_adjacent");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        return v.index({a, Slice(), b});
      },
      {x, i, j}, "index_separated");
  check([](Tensor v, Tensor b) { return v.index({Ellipsis, b}); }, {x, j}, "index_ellipsis");
  Tensor mask = torch::rand({4, 5}) > 0.5;
  check([](Tensor v, Tensor m) { return v.index({Slice(), m}); }, {x, mask}, "index_mask_2d");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        v = v.clone();
        v.index_put_({Slice(), a, b}, torch::arange(6).to(torch::kFloat));
        return v;
      },
      {x, i, j}, "index_put_adjacent");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        v = v.clone();
        v.index_put_({a, Slice(), b}, -1.5);
        return v;
      },
      {x, i, j}, "index_put_separated");
  check(
      [](Tensor v, Tensor b) {
        v = v.clone();
        v.index_put_({Ellipsis, b}, 2.f);
        return v;
      },
      {x, j}, "index_put_ellipsis");
  check(
      [](Tensor v) {
        return v.index({torch::tensor({0, 1, 0}, torch::kByte)});
      },
      {x}, "index_uint8_constant_mask");
  // index_select with a 0-d index keeps the dim; x.T of a 0-d tensor; einsum of bools.
  check([](Tensor v, Tensor k) { return torch::index_select(v, 1, k); }, {x, torch::tensor(2L)},
        "index_select_0d");
  check([](Tensor v) { return v.numpy_T(); }, {torch::tensor(-4.f)}, "numpy_T_0d");
  if (GetParam() >= 12)
    check(
        [](Tensor b) {
          return std::make_tuple(torch::einsum("ij->ji", {b}), torch::einsum("ii->i", {b}));
        },
        {torch::rand({3, 3}) > 0.5}, "einsum_bool");
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

TEST_P(Composite12, Losses) {
  Tensor logp = torch::log_softmax(torch::randn({4, 5}), 1);
  Tensor target = torch::tensor({1L, 0L, 4L, 1L});
  Tensor w = torch::rand({5}) + 0.1;
  check([](Tensor p, Tensor t) { return F::nll_loss(p, t); }, {logp, target}, "nll_loss_mean");
  check(
      [=](Tensor p, Tensor t) {
        return F::nll_loss(p, t, F::NLLLossFuncOptions().weight(w).reduction(torch::kSum));
      },
      {logp, target}, "nll_loss_weight_sum");
  check(
      [](Tensor p, Tensor t) {
        return F::nll_loss(p, t, F::NLLLossFuncOptions().ignore_index(1).reduction(torch::kNone));
      },
      {logp, target}, "nll_loss_ignore_none");
  check([](Tensor p, Tensor t) { return F::nll_loss(p, t); },
        {torch::log_softmax(torch::randn({2, 3, 4, 5}), 1), torch::randint(0, 3, {2, 4, 5})},
        "nll_loss_2d");
  // The aten entry points F::nll_loss dispatches to (a C++ trace records nll_loss_nd).
  check([](Tensor p, Tensor t) { return torch::nll_loss(p, t, {}, at::Reduction::Sum, 0); },
        {logp, target}, "aten_nll_loss");
  check([](Tensor p, Tensor t) { return torch::nll_loss2d(p, t, {}, at::Reduction::None, -100); },
        {torch::log_softmax(torch::randn({2, 3, 4, 5}), 1), torch::randint(0, 3, {2, 4, 5})},
        "aten_nll_loss2d");
  check([](Tensor x, Tensor t) { return F::cross_entropy(x, t); }, {torch::randn({4, 5}), target},
        "cross_entropy");
  check(
      [=](Tensor x, Tensor t) {
        return F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(w).ignore_index(4));
      },
      {torch::randn({4, 5}), target}, "cross_entropy_weight_ignore");
  Tensor logits = torch::tensor({-30.f, -1.f, 0.f, 2.f, 40.f});
  Tensor y = torch::tensor({0.f, 1.f, 0.5f, 1.f, 0.f});
  check([](Tensor x, Tensor t) { return F::binary_cross_entropy_with_logits(x, t); }, {logits, y},
        "bce_logits");
  check(
      [](Tensor x, Tensor t) {
        return F::binary_cross_entropy_with_logits(x, t,
                                                   F::BinaryCrossEntropyWithLogitsFuncOptions()
                                                       .pos_weight(torch::full({5}, 3.f))
                                                       .weight(torch::linspace(0.5, 1.5, 5))
                                                       .reduction(torch::kNone));
      },
      {logits, y}, "bce_logits_weights");
}

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

}  // namespace
}  // namespace tonnx::test
