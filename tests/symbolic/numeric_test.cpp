// src/symbolic/numeric.cpp: each op exported at several opsets, tonnx's backend and ONNX
// Runtime checked against LibTorch, with NaN and infinities, integers, broadcasting, negative
// dims and empty tensors.
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

Tensor special() {
  return torch::tensor({-2.5f, -0.f, 0.f, 0.5f, 3e38f, NAN, INFINITY, -INFINITY});
}

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

// Found by a review: floor division as LibTorch computes it (not floor(a / b): 1.0 // 0.1
// is 9), threshold and hardshrink keeping NaN, comparisons with a zero-dim tensor of
// another type (it does not promote a tensor of the same category).
TEST_P(Numeric, FloorDivisionNanEdgesAndZeroDimComparisons) {
  Tensor a = torch::tensor({1.f, 2.f, 5.f, -7.5f, 0.f, -0.f, 3.f, NAN, INFINITY, 1.f, -2.f});
  Tensor b = torch::tensor({.1f, .2f, -.5f, 2.f, 3.f, 3.f, 0.f, 1.f, 2.f, -INFINITY, .3f});
  check([](Tensor x, Tensor y) { return torch::floor_divide(x, y); }, {a, b}, "floor_div_float");
  check([](Tensor x, Tensor y) { return torch::div(x, y, "floor"); }, {a, b}, "div_floor_float");
  check([](Tensor x, Tensor y) { return torch::div(x, y, "floor"); },
        {torch::tensor(std::vector<int64_t>{-(int64_t{1} << 55) - 3, 7, -7, 0}),
         torch::tensor(std::vector<int64_t>{5, -2, 2, 3})},
        "div_floor_int64");
  check([](Tensor x) { return torch::threshold(x, 0.1, 20.0); }, {special()}, "threshold_nan");
  check([](Tensor x) { return torch::hardshrink(x, 0.5); }, {special()}, "hardshrink_nan");
  check(
      [](Tensor x, Tensor t) {
        return std::vector<Tensor>{x > t, x == t, x <= t};
      },
      {torch::tensor({.1f, .2f, .05f}), torch::tensor(.1, torch::kDouble)}, "gt_zero_dim");
  if (GetParam() >= 11)  // (Round: opset 11)
    check([](Tensor i) { return torch::round(i); }, {torch::tensor({-3L, 0L, 7L})}, "round_int");
  check([](Tensor u, Tensor lim) { return u > lim; },
        {torch::tensor({0, 1, 255}, torch::kByte), torch::tensor(-1L)}, "gt_zero_dim_int");
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

// 8- and 16-bit integer arithmetic wraps as LibTorch's does (ONNX's Add/Sub/Mul take these types
// from opset 14; below, int32 and Mod); relu of integers (Relu takes them from opset 14).
TEST_P(Numeric9, NarrowIntegersWrapAndReluOfIntegers) {
  if (GetParam() < 10) return;  // the wrap needs Mod (opset 10)
  for (auto dt : {torch::kByte, torch::kChar, torch::kShort}) {
    Tensor a = torch::tensor({250, 3, 100, 0, 127}).to(dt);
    Tensor b = torch::tensor({10, 5, 3, 1, 2}).to(dt);
    std::string n = std::string("narrow_") + c10::toString(dt);
    check([](Tensor x, Tensor y) { return x + y; }, {a, b}, n + "_add");
    check([](Tensor x, Tensor y) { return x - y * 2; }, {a, b}, n + "_sub");
    check([](Tensor x, Tensor y) { return y - x; }, {a, b}, n + "_rsub");
    check([](Tensor x, Tensor y) { return x * y; }, {a, b}, n + "_mul");
  }
  check([](Tensor x) { return torch::relu(x); }, {torch::tensor({-3, 0, 7}, torch::kInt)},
        "relu_int32");
  check([](Tensor x) { return torch::relu(x); }, {torch::tensor({-3L, 4L})}, "relu_int64");
}

// Reductions and CumSum of bool, int8, uint8 and int16 (ONNX has no such ReduceSum/ReduceMax/
// CumSum before opset 18): computed in int32 and cast back, wrapping as LibTorch does.
TEST_P(Numeric9, NarrowIntegerReductions) {
  for (auto dt : {torch::kByte, torch::kChar, torch::kShort}) {
    Tensor a = torch::tensor({{100, 3, 127}, {90, -5, 0}}).to(dt);
    std::string n = std::string("reduce_") + c10::toString(dt);
    check(
        [dt](Tensor x) {
          return std::make_tuple(x.sum(dt), x.sum(1, true, dt), x.prod(0, false, dt));
        },
        {a}, n + "_sum_prod");
    check(
        [](Tensor x) {
          return std::make_tuple(x.amax(1), x.max(), x.min(0), x.amin({0, 1}), x.argmax(),
                                 x.argmin(1, true));
        },
        {a}, n + "_max_min");
    if (GetParam() >= 11)  // (CumSum: opset 11)
      check([dt](Tensor x) { return torch::cumsum(x, -1, dt); }, {a}, n + "_cumsum");
  }
  // any/all of uint8 give uint8 (0 or 1), as LibTorch does (the checker rejected them).
  check([](Tensor x) { return std::make_tuple(x.any(1), x.all(-1), x.any(), x.all()); },
        {torch::tensor({{0, 3, 0}, {0, 0, 0}, {1, 2, 255}}, torch::kByte)}, "any_all_uint8");
  Tensor b = torch::tensor({{true, false, false}, {false, false, false}});
  check([](Tensor x) { return std::make_tuple(x.max(), x.amin(1), x.max(0), x.min(1, true)); }, {b},
        "reduce_bool_max_min");
  check([](Tensor x) { return x.amax(0); }, {torch::zeros({0, 2}, torch::kBool).t()},
        "reduce_bool_empty");
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

// scatter_add and scatter(reduce=) add or multiply at repeated indices: ScatterElements'
// reduction (16). Before 16 a scatter keeps one write per index, so the export refuses.
// Adding at repeated indices: ScatterElements' reduction from opset 16, a one-hot sum before.
class Scatter16 : public Numeric {};
INSTANTIATE_TEST_SUITE_P(Opsets, Scatter16, ::testing::Values(11, 13, 16, 17));

TEST_P(Scatter16, RepeatedIndicesAccumulate) {
  Tensor x = torch::randn({3, 4});
  Tensor idx = torch::tensor({{0L, 1L, 2L, 0L}, {0L, 0L, 2L, 2L}});  // repeats along dim 0
  Tensor src = torch::randn({2, 4});
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); }, {x, idx, src},
        "scatter_add");
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(-1, i, s); },
        {x, torch::tensor({{3L, 3L, 0L}, {1L, 1L, 1L}}), torch::randn({2, 3})},
        "scatter_add_negative_dim");
  check(
      [](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); },
      {torch::zeros({3}, torch::kLong), torch::tensor({0L, 0L, 2L}), torch::tensor({5L, -2L, 7L})},
      "scatter_add_int");
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter(0, i, s, "add"); }, {x, idx, src},
        "scatter_reduce_add");
  // NaN and infinity reach only their own target; an index smaller than self in the other dim;
  // a source larger than the index.
  Tensor special = torch::tensor({{NAN, 1.f, INFINITY}, {2.f, -INFINITY, 3.f}});
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(1, i, s); },
        {torch::zeros({3, 4}), torch::tensor({{0L, 0L, 3L}, {2L, 1L, 1L}}), special},
        "scatter_add_special");
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); },
        {torch::ones({4, 3}), torch::tensor({{3L}, {3L}}), torch::randn({3, 3})},
        "scatter_add_small_index");
  // index_put with accumulate=True: repeated and negative row indices, a NaN value, two index
  // tensors (positions over two dims), a value broadcast over the rest.
  check([](Tensor a, Tensor i, Tensor v) { return a.index_put({i}, v, /*accumulate=*/true); },
        {torch::zeros({4, 3}), torch::tensor({1L, -1L, 1L, 3L}),
         torch::tensor({{1.f, 2.f, 3.f}, {NAN, 1.f, 1.f}, {10.f, 20.f, 30.f}, {5.f, 5.f, 5.f}})},
        "index_put_accumulate");
  check(
      [](Tensor a, Tensor i, Tensor j, Tensor v) {
        return a.index_put({i, j}, v, /*accumulate=*/true);
      },
      {torch::ones({3, 4, 2}), torch::tensor({0L, 2L, 0L}), torch::tensor({1L, 3L, 1L}),
       torch::tensor({4.f, -1.f})},
      "index_put_accumulate_two");
  if (GetParam() < 16) return;
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter(0, i, s, "multiply"); }, {x, idx, src},
        "scatter_reduce_multiply");
}

TEST(NumericErrors, ScatterAddBeforeOpset11IsRefused) {
  ExportOptions opt;
  opt.opset_version = 10;
  std::string dir = temp_dir("scatter_add_10");
  try {
    export_traceable(
        make_traceable_fn([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); }),
        {torch::zeros({3}), torch::tensor({0L, 0L}), torch::ones({2})}, dir + "/m.onnx", opt);
    ADD_FAILURE() << "scatter_add exported at opset 10";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("aten::scatter_add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("11"), std::string::npos) << e.what();
  }
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
