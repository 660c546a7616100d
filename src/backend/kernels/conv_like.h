// The attributes Conv, ConvTranspose and the pools share (conv/ and pooling.cpp).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "backend/kernels/kernel.h"

namespace tonnx::backend::conv_attrs {
struct ConvLike {
  AutoPad auto_pad = AutoPad::NotSet;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  bool ceil_mode = false;

  // Fills defaults for `spatial` dims and resolves SAME_* padding for this input.
  std::vector<int64_t> resolve_pads(const ir::Node& n, at::IntArrayRef in_spatial,
                                    const std::vector<int64_t>& k) const {
    size_t d = in_spatial.size();
    check_lengths(d, k.size());
    std::vector<int64_t> p = pads.empty() ? std::vector<int64_t>(2 * d, 0) : pads;
    if (p.size() != 2 * d)
      kernel_fail(n, "pads has " + std::to_string(p.size()) + " values; expected " +
                         std::to_string(2 * d) + " for " + std::to_string(d) + " spatial dims");
    if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
      for (size_t i = 0; i < d; ++i) {
        int64_t s = stride(i), dil = dilation(i);
        int64_t out = (in_spatial[i] + s - 1) / s;
        int64_t total = std::max<int64_t>(0, (out - 1) * s + (k[i] - 1) * dil + 1 - in_spatial[i]);
        int64_t small = total / 2, big = total - small;
        p[i] = auto_pad == AutoPad::SameUpper ? small : big;
        p[i + d] = auto_pad == AutoPad::SameUpper ? big : small;
      }
    } else if (auto_pad == AutoPad::Valid) {
      std::fill(p.begin(), p.end(), 0);
    }
    return p;
  }
  // The pads attribute as begins and ends for `d` spatial dims (empty: none given); false
  // where it has another length (the kernel's own path reports that).
  bool split_pads(size_t d, std::vector<int64_t>& begins, std::vector<int64_t>& ends) const {
    if (pads.empty()) return true;
    if (pads.size() != 2 * d) return false;
    begins.assign(pads.begin(), pads.begin() + d);
    ends.assign(pads.begin() + d, pads.end());
    return true;
  }
  // strides and dilations (when given) must have one value per spatial dim, as the kernel.
  void check_lengths(size_t d, size_t kernel_len) const {
    auto fits = [d](const std::vector<int64_t>& v) { return v.empty() || v.size() == d; };
    if (!fits(strides) || !fits(dilations) || kernel_len != d)
      throw std::invalid_argument(
          "kernel_shape, strides and dilations must have one value per spatial dim (" +
          std::to_string(d) + "); they have " + std::to_string(kernel_len) + ", " +
          std::to_string(strides.size()) + " and " + std::to_string(dilations.size()));
  }
  int64_t stride(size_t i) const { return strides.empty() ? 1 : strides.at(i); }
  int64_t dilation(size_t i) const { return dilations.empty() ? 1 : dilations.at(i); }
  std::vector<int64_t> stride_vec(size_t d) const {
    check_lengths(d, d);
    return strides.empty() ? std::vector<int64_t>(d, 1) : strides;
  }
  std::vector<int64_t> dilation_vec(size_t d) const {
    check_lengths(d, d);
    return dilations.empty() ? std::vector<int64_t>(d, 1) : dilations;
  }
};

inline ConvLike parse_conv_like(const ir::Node& n) {
  ConvLike c;
  c.auto_pad = parse_auto_pad(n);
  c.kernel = n.attr_ints("kernel_shape");
  c.strides = n.attr_ints("strides");
  c.dilations = n.attr_ints("dilations");
  c.pads = n.attr_ints("pads");
  c.ceil_mode = n.attr_i("ceil_mode", 0) != 0;
  // Values first (a stride of 0 divides by zero in the output size); lengths against the
  // input's rank at run time (check_lengths).
  // Up to 2^31, so that no output-size formula overflows.
  constexpr int64_t kMax = int64_t{1} << 31;
  for (const auto* v : {&c.kernel, &c.strides, &c.dilations})
    for (int64_t x : *v)
      if (x < 1 || x > kMax)
        kernel_fail(n,
                    "kernel_shape, strides and dilations must be 1 to 2^31, got " + c10::str(*v));
  for (int64_t x : c.pads)
    if (x < 0 || x > kMax) kernel_fail(n, "pads must be 0 to 2^31, got " + c10::str(c.pads));
  return c;
}

// Pools also require every explicit pad to be smaller than the kernel, as ONNX Runtime does:
// a window wholly in padding has no input, and kernel 65536 with pads 65536 on a 5-wide input
// (found by fuzz_run) was minutes of work over padding.
inline ConvLike parse_pool(const ir::Node& n) {
  ConvLike c = parse_conv_like(n);
  size_t d = c.kernel.size();
  if (c.auto_pad == AutoPad::NotSet && c.pads.size() == 2 * d)
    for (size_t i = 0; i < 2 * d; ++i)
      if (c.pads[i] >= c.kernel[i % d])
        kernel_fail(n, "pads " + c10::str(c10::IntArrayRef(c.pads)) +
                           " must each be smaller than kernel_shape " +
                           c10::str(c10::IntArrayRef(c.kernel)));
  return c;
}

inline bool symmetric(const std::vector<int64_t>& p) {
  size_t d = p.size() / 2;
  for (size_t i = 0; i < d; ++i)
    if (p[i] != p[i + d]) return false;
  return true;
}

// at::constant_pad_nd takes pads last-dim first as (begin, end) pairs.
inline std::vector<int64_t> aten_pad_order(const std::vector<int64_t>& p) {
  size_t d = p.size() / 2;
  std::vector<int64_t> out;
  for (size_t i = d; i-- > 0;) {
    out.push_back(p[i]);
    out.push_back(p[i + d]);
  }
  return out;
}

}  // namespace tonnx::backend::conv_attrs
