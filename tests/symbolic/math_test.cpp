// Elementwise math (src/symbolic/math.cpp): add, sub, mul and div with type promotion and
// broadcasting, narrow integers that wrap, bools; unary functions on special values, rounding,
// comparisons and logic, minimum/maximum, pow, where, masked_fill, clamp, floor division,
// remainder and fmod as PyTorch computes them; floor/ceil, clip of scripted code.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/script.h>

#include "error_of.h"
#include "script_check.h"
#include "special_values.h"
#include "symbolic_test.h"
#include "test_util.h"
#include "tonnx/torchscript.h"

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

class MathOps : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, MathOps, ::testing::Values(11, 13, 17));

TEST_P(MathOps, RoundHalfToEven) {
  check([](Tensor x) { return torch::round(x); },
        {torch::tensor({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f})}, "round");
}

TEST_P(MathOps, IntegerDivisionAsPyTorch) {
  Tensor a = torch::tensor({7L, -7L, 7L, -7L, 0L, 5L}),
         b = torch::tensor({2L, 2L, -2L, -2L, 3L, 5L});
  check(
      [](Tensor a, Tensor b) {
        return std::make_tuple(torch::floor_divide(a, b), torch::remainder(a, b),
                               torch::fmod(a, b));
      },
      {a, b}, "int_div_family");
  check(
      [](Tensor a) {
        return std::make_tuple(torch::floor_divide(a, 3), torch::remainder(a, -3),
                               torch::fmod(a, -3));
      },
      {a}, "int_div_scalar");
  Tensor fa = torch::tensor({7.5f, -7.5f, 7.5f, -7.5f, 0.f}),
         fb = torch::tensor({2.f, 2.f, -2.f, -2.f, 3.f});
  check(
      [](Tensor a, Tensor b) {
        return std::make_tuple(torch::floor_divide(a, b), torch::remainder(a, b),
                               torch::fmod(a, b));
      },
      {fa, fb}, "float_div_family");
  check([](Tensor a, Tensor b) { return torch::div(a, b, "floor"); }, {a, b}, "div_floor_int");
  // int8, int16, uint8 (computed in int32: ONNX's Div has them from opset 14 only, ONNX
  // Runtime's Where not at all); -128 // -1 wraps to -128 as in LibTorch.
  for (auto t : {torch::kChar, torch::kShort, torch::kByte}) {
    bool is_signed = t != torch::kByte;
    Tensor x = is_signed ? torch::tensor({7, -7, 7, -7, 0, -128}, t)
                         : torch::tensor({7, 200, 7, 255, 0, 128}, t);
    Tensor y =
        is_signed ? torch::tensor({2, 2, -2, -2, 3, -1}, t) : torch::tensor({2, 3, 5, 2, 3, 1}, t);
    check(
        [](Tensor a, Tensor b) {
          return std::make_tuple(torch::floor_divide(a, b), torch::div(a, b, "floor"),
                                 torch::remainder(a, b));
        },
        {x, y}, std::string("small_int_floor_div_") + c10::toString(t));
  }
}

// Where a symbolic has an opset-9 form too.
class MathOps9 : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, MathOps9, ::testing::Values(9, 12, 17));

