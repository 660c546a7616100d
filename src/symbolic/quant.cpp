// Fake quantization (quantization-aware training): fake_quantize_per_tensor_affine and
// fake_quantize_per_channel_affine as QuantizeLinear then DequantizeLinear. Any integer range
// within uint8 or int8 is exported (a Clip narrows it: 4-bit ranges such as (0, 15) too;
// torch.onnx 1.13 takes only (0, 255), (-128, 127) and (0, 127)).
// PyTorch multiplies by 1 / scale where ONNX divides by scale: a value that lies exactly on a
// rounding tie may land one step away (documented in docs/operators.md's notes).
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// The quantized integer type for [lo, hi], failing when neither uint8 nor int8 holds it.
at::ScalarType range_type(SymbolicContext& g, int64_t lo, int64_t hi) {
  if (lo > hi)
    g.fail("quant_min " + std::to_string(lo) + " is above quant_max " + std::to_string(hi));
  if (lo >= 0 && hi <= 255) return at::kByte;
  if (lo >= -128 && hi <= 127) return at::kChar;
  g.fail("the range (" + std::to_string(lo) + ", " + std::to_string(hi) +
         ") fits neither uint8 nor int8, the integer types of ONNX's QuantizeLinear");
}

// x quantized with (scale, zero_point) into [lo, hi] and dequantized; `axis` for per-channel.
Value* fake_quantize(SymbolicContext& g, Value* scale, Value* zp, int64_t lo, int64_t hi,
                     std::optional<int64_t> axis) {
  at::ScalarType qt = range_type(g, lo, hi);
  at::ScalarType dt = g.scalar_type(0);
  if (!at::isFloatingType(dt)) g.fail("fake quantization of a non-floating-point tensor");
  Value* x = g.cast(g.input(0), at::kFloat);  // QuantizeLinear takes float32
  scale = g.cast(scale, at::kFloat);
  zp = g.cast(zp, qt);
  std::vector<ir::Attr> attrs;
  if (axis) attrs.push_back({"axis", *axis});
  Value* q = g.op("QuantizeLinear", {x, scale, zp}, attrs);
  int64_t tmin = qt == at::kByte ? 0 : -128, tmax = qt == at::kByte ? 255 : 127;
  if (lo != tmin || hi != tmax) {
    if (g.opset() < 12) g.unsupported_below(12, "a quantization range narrower than the type's");
    q = g.op("Clip", {q, g.constant_scalar(static_cast<double>(lo), qt),
                      g.constant_scalar(static_cast<double>(hi), qt)});
  }
  return g.cast(g.op("DequantizeLinear", {q, scale, zp}, attrs), dt);
}

// fake_quantize_per_tensor_affine(self, scale, zero_point, quant_min, quant_max): scale and
// zero_point are numbers, or tensors of one element (the .tensor_qparams overload).
TONNX_SYMBOLIC("aten::fake_quantize_per_tensor_affine", 10, [](SymbolicContext& g) -> Outputs {
  Value* empty = g.constant(at::zeros({0}, at::kLong));
  Value* scale = g.op("Reshape", {g.cast(g.input(1), at::kFloat), empty});  // a scalar
  Value* zp = g.op("Reshape", {g.cast(g.input(2), at::kLong), empty});
  if (g.arg_type(1) == "float" && !(g.f(1) > 0))
    g.fail("scale must be > 0, got " + std::to_string(g.f(1)));
  return fake_quantize(g, scale, zp, g.i(3), g.i(4), std::nullopt);
});

// fake_quantize_per_channel_affine(self, scale [C], zero_point [C], axis, quant_min,
// quant_max): QuantizeLinear's axis is opset 13.
TONNX_SYMBOLIC("aten::fake_quantize_per_channel_affine", 13, [](SymbolicContext& g) -> Outputs {
  return fake_quantize(g, g.input(1), g.cast(g.input(2), at::kLong), g.i(4), g.i(5),
                       arg_dim(g, 0, g.i(3)));
});

}  // namespace
}  // namespace tonnx::sym
