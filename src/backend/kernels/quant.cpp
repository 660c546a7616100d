// Quantization kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv. Arithmetic is done in float/int32
// like ONNX's reference: round half to even, saturate to the output type.
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

// Per-tensor (scalar) or per-axis (1-D) scale/zero point, shaped to broadcast against x.
at::Tensor along(const at::Tensor& p, int64_t axis, int64_t rank) {
  if (p.dim() == 0 || p.numel() == 1) return p.reshape({});
  if (axis < 0 || axis >= rank)
    throw std::invalid_argument("a per-axis scale or zero point of " + std::to_string(p.numel()) +
                                " values needs axis " + std::to_string(axis) +
                                " in a tensor of rank " + std::to_string(rank));
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = p.numel();
  return p.reshape(shape);
}

at::Tensor saturate(const at::Tensor& v, at::ScalarType st) {
  double lo = st == at::kByte ? 0 : -128, hi = st == at::kByte ? 255 : 127;
  if (st == at::kInt)
    lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  return at::clamp(v, lo, hi).to(st);
}

// Opset 21's blocked quantization (block_size) is refused by name; its output_dtype (the
// type without a zero point) is taken.
void refuse_blocks(const ir::Node& n) {
  if (n.attr_i("block_size", 0) != 0)
    kernel_fail(n, "block_size " + std::to_string(n.attr_i("block_size", 0)) +
                       " (blocked quantization, opset 21) is not implemented by tonnx's backend");
}

TONNX_KERNEL("QuantizeLinear", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 1);
  refuse_blocks(n);
  at::ScalarType out_type = at::kByte;
  if (int64_t t = n.attr_i("output_dtype", 0)) {
    out_type = storage_type(static_cast<ir::DType>(t));
    if (out_type != at::kByte && out_type != at::kChar)
      kernel_fail(n, "output_dtype " + std::to_string(t) +
                         " is not implemented by tonnx's backend; uint8 and int8 are");
  }
  return [&n, axis, out_type](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    // The axis matters only for per-axis (1-D) scales.
    int64_t a = in.at(1).numel() > 1 ? norm_axis(n, axis, x.dim()) : 0;
    at::Tensor scale = along(in.at(1), a, x.dim()).to(at::kFloat);
    at::Tensor zp = in.size() > 2 && in[2].defined() ? in[2] : at::zeros({}, out_type);
    if (zp.scalar_type() != at::kByte && zp.scalar_type() != at::kChar)
      kernel_fail(n, "a zero point of " + std::string(c10::toString(zp.scalar_type())) +
                         " storage (int16, uint16: QuantizeLinear-21) is not implemented by "
                         "tonnx's backend; uint8 and int8 are");
    at::ScalarType st = zp.scalar_type();
    at::Tensor q = at::round(x.to(at::kFloat) / scale) + along(zp, a, x.dim()).to(at::kFloat);
    return {saturate(q, st)};
  };
});

TONNX_KERNEL("DequantizeLinear", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 1);
  refuse_blocks(n);
  return [&n, axis](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    // The axis matters only for per-axis (1-D) scales.
    int64_t a = in.at(1).numel() > 1 ? norm_axis(n, axis, x.dim()) : 0;
    at::Tensor scale = along(in.at(1), a, x.dim());
    at::Tensor zp = in.size() > 2 && in[2].defined() ? along(in[2], a, x.dim()).to(at::kFloat)
                                                     : at::zeros({}, at::kFloat);
    return {((x.to(at::kFloat) - zp) * scale).to(scale.scalar_type())};
  };
});

TONNX_KERNEL("DynamicQuantizeLinear", 11, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0).to(at::kFloat);
    float lo = std::min(0.0f, x.min().item<float>()), hi = std::max(0.0f, x.max().item<float>());
    float scale = (hi - lo) / 255.0f;
    if (scale == 0) scale = 1;  // all zeros
    float zp = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
    at::Tensor q = saturate(at::round(x / scale) + zp, at::kByte);
    return {q, at::scalar_tensor(scale, at::kFloat),
            at::scalar_tensor(zp, at::kFloat).to(at::kByte)};
  };
});