TEST_P(MathOps9, UnaryFamilyWithSpecialValues) {
  Tensor s = special_values();
  Tensor pos = torch::rand({3, 4}) + 0.1;
  check([](Tensor x) { return -x; }, {s}, "neg");
  check([](Tensor x) { return torch::abs(x) + torch::exp(x * 0.1); }, {s}, "abs_exp");
  check([](Tensor x) { return torch::sqrt(x) + torch::log(x) + torch::rsqrt(x); }, {pos},
        "sqrt_log_rsqrt");
  check([](Tensor x) { return torch::sqrt(x); }, {s}, "sqrt_nan");
  check([](Tensor x) { return torch::tanh(x) + torch::sigmoid(x); }, {s}, "tanh_sigmoid");
  check([](Tensor x) { return torch::sin(x) * torch::cos(x) + torch::tan(x); }, {torch::randn({5})},
        "trig");
  check([](Tensor x) { return torch::asin(x) + torch::acos(x) + torch::atan(x); },
        {torch::rand({5}) - 0.5}, "inverse_trig");
  check(
      [](Tensor x) { return torch::floor(x) + torch::ceil(x) + torch::trunc(x) + torch::sign(x); },
      {s}, "rounding");
  check([](Tensor x) { return torch::reciprocal(x) + torch::square(x); }, {pos},
        "reciprocal_square");
  check(
      [](Tensor x) { return torch::log1p(x) + torch::expm1(x) + torch::log2(x) + torch::log10(x); },
      {pos}, "log_family");
  check([](Tensor x) { return torch::erf(x); }, {torch::randn({6})}, "erf");
  check([](Tensor x) { return torch::sqrt(x); }, {torch::tensor({4L, 9L, 2L})},
        "sqrt_int_promotes");
  check([](Tensor x) { return torch::isnan(x); }, {s}, "isnan");
  check([](Tensor x) { return torch::logical_not(x); }, {torch::tensor({true, false})},
        "logical_not");
  check([](Tensor x) { return torch::exp(x); }, {torch::randn({0, 3})}, "exp_empty");
}

TEST_P(MathOps9, ComparisonsAndLogic) {
  Tensor a = torch::tensor({{1.f, NAN, 3.f}, {-INFINITY, 2.f, 2.f}}),
         b = torch::tensor({2.f, NAN, 3.f});
  check([](Tensor a,
           Tensor b) { return std::make_tuple(a == b, a != b, a > b, a < b, a >= b, a <= b); },
        {a, b}, "compare");
  check([](Tensor a) { return std::make_tuple(a > 2, a <= 1.5, a == 2); }, {a}, "compare_scalar");
  check([](Tensor a, Tensor b) { return a > b; },
        {torch::tensor({1L, 5L, -3L}), torch::tensor({2.5f})}, "compare_int_float");
  check([](Tensor a,
           Tensor b) { return std::make_tuple(a & b, a | b, a ^ b, torch::logical_and(a, b)); },
        {torch::tensor({true, true, false, false}), torch::tensor({true, false, true, false})},
        "logic_bool");
  check([](Tensor a, Tensor b) { return torch::logical_or(a, b); },
        {torch::tensor({0.f, 1.f, 2.f}), torch::tensor({0L, 0L, 1L})}, "logical_or_numbers");
}

TEST_P(MathOps9, MaxMinPowWhereMaskedFillClamp) {
  Tensor a = torch::randn({2, 3}), b = torch::randn({3});
  check(
      [](Tensor a, Tensor b) {
        return std::make_tuple(torch::maximum(a, b), torch::minimum(a, b), torch::max(a, b));
      },
      {a, b}, "max_min_binary");
  check([](Tensor a) { return torch::pow(a.abs(), 2.5) + torch::pow(a, 2); }, {a}, "pow_scalar");
  check([](Tensor a, Tensor b) { return torch::pow(a.abs() + 0.1, b); }, {a, b}, "pow_tensor");
  check([](Tensor a) { return torch::pow(a, 3); }, {torch::tensor({-3L, 2L, 5L})}, "pow_int");
  // Integer powers by a constant, as LibTorch: exact past 2**53 and wrapping on overflow
  // (squarings and products, not double: 3037000499**3 came out as INT64_MIN).
  check(
      [](Tensor a, Tensor b) {
        return std::make_tuple(torch::pow(a, 3), torch::pow(a, 2), torch::pow(a, 0),
                               torch::pow(a, 1), torch::pow(b, 5), torch::pow(b, 64));
      },
      {torch::tensor({3037000499L, 1L << 21, -3L, 0L, 94906267L}),
       torch::tensor({70000, -3, 0, 2, -1}, torch::kInt)},
      "pow_int_wraps");
  // where and masked_fill of int8 and int16 (selected in int32: ONNX Runtime has no Where
  // for them, and could not run the model).
  for (auto t : {torch::kChar, torch::kShort})
    check([](Tensor c, Tensor a,
             Tensor b) { return std::make_tuple(torch::where(c, a, b), a.masked_fill(c, -7)); },
          {torch::tensor({true, false, true}), torch::tensor({-128, 5, 127}, t),
           torch::tensor({1, -2, 3}, t)},
          std::string("where_") + c10::toString(t));
  // -x of uint8 wraps (ONNX's Neg has no uint8: it was an invalid model).
  check([](Tensor a) { return -a; }, {torch::tensor({0, 1, 2, 128, 255}, torch::kByte)},
        "neg_uint8");
  check([](Tensor c, Tensor a, Tensor b) { return torch::where(c, a, b); },
        {torch::rand({2, 3}) > 0.5, a, b}, "where");
  check([](Tensor a) { return torch::where(a > 0, a, torch::zeros_like(a)); }, {a},
        "where_zeros_like");
  check([](Tensor a, Tensor m) { return a.masked_fill(m, -INFINITY); },
        {a, torch::rand({2, 3}) > 0.5}, "masked_fill_inf");
  check(
      [](Tensor a) {
        return torch::clamp(a, -0.5, 0.5) + torch::clamp_min(a, 0) + torch::clamp_max(a, 0.1);
      },
      {a}, "clamp_scalar");
  check([](Tensor a, Tensor lo) { return torch::clamp(a, lo, lo + 1); }, {a, b}, "clamp_tensor");
  check([](Tensor a) { return torch::clamp(a, 1, 4); }, {torch::tensor({-2L, 3L, 9L})},
        "clamp_int64");
  check([](Tensor a) { return torch::clamp(a, c10::nullopt, 0.2); }, {a}, "clamp_no_min");
}

