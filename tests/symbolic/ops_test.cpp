// Symbolic functions beyond the exporter core (the seed's operator list and what real
// models need). Each case exports a small function and checks tonnx's backend and ONNX
// Runtime against LibTorch eager, with edge values (negative dims, broadcasting, empty
// tensors, int64 and bool, NaN and inf).
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

Tensor special_values() {
  return torch::tensor({-2.5f, -1.f, 0.f, 0.5f, 3.f, NAN, INFINITY, -INFINITY});
}

class Ops : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, Ops, ::testing::Values(11, 13, 17));
// Where a symbolic has an opset-9 form too.
class Ops9 : public Ops {};
INSTANTIATE_TEST_SUITE_P(Opsets, Ops9, ::testing::Values(9, 12, 17));

TEST_P(Ops9, UnaryFamilyWithSpecialValues) {
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

TEST_P(Ops, RoundHalfToEven) {
  check([](Tensor x) { return torch::round(x); },
        {torch::tensor({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f})}, "round");
}

TEST_P(Ops9, ComparisonsAndLogic) {
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

TEST_P(Ops9, MaxMinPowWhereMaskedFillClamp) {
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

TEST_P(Ops, IntegerDivisionAsPyTorch) {
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

TEST_P(Ops9, Activations) {
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

TEST_P(Ops, ShapeOps) {
  Tensor x = torch::randn({2, 3, 4});
  check([](Tensor x) { return x.transpose(0, -1) + 0; }, {x}, "transpose");
  check([](Tensor x) { return x.permute({2, 0, 1}); }, {x}, "permute");
  check([](Tensor x) { return x.unsqueeze(1).expand({-1, 5, -1, -1}); }, {x}, "expand");
  check([](Tensor x, Tensor y) { return x.expand_as(y); },
        {torch::randn({3, 1}), torch::randn({2, 3, 4})}, "expand_as");
  check([](Tensor x) { return x.split(2, 2); }, {x}, "split_int");
  check([](Tensor x) { return x.split_with_sizes({1, 3}, -1); }, {x}, "split_sizes");
  check([](Tensor x) { return x.chunk(2, 1); }, {x}, "chunk_uneven");
  check([](Tensor x) { return x.unbind(1); }, {x}, "unbind");
  check([](Tensor a, Tensor b) { return torch::stack({a, b}, -1); }, {x, x * 2}, "stack");
  check([](Tensor x) { return x.unsqueeze(-1).squeeze(-1).squeeze(); }, {torch::randn({1, 3, 1})},
        "squeeze_unsqueeze");
  check([](Tensor x) { return x.squeeze(1); }, {x}, "squeeze_noop");
  check([](Tensor x) { return x.flatten(1).reshape({-1}); }, {x}, "reshape_flat");
}

TEST_P(Ops, PaddingPixelShuffleEmbeddingCasts) {
  Tensor x = torch::randn({1, 8, 3, 4});
  check(
      [](Tensor x) {
        return F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).value(-1.5));
      },
      {x}, "pad_constant");
  check(
      [](Tensor x) {
        return F::pad(x, F::PadFuncOptions({1, 2, 2, 1}).mode(torch::kReflect));
      },
      {x}, "pad_reflect");
  check(
      [](Tensor x) {
        return F::pad(x, F::PadFuncOptions({3, 1, 0, 2}).mode(torch::kReplicate));
      },
      {x}, "pad_replicate");
  check([](Tensor x) { return F::pixel_shuffle(x, 2); }, {x}, "pixel_shuffle");
  check([](Tensor x) { return F::pixel_unshuffle(x, 1); }, {x}, "pixel_unshuffle");
  torch::nn::Embedding emb(torch::nn::EmbeddingOptions(10, 4).padding_idx(0).max_norm(1.0));
  emb->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  // max_norm renormalizes the weight in place while tracing: LibTorch's own outputs are the oracle.
  expect_export_matches(make_traceable(emb), {torch::tensor({{0L, 3L, 9L}, {3L, 3L, 1L}})}, opt,
                        "embedding_max_norm" + std::to_string(opset()));
  check(
      [](Tensor x) {
        return std::make_tuple(x.to(torch::kLong), x.to(torch::kBool), x.to(torch::kDouble));
      },
      {torch::tensor({-1.7f, 0.f, 2.9f})}, "casts");
  // Every ONNX tensor type that ATen has: float -> integer truncates toward zero.
  check(
      [](Tensor x) {
        return std::make_tuple(x.to(torch::kInt), x.to(torch::kShort), x.to(torch::kChar),
                               x.abs().to(torch::kByte), x.to(torch::kHalf),
                               x.to(torch::kInt).to(torch::kDouble),
                               x.to(torch::kBool).to(torch::kLong));
      },
      {torch::tensor({-100.7f, -1.5f, 0.f, 0.4f, 2.9f, 120.f})}, "casts_all_types");
  check([](Tensor x, Tensor y) { return x.type_as(y) + y; },
        {torch::tensor({1L, 2L}), torch::tensor({0.5f, 1.5f})}, "type_as");
  check([](Tensor s, Tensor a, Tensor b) { return torch::baddbmm(s, a, b, 0.5, 2); },
        {torch::randn({2, 3, 5}), torch::randn({2, 3, 4}), torch::randn({2, 4, 5})}, "baddbmm");
}

TEST_P(Ops, Normalizations) {
  Tensor x = torch::randn({2, 6, 4, 5});
  auto w = torch::rand({5}) + 0.5, b = torch::randn({5});
  check(
      [w, b](Tensor x) { return F::layer_norm(x, F::LayerNormFuncOptions({5}).weight(w).bias(b)); },
      {x}, "layer_norm");
  check(
      [](Tensor x) {
        return F::layer_norm(x, F::LayerNormFuncOptions({4, 5}).eps(1e-3));
      },
      {x}, "layer_norm_2d_noaffine");
  auto gw = torch::rand({6}), gb = torch::randn({6});
  check([gw,
         gb](Tensor x) { return F::group_norm(x, F::GroupNormFuncOptions(3).weight(gw).bias(gb)); },
        {x}, "group_norm");
  check(
      [gw, gb](Tensor x) {
        return F::instance_norm(x, F::InstanceNormFuncOptions().weight(gw).bias(gb));
      },
      {x}, "instance_norm");
}

TEST_P(Ops, Interpolation) {
  Tensor x = torch::randn({1, 2, 5, 7});
  check(
      [](Tensor x) {
        return F::interpolate(x, F::InterpolateFuncOptions()
                                     .scale_factor(std::vector<double>{2, 3})
                                     .mode(torch::kNearest));
      },
      {x}, "nearest_scale");
  check(
      [](Tensor x) {
        return F::interpolate(
            x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 9}).mode(torch::kNearest));
      },
      {x}, "nearest_size");
  for (bool align : {true, false}) {
    std::string a = align ? "_align" : "";
    check(
        [align](Tensor x) {
          return F::interpolate(x, F::InterpolateFuncOptions()
                                       .size(std::vector<int64_t>{9, 4})
                                       .mode(torch::kBilinear)
                                       .align_corners(align));
        },
        {x}, "bilinear_size" + a);
    check(
        [align](Tensor x) {
          return F::interpolate(x, F::InterpolateFuncOptions()
                                       .scale_factor(std::vector<double>{1.5, 2})
                                       .mode(torch::kBilinear)
                                       .align_corners(align));
        },
        {x}, "bilinear_scale" + a);
    check(
        [align](Tensor x) {
          return F::interpolate(x, F::InterpolateFuncOptions()
                                       .size(std::vector<int64_t>{10, 14})
                                       .mode(torch::kBicubic)
                                       .align_corners(align));
        },
        {x}, "bicubic" + a, Tolerance{1e-3, 1e-4});
  }
  // An output of length 1 samples the input's middle (half_pixel), not its first element
  // (pytorch_half_pixel): torch.onnx's test_interpolate_half_pixel.
  for (auto mode : {F::InterpolateFuncOptions::mode_t(torch::kBilinear),
                    F::InterpolateFuncOptions::mode_t(torch::kBicubic)})
    check(
        [mode](Tensor x) {
          return F::interpolate(
              x, F::InterpolateFuncOptions().size(std::vector<int64_t>{1, 7}).mode(mode));
        },
        {x},
        std::string("size_one_") +
            (c10::get_if<torch::enumtype::kBicubic>(&mode) ? "bicubic" : "bilinear"),
        Tolerance{1e-3, 1e-4});
}

}  // namespace
}  // namespace tonnx::test

