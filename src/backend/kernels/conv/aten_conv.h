// Convolutions on ATen, the path every other one falls back to: Conv as at::convolution, or as
// ATen's own oneDNN call with the weight reordered once at prepare (bit for bit the same);
// ConvTranspose as at::convolution with ONNX's pads, auto_pad and output_shape.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "backend/kernels/conv_like.h"

namespace tonnx::backend {

// Whether tonnx runs this convolution on oneDNN where ATen would choose between oneDNN and
// another kernel (the rule and its measurements are in aten_conv.cpp); `exact` keeps
// LibTorch's choice.
bool runs_on_onednn(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                    const std::vector<int64_t>& st, const std::vector<int64_t>& pad,
                    const std::vector<int64_t>& dil, int64_t group, bool exact);

// The initializer W of a 2-D float Conv reordered into oneDNN's format for ATen's oneDNN call
// (at::mkldnn_reorder_conv2d_weight), or undefined where that does not apply.
at::Tensor prepack_conv_weight(const KernelSpec& s, const conv_attrs::ConvLike& c, int64_t group);

// Conv of X, W and B (B may be undefined) on ATen; w_mkldnn (may be undefined) is W prepacked.
at::Tensor run_conv(const ir::Node& n, const conv_attrs::ConvLike& c, int64_t group, at::Tensor x,
                    const at::Tensor& w, const at::Tensor& b, const at::Tensor& w_mkldnn,
                    bool exact);

struct ConvTransposeAttrs {
  conv_attrs::ConvLike c;
  int64_t group;
  std::vector<int64_t> output_padding, output_shape;
};
ConvTransposeAttrs parse_conv_transpose(const ir::Node& n);
at::Tensor run_conv_transpose(const ir::Node& n, const ConvTransposeAttrs& a, const at::Tensor& x,
                              const at::Tensor& w, const at::Tensor& b);

}  // namespace tonnx::backend