class MathNumeric : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, MathNumeric, ::testing::Values(10, 13, 17));

// Found by a review: floor division as LibTorch computes it (not floor(a / b): 1.0 // 0.1
// is 9), threshold and hardshrink keeping NaN, comparisons with a zero-dim tensor of
// another type (it does not promote a tensor of the same category).
TEST_P(MathNumeric, FloorDivisionNanEdgesAndZeroDimComparisons) {
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

class MathNumeric9 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, MathNumeric9, ::testing::Values(9, 13, 17));

// 8- and 16-bit integer arithmetic wraps as LibTorch's does (ONNX's Add/Sub/Mul take these types
// from opset 14; below, int32 and Mod); relu of integers (Relu takes them from opset 14).
TEST_P(MathNumeric9, NarrowIntegersWrapAndReluOfIntegers) {
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

class MathComposite : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, MathComposite, ::testing::Values(9, 13, 17));

// Bools through arithmetic and comparisons, which ONNX's Mul, Add, Greater and Less lack
// (torch.onnx's test_mul_bool, test_where_condition).
TEST_P(MathComposite, BoolArithmetic) {
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

// `math` as Python's TorchScript resolves it (to aten's builtins): Module::define's default
// resolver does not know it.
struct MathResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(
      const std::string& name, torch::jit::GraphFunction& f,
      const torch::jit::SourceRange& loc) override {
    if (name == "math") return std::make_shared<torch::jit::BuiltinModule>("aten");
    return torch::jit::nativeResolver()->resolveValue(name, f, loc);
  }
};

// math.floor / math.ceil of a float give an int (Floor in floats, then the cast); floor and
// ceil of an integer tensor are the tensor (ONNX's Floor takes floats only).
TEST(MathScripted, FloorAndCeilToInt) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x):
    n = math.floor(float(x.size(0)) * 1.5)
    c = math.ceil(float(x.size(1)) * 0.4)
    k = x.long()
    return x.new_zeros([n, c]), torch.floor(k), torch.ceil(k), torch.floor(x)
)",
           std::make_shared<MathResolver>());
  std::vector<Tensor> in{torch::randn({3, 4}) * 10};
  ExportOptions opt;
  add_dynamic_axes(opt, "input", {0, 1});
  std::string path = temp_dir("floor_ceil_to_int") + "/model.onnx";
  ExportSummary s = export_model(m, in, path, opt);
  expect_outputs_match(path, s.graph_inputs(in), s.eager_outputs, "floor_ceil_to_int");
}

TEST(MathScripted, ClipConcat) {
  expect_script_matches(R"JIT(
def forward(self, x):
    return torch.concat([torch.clip(x, -0.5, 0.5), x], -1)
)JIT",
                        {torch::randn({2, 3})}, "script_clip_concat");
}

}  // namespace
}  // namespace tonnx::test