namespace tonnx::test {
namespace {

TEST_P(Ops9, UnfoldAndIm2col) {
  Tensor x = torch::randn({2, 9, 3});
  check([](Tensor x) { return x.unfold(1, 3, 2); }, {x}, "unfold");
  check([](Tensor x) { return x.unfold(-1, 2, 1); }, {x}, "unfold_last");
  Tensor img = torch::randn({1, 2, 6, 7});
  check(
      [](Tensor x) {
        return F::unfold(x, F::UnfoldFuncOptions({2, 3}).stride(2).padding(1).dilation({1, 2}));
      },
      {img}, "im2col");
}

}  // namespace
}  // namespace tonnx::test

namespace tonnx::test {
namespace {

// Aten entry points that LibTorch's C++ functional API reaches only when called directly.
TEST_P(Ops, DirectAtenEntryPoints) {
  Tensor x = torch::randn({1, 2, 6, 7}), w = torch::randn({3, 2, 3, 3});
  check([w](Tensor x) { return torch::conv2d(x, w, {}, 1, 1); }, {x}, "aten_conv2d");
  check(
      [](Tensor x) {
        return torch::conv1d(x, torch::ones({2, 2, 3}));
      },
      {torch::randn({1, 2, 8})}, "aten_conv1d");
  check(
      [](Tensor x) {
        return torch::conv3d(x, torch::ones({1, 2, 2, 2, 2}) * 0.5);
      },
      {torch::randn({1, 2, 3, 4, 5})}, "aten_conv3d");
  check(
      [w](Tensor x) {
        return torch::convolution(x, w, {}, {2, 1}, {0, 1}, {1, 1}, false, {0, 0}, 1);
      },
      {x}, "aten_convolution");
  check(
      [](Tensor x) {
        return torch::conv_transpose1d(x, torch::ones({2, 3, 3}) * 0.3, {}, 2);
      },
      {torch::randn({1, 2, 5})}, "aten_conv_transpose1d");
  check(
      [](Tensor x) {
        return torch::conv_transpose2d(x, torch::ones({2, 1, 2, 3}) * 0.3, {}, 1, 1);
      },
      {x.narrow(1, 0, 2)}, "aten_conv_transpose2d");
  check(
      [](Tensor x) {
        return torch::conv_transpose3d(x, torch::ones({2, 1, 2, 2, 2}) * 0.3);
      },
      {torch::randn({1, 2, 3, 3, 3})}, "aten_conv_transpose3d");
  check(
      [](Tensor x) {
        return torch::constant_pad_nd(x, {1, 0, 2, 2}, 3.5);
      },
      {x}, "aten_constant_pad_nd");
  check(
      [](Tensor x) {
        return torch::reflection_pad2d(x, {1, 2, 2, 1}) + 0;
      },
      {x}, "aten_reflection_pad2d");
  check(
      [](Tensor x) {
        return torch::reflection_pad1d(x, {2, 1});
      },
      {torch::randn({1, 2, 5})}, "aten_reflection_pad1d");
  check(
      [](Tensor x) {
        return torch::reflection_pad3d(x, {1, 1, 1, 1, 1, 1});
      },
      {torch::randn({1, 1, 3, 3, 3})}, "aten_reflection_pad3d");
  check(
      [](Tensor x) {
        return torch::replication_pad1d(x, {2, 1});
      },
      {torch::randn({1, 2, 5})}, "aten_replication_pad1d");
  check(
      [](Tensor x) {
        return torch::replication_pad2d(x, {0, 3, 1, 0});
      },
      {x}, "aten_replication_pad2d");
  check(
      [](Tensor x) {
        return torch::replication_pad3d(x, {1, 0, 0, 1, 1, 1});
      },
      {torch::randn({1, 1, 3, 3, 3})}, "aten_replication_pad3d");
  check([](Tensor x) { return torch::_softmax(x, 1, false) + torch::_log_softmax(x, -1, false); },
        {x}, "aten_softmax_internal");
  check(
      [](Tensor x) {
        return torch::_reshape_alias(x.contiguous(), {2, 42}, {42, 1});
      },
      {x}, "aten_reshape_alias");
  check(
      [](Tensor x) {
        return torch::_to_copy(x, torch::kDouble) + torch::clip(x, -1, 1).to(torch::kDouble);
      },
      {x}, "aten_to_copy_clip");
  check([](Tensor x) { return torch::rsub(x, 2.0, 3) + x.clone() + x.detach(); }, {x},
        "aten_rsub_clone_detach");
  check([](Tensor x) { return torch::concat({x, x}, -1); }, {x}, "aten_concat");
  check([](Tensor x) { return torch::unsafe_split(x, 3, 3); }, {x}, "aten_unsafe_split");
  check([](Tensor x) { return torch::frobenius_norm(x, {1, 2}); }, {x}, "aten_frobenius_norm");
  check(
      [](Tensor x) {
        return torch::alpha_dropout(x, 0.2, false) + torch::feature_alpha_dropout(x, 0.3, false);
      },
      {x}, "aten_alpha_dropouts");
  check(
      [](Tensor x) {
        return x + torch::empty({7}).fill_(1) + torch::ones_like(x) + torch::full_like(x, 2.5);
      },
      {x}, "aten_like");
  check([](Tensor a, Tensor b) { return torch::logical_xor(a, b) | torch::bitwise_not(a); },
        {torch::tensor({true, false, true}), torch::tensor({true, true, false})},
        "aten_logical_xor_bitwise_not");
  check(
      [](Tensor x) {
        return torch::sinh(x) + torch::cosh(x) + torch::asinh(x) + torch::atanh(x * 0.5) +
               torch::acosh(x.abs() + 1);
      },
      {torch::rand({6}) - 0.5}, "aten_hyperbolic");
}

TEST_P(Ops, PoolsAndInterpolationIn1dAnd3d) {
  Tensor x1 = torch::randn({2, 3, 10}), x3 = torch::randn({1, 2, 4, 6, 6});
  check([](Tensor x) { return torch::max_pool1d(x, 3, 2, 1) + torch::avg_pool1d(x, 3, 2, 1); },
        {x1}, "pool1d");
  check([](Tensor x) { return torch::max_pool3d(x, 2) + torch::avg_pool3d(x, 2); }, {x3}, "pool3d");
  check([](Tensor x) { return torch::max_pool1d_with_indices(x, 2); }, {x1}, "pool1d_indices");
  check([](Tensor x) { return torch::max_pool3d_with_indices(x, 2); }, {x3}, "pool3d_indices");
  check(
      [](Tensor x) {
        return torch::adaptive_avg_pool1d(x, 5) + std::get<0>(torch::adaptive_max_pool1d(x, 5));
      },
      {x1}, "adaptive1d");
  check(
      [](Tensor x) {
        return torch::adaptive_avg_pool3d(x, {2, 3, 1}) +
               std::get<0>(torch::adaptive_max_pool3d(x, {2, 3, 1}));
      },
      {x3}, "adaptive3d");
  namespace F = torch::nn::functional;
  check(
      [](Tensor x) {
        return F::interpolate(
            x, F::InterpolateFuncOptions().size(std::vector<int64_t>{15}).mode(torch::kNearest));
      },
      {x1}, "nearest1d");
  check(
      [](Tensor x) {
        return F::interpolate(
            x, F::InterpolateFuncOptions().size(std::vector<int64_t>{17}).mode(torch::kLinear));
      },
      {x1}, "linear1d");
  check(
      [](Tensor x) {
        return F::interpolate(
            x,
            F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 7, 9}).mode(torch::kNearest));
      },
      {x3}, "nearest3d");
  check(
      [](Tensor x) {
        return F::interpolate(x, F::InterpolateFuncOptions()
                                     .size(std::vector<int64_t>{5, 7, 9})
                                     .mode(torch::kTrilinear)
                                     .align_corners(true));
      },
      {x3}, "trilinear3d");
}

}  // namespace
}  // namespace tonnx::test