TONNX_KERNEL("MatMulInteger", 10, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    const at::Tensor &a = in.at(0), &b = in.at(1);
    at::Tensor azp = in.size() > 2 ? in[2] : at::Tensor(),
               bzp = in.size() > 3 ? in[3] : at::Tensor();
    // A's zero point is per row (axis -2... per ONNX: per M), B's per column.
    at::Tensor av = a.to(at::kLong), bv = b.to(at::kLong);
    if (azp.defined()) av = av - (azp.dim() ? azp.to(at::kLong).unsqueeze(-1) : azp.to(at::kLong));
    if (bzp.defined()) bv = bv - bzp.to(at::kLong);
    return {at::matmul(av.to(at::kDouble), bv.to(at::kDouble)).to(at::kInt)};
  };
});

at::Tensor conv_nd(const at::Tensor& x, const at::Tensor& w, const ir::Node& n) {
  int64_t d = x.dim() - 2;
  std::vector<int64_t> st = n.attr_ints("strides"), dil = n.attr_ints("dilations"),
                       pads = n.attr_ints("pads");
  if (st.empty()) st.assign(d, 1);
  if (dil.empty()) dil.assign(d, 1);
  if (pads.empty()) pads.assign(2 * d, 0);
  if (d < 1 || w.dim() != x.dim() || st.size() != static_cast<size_t>(d) ||
      dil.size() != static_cast<size_t>(d) || pads.size() != static_cast<size_t>(2 * d))
    kernel_fail(n, "X (rank " + std::to_string(x.dim()) + ") and W (rank " +
                       std::to_string(w.dim()) + ") must have the same rank >= 3, with " +
                       std::to_string(d) + " strides and dilations and " + std::to_string(2 * d) +
                       " pads");
  for (size_t i = 0; i < st.size(); ++i)
    if (st[i] < 1 || dil[i] < 1) kernel_fail(n, "strides and dilations must be >= 1");
  std::string ap = n.attr_s("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (int64_t i = 0; i < d; ++i) {
      int64_t in = x.size(2 + i), k = w.size(2 + i);
      int64_t out = (in + st[i] - 1) / st[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * st[i] + (k - 1) * dil[i] + 1 - in);
      pads[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + d] = total - pads[i];
    }
  }
  std::vector<int64_t> p;
  for (int64_t i = d; i-- > 0;) {
    p.push_back(pads[i]);
    p.push_back(pads[i + d]);
  }
  at::Tensor xp = at::constant_pad_nd(x, p, 0);
  return at::convolution(xp, w, {}, st, std::vector<int64_t>(d, 0), dil, false,
                         std::vector<int64_t>(d, 0), conv_group(n));
}

TONNX_KERNEL("ConvInteger", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0).to(at::kDouble), w = in.at(1).to(at::kDouble);
    if (in.size() > 2 && in[2].defined()) x = x - in[2].to(at::kDouble);
    if (in.size() > 3 && in[3].defined()) w = w - along(in[3], 0, w.dim()).to(at::kDouble);
    return {at::round(conv_nd(x, w, n)).to(at::kInt)};
  };
});

TONNX_KERNEL("QLinearMatMul", 10, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    at::Tensor a = (in.at(0).to(at::kDouble) - in.at(2).to(at::kDouble)) * in.at(1).to(at::kDouble);
    at::Tensor b = (in.at(3).to(at::kDouble) - in.at(5).to(at::kDouble)) * in.at(4).to(at::kDouble);
    at::Tensor y = at::matmul(a, b) / in.at(6).to(at::kDouble);
    return {saturate(at::round(y) + in.at(7).to(at::kDouble), in[7].scalar_type())};
  };
});

TONNX_KERNEL("QLinearConv", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0).to(at::kDouble) - in.at(2).to(at::kDouble);
    at::Tensor w = in.at(3).to(at::kDouble) - along(in.at(5), 0, in[3].dim()).to(at::kDouble);
    at::Tensor acc = conv_nd(x, w, n);
    if (in.size() > 8 && in[8].defined()) {
      std::vector<int64_t> sh(acc.dim(), 1);
      sh[1] = -1;
      acc = acc + in[8].to(at::kDouble).reshape(sh);
    }
    at::Tensor scale = in.at(1).to(at::kDouble) * along(in.at(4), 1, acc.dim()).to(at::kDouble) /
                       in.at(6).to(at::kDouble);
    at::Tensor y = at::round(acc * scale) + in.at(7).to(at::kDouble);
    return {saturate(y, in[7].scalar_type())};
  };
});

}  // namespace
}  // namespace tonnx::backend
