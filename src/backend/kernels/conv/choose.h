// The one place that decides which path runs a convolution, and says why. Every Conv, FusedConv
// and ConvTranspose node is given a ConvChoice at prepare; the kernels in conv.cpp run it. A
// path that declines a call at run time (a dtype, shape or layout it does not take) hands the
// call to the next one, and ATen (aten_conv.h) takes every call. The paths, in the order tried:
//   oneDNN direct   (onednn_conv.h, OneDnnConv): PrepareOptions::onednn_conv; 2-D, float, W an
//                   initializer, pads that do not depend on the input; FusedConv's stages as
//                   post-ops. Rounds differently from LibTorch.
//   oneDNN blocked  (onednn_conv.h, OneDnnBlockedConv): where the plan keeps the node's input
//                   or output in the blocked layout, or a 3x3 convolution may take Winograd;
//                   the primitive ATen itself builds, so LibTorch's bits wherever ATen picks
//                   oneDNN; Winograd (oneDNN's or tonnx's own, winograd.h) where
//                   OneDnnBlockedConv::algorithm says so.
//   ATen prepacked  (aten_conv.h): W reordered once for ATen's own oneDNN call, where ATen
//                   would choose oneDNN for the call.
//   ATen            at::convolution.
// ConvTranspose: oneDNN's deconvolution (explicit pads, W an initializer), else ATen.
#pragma once

#include <memory>
#include <string>

#include "backend/kernels/conv/aten_conv.h"
#include "backend/kernels/conv/onednn_conv.h"

namespace tonnx::backend {

struct ConvChoice {
  enum class Path { onednn_direct, onednn_blocked, aten_prepacked, aten, onednn_deconv };
  Path path = Path::aten;
  // Why this path and not the one before it: "oneDNN direct is off (PrepareOptions::onednn_conv)".
  std::string why;
  std::shared_ptr<const OneDnnConv> direct;
  std::shared_ptr<const OneDnnBlockedConv> blocked;
  at::Tensor w_prepacked;
  std::shared_ptr<const OneDnnDeconv> deconv;
  // "oneDNN blocked: ...": the path's name and why, for the profile (NodeProfile::kernel).
  std::string describe() const;
};
const char* conv_path_name(ConvChoice::Path p);

// Conv and FusedConv (not transposed); `fused` carries FusedConv's stages for oneDNN direct.
ConvChoice choose_conv(const KernelSpec& s, const conv_attrs::ConvLike& c, int64_t group,
                       OneDnnConv::Fused fused);
// ConvTranspose, and FusedConv with transposed=1.
ConvChoice choose_conv_transpose(const KernelSpec& s, const ConvTransposeAttrs& a);

// Runs `blocked` where it takes Winograd, or where ATen would run this convolution on oneDNN
// (runs_on_onednn: the same primitive, so the same results); else undefined, for ATen.
at::Tensor run_blocked_conv(const OneDnnBlockedConv& blocked, const conv_attrs::ConvLike& c,
                            int64_t group, const at::Tensor& x, bool x_blocked, const at::Tensor& w,
                            const at::Tensor& b, bool want_blocked, bool exact);
// ConvTranspose on `deconv` where it takes the call, else on ATen.
at::Tensor conv_transpose(const ir::Node& n, const ConvTransposeAttrs& a,
                          const OneDnnDeconv* deconv, const at::Tensor& x, const at::Tensor& w,
                          const at::Tensor& b);

}  // namespace tonnx::backend
