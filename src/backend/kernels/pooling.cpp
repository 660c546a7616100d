// Pooling kernels: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.
#include "backend/kernels/blocked_layout.h"
#include "backend/kernels/conv_like.h"
#include "backend/kernels/kernel.h"
#include "backend/kernels/pool_vectorized.h"
#include "backend/kernels/onednn.h"

#include <cmath>
#include <limits>
#include <tuple>

namespace tonnx::backend {
namespace {

using namespace conv_attrs;  // NOLINT: ConvLike and its helpers

// 2-D float pooling without indices, where ATen 1.13's NCHW kernels are slow (max_pool2d
// always computes indices: 5-9 ms on ResNet's and Inception's first pools). Measured on an
// AVX-512 CPU: oneDNN's pooling on plain NCHW is 5-20x faster while the output plane is at
// most 56x56, and 2x slower than ATen beyond; ATen's channels-last max pooling is 3-5x
// faster than NCHW at every size. Without AVX-512 oneDNN has no jit kernel for NCHW, and its
// reference one is 2.5x slower than ATen's (ResNet-18's first MaxPool on an AVX2 EPYC: 25.6
// ms, against 10.0 NCHW and 4.2 channels-last), so it runs only where it is a jit kernel.
// Results are bit-identical, except that oneDNN's max skips NaNs where PyTorch propagates
// them (inputs whose sum is not finite avoid it) and its average differs with ceil_mode and
// count_include_pad (avoided).
enum class PoolPath { ATen, OneDnn, ChannelsLast };
PoolPath pool_path(const at::Tensor& x, size_t d, bool is_max, bool want_indices,
                   const std::vector<int64_t>& dilations, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                   bool ceil_mode) {
  if (want_indices || d != 2 || x.scalar_type() != at::kFloat || x.numel() == 0)
    return PoolPath::ATen;
  for (int64_t v : dilations)
    if (v != 1) return PoolPath::ATen;
  int64_t plane = 1;
  for (size_t i = 0; i < 2; ++i) {
    int64_t span = x.size(2 + i) + 2 * pads[i] - kernel[i];
    if (span < 0) return PoolPath::ATen;
    plane *= (ceil_mode ? (span + strides[i] - 1) : span) / strides[i] + 1;
  }
  constexpr int64_t kOneDnnMaxPlane = 56 * 56;
  if (plane <= kOneDnnMaxPlane && (is_max || !ceil_mode) && onednn_nchw_pooling_is_jit() &&
      (!is_max || std::isfinite(x.sum().item<float>())))
    return PoolPath::OneDnn;
  return is_max ? PoolPath::ChannelsLast : PoolPath::ATen;
}

// 2-D MaxPool (without indices) and AveragePool on a blocked X: tonnx's blocked kernel
// (pool.h), else ATen's channels-last kernels over its images of 16 channels
// (kernels/blocked_layout.h): the results of the calls the NCHW path makes, element for element
// (tests compare bits). Undefined where that path
// would not call ATen's 2-D pooling as is (asymmetric or large pads, dilations).
at::Tensor pool_on_blocked(const ir::Node& n, const ConvLike& c, const at::Tensor& x, bool is_max,
                           bool include_pad) {
  if (c.kernel.size() != 2 || x.scalar_type() != at::kFloat) return {};
  std::vector<int64_t> p = c.resolve_pads(n, {x.size(2), x.size(3)}, c.kernel);
  if (!symmetric(p) || 2 * p[0] > c.kernel[0] || 2 * p[1] > c.kernel[1]) return {};
  for (int64_t v : c.dilations)
    if (v != 1) return {};
  // (the NCHW AveragePool takes ATen's call only without a dilations attribute)
  if (!is_max && !c.dilations.empty()) return {};
  std::vector<int64_t> st = c.stride_vec(2), pad{p[0], p[1]};
  Pool2d win{c.kernel[0], c.kernel[1], st[0], st[1], p[0], p[1], c.ceil_mode};
  if (at::Tensor y =
          is_max ? max_pool2d_blocked_exact(x, win) : avg_pool2d_blocked_exact(x, win, include_pad);
      y.defined())
    return y;
  at::Tensor cl = blocked_as_channels_last(x);
  at::Tensor y = is_max ? at::max_pool2d(cl, c.kernel, st, pad, {1, 1}, c.ceil_mode)
                        : at::avg_pool2d(cl, c.kernel, st, pad, c.ceil_mode, include_pad);
  return channels_last_as_blocked(y, x.size(0));
}

// X as the pools' kernels read it (`in_b`: the plan allows it blocked): the pooled result,
// handed on, where X is blocked and pool_on_blocked runs; else undefined, with X made NCHW.
at::Tensor pool_blocked(const ir::Node& n, const ConvLike& c, at::Tensor& x, bool in_b, bool out_b,
                        bool is_max, bool include_pad) {
  if (!is_blocked(x, in_b)) return {};
  at::Tensor y = pool_on_blocked(n, c, x, is_max, include_pad);
  if (y.defined()) return hand_on(y, out_b);
  x = blocked_to_plain(x);
  return {};
}

TONNX_KERNEL("MaxPool", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvLike c = parse_pool(n);
  bool col_major = n.attr_i("storage_order", 0) != 0;
  bool want_indices = n.outputs().size() > 1;
  bool in_b = s.blocked_input(0), out_b = s.blocked_out;
  bool v22 = s.opset >= 22;  // windows that start in the end pad are dropped from 22
  return [c, &n, want_indices, col_major, in_b, out_b, v22](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    if (at::Tensor y = pool_blocked(n, c, x, in_b, out_b, true, false); y.defined()) return {y};
    if (x.dim() < 3)
      kernel_fail(n, "X must be [N, C, D1, ...], got rank " + std::to_string(x.dim()));
    size_t d = x.dim() - 2;
    if (c.kernel.size() != d)
      kernel_fail(n, "kernel_shape has " + std::to_string(c.kernel.size()) + " dims but X has " +
                         std::to_string(d) + " spatial dims");
    std::vector<int64_t> p = c.resolve_pads(n, x.sizes().slice(2), c.kernel);
    std::vector<int64_t> pad_arg(p.begin(), p.begin() + d);
    bool is_int = !at::isFloatingType(x.scalar_type());
    at::Tensor xin = is_int ? x.to(at::kDouble) : x;
    // ATen takes symmetric pads of at most half the kernel; pad other cases explicitly.
    bool big_pad = false;
    for (size_t i = 0; i < d; ++i) big_pad = big_pad || 2 * p[i] > c.kernel[i];
    // Indices with end pads no larger than the begin ones (tonnx's export of a ceil_mode pool
    // whose last window PyTorch drops): ATen's pool with the begin pads on both sides and
    // ceil_mode has the same first windows, and at least as many; the extra are cut off.
    std::vector<int64_t> keep;
    bool ceil = c.ceil_mode;
    if (want_indices && !big_pad && !symmetric(p)) {
      for (size_t i = 0; i < d && keep.size() == i; ++i) {
        int64_t reach = c.dilation_vec(d)[i] * (c.kernel[i] - 1) + 1, st = c.stride_vec(d)[i];
        int64_t span = x.size(2 + i) + p[i] + p[d + i] - reach;
        if (p[d + i] > p[i] || span < 0 || st <= 0) break;
        int64_t out = (c.ceil_mode ? (span + st - 1) / st : span / st) + 1;
        if (c.ceil_mode && (out - 1) * st >= x.size(2 + i) + p[i]) --out;
        keep.push_back(out);
      }
      if (keep.size() == d) {
        for (size_t i = 0; i < d; ++i) p[d + i] = p[i];
        ceil = true;
      } else {
        keep.clear();
      }
    }
    if (want_indices && (big_pad || !symmetric(p)))
      kernel_fail(n,
                  "indices with pads larger than half the kernel, or with end pads larger than "
                  "the begin pads, are not supported");
    if (!symmetric(p) || big_pad) {
      if (v22 && c.ceil_mode)
        kernel_fail(n,
                    "ceil_mode=1 with these pads at opset 22 (windows that start in the end "
                    "pad are dropped) is not implemented by tonnx's backend");
      xin = at::constant_pad_nd(xin, aten_pad_order(p), -std::numeric_limits<double>::infinity());
      std::fill(pad_arg.begin(), pad_arg.end(), 0);
    }
    at::Tensor y, idx;
    auto st = c.stride_vec(d), dil = c.dilation_vec(d);
    PoolPath path = pool_path(xin, d, true, want_indices, dil, c.kernel, st, pad_arg, c.ceil_mode);
    if (path != PoolPath::OneDnn && d == 2 && !want_indices && dil[0] == 1 && dil[1] == 1) {
      y = max_pool2d_exact(
          xin, {c.kernel[0], c.kernel[1], st[0], st[1], pad_arg[0], pad_arg[1], c.ceil_mode});
      if (y.defined()) return {is_int ? y.to(x.scalar_type()) : y};
    }
    switch (path) {
      case PoolPath::OneDnn:
        return {at::mkldnn_max_pool2d(xin.to_mkldnn(), c.kernel, st, pad_arg, dil, c.ceil_mode)
                    .to_dense()};
      case PoolPath::ChannelsLast:
        return {at::max_pool2d(xin.contiguous(at::MemoryFormat::ChannelsLast), c.kernel, st,
                               pad_arg, dil, c.ceil_mode)
                    .contiguous()};
      case PoolPath::ATen:
        break;
    }
    if (d == 1)
      std::tie(y, idx) = at::max_pool1d_with_indices(xin, c.kernel, st, pad_arg, dil, ceil);
    else if (d == 2)
      std::tie(y, idx) = at::max_pool2d_with_indices(xin, c.kernel, st, pad_arg, dil, ceil);
    else if (d == 3)
      std::tie(y, idx) = at::max_pool3d_with_indices(xin, c.kernel, st, pad_arg, dil, ceil);
    else
      kernel_fail(n, "only 1-3 spatial dims are supported");
    for (size_t i = 0; i < keep.size(); ++i) {
      if (y.size(2 + i) < keep[i]) kernel_fail(n, "internal: fewer windows than ONNX counts");
      y = y.narrow(2 + i, 0, keep[i]);
      idx = idx.narrow(2 + i, 0, keep[i]);
    }
    if (is_int) y = y.to(x.scalar_type());
    if (!want_indices) return {y};
    // ATen indexes within each (N, C) plane; ONNX over the whole tensor, row major.
    int64_t plane = 1;
    for (size_t i = 2; i < static_cast<size_t>(x.dim()); ++i) plane *= x.size(i);
    at::Tensor base =
        at::arange(x.size(0) * x.size(1), at::kLong).reshape({x.size(0), x.size(1)}) * plane;
    for (size_t i = 0; i < d; ++i) base = base.unsqueeze(-1);
    if (col_major) {
      // Row-major offset within the plane -> column-major (the last spatial dim slowest...
      // reversed): recompute from the coordinates.
      at::Tensor rem = idx.clone(), out = at::zeros_like(idx);
      std::vector<at::Tensor> coord(d);
      for (size_t i = d; i-- > 0;) {
        coord[i] = at::remainder(rem, x.size(2 + i));
        rem = at::div(rem, x.size(2 + i), "floor");
      }
      for (size_t i = d; i-- > 0;) out = out * x.size(2 + i) + coord[i];
      idx = out;
    }
    return {y, idx + base};
  };
});

// Average pooling as sum(x) / count, so that any padding and count_include_pad work.
TONNX_KERNEL("AveragePool", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvLike c = parse_pool(n);
  for (int64_t d : c.dilations)
    if (d != 1)
      kernel_fail(n,
                  "dilations other than 1 (AveragePool-19) are not implemented by tonnx's "
                  "backend");
  bool include_pad = n.attr_i("count_include_pad", 0) != 0;
  bool in_b = s.blocked_input(0), out_b = s.blocked_out;
  bool v22 = s.opset >= 22;  // windows that start in the end pad are dropped from 22
  return [c, &n, include_pad, in_b, out_b, v22](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    if (at::Tensor y = pool_blocked(n, c, x, in_b, out_b, false, include_pad); y.defined())
      return {y};
    if (x.dim() < 3)
      kernel_fail(n, "X must be [N, C, D1, ...], got rank " + std::to_string(x.dim()));
    size_t d = x.dim() - 2;
    std::vector<int64_t> p = c.resolve_pads(n, x.sizes().slice(2), c.kernel);
    auto st = c.stride_vec(d);
    if (symmetric(p) && c.dilations.empty()) {
      std::vector<int64_t> pad_arg(p.begin(), p.begin() + d);
      bool ok = true;
      for (size_t i = 0; i < d; ++i) ok = ok && pad_arg[i] * 2 <= c.kernel[i];
      if (ok) {
        if (d == 1) return {at::avg_pool1d(x, c.kernel, st, pad_arg, c.ceil_mode, include_pad)};
        if (d == 2) {
          std::vector<int64_t> one(2, 1);
          if (pool_path(x, d, false, false, one, c.kernel, st, pad_arg, c.ceil_mode) ==
              PoolPath::OneDnn)
            return {at::avg_pool2d(x.to_mkldnn(), c.kernel, st, pad_arg, c.ceil_mode, include_pad)
                        .to_dense()};
          at::Tensor y = avg_pool2d_exact(
              x, {c.kernel[0], c.kernel[1], st[0], st[1], pad_arg[0], pad_arg[1], c.ceil_mode},
              include_pad);
          if (y.defined()) return {y};
          return {at::avg_pool2d(x, c.kernel, st, pad_arg, c.ceil_mode, include_pad)};
        }
        if (d == 3) return {at::avg_pool3d(x, c.kernel, st, pad_arg, c.ceil_mode, include_pad)};
      }
    }
    if (v22 && c.ceil_mode)
      kernel_fail(n,
                  "ceil_mode=1 with these pads at opset 22 (windows that start in the end pad "
                  "are dropped) is not implemented by tonnx's backend");
    at::Tensor xp = at::constant_pad_nd(x, aten_pad_order(p), 0);
    at::Tensor ones = at::constant_pad_nd(at::ones_like(x.select(1, 0).unsqueeze(1)),
                                          aten_pad_order(p), include_pad ? 1 : 0);
    std::vector<int64_t> zero(d, 0);
    auto pool = [&](const at::Tensor& t) {
      if (d == 1) return at::avg_pool1d(t, c.kernel, st, zero, c.ceil_mode, true);
      if (d == 2) return at::avg_pool2d(t, c.kernel, st, zero, c.ceil_mode, true);
      return at::avg_pool3d(t, c.kernel, st, zero, c.ceil_mode, true);
    };
    return {pool(xp) / pool(ones)};
  };
});

TONNX_KERNEL("GlobalAveragePool", 1, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    std::vector<int64_t> dims;
    for (int64_t i = 2; i < x.dim(); ++i) dims.push_back(i);
    return {x.mean(dims, true)};
  };
});
TONNX_KERNEL("GlobalMaxPool", 1, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    for (int64_t i = 2; i < x.dim(); ++i) x = std::get<0>(x.max(i, true));
    return {x};
  };
});

// ConvTranspose: computed without padding, then cropped by pads (or to output_shape).
}  // namespace
}  // namespace tonnx::backend
