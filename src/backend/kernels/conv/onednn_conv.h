// The convolutions tonnx runs on oneDNN primitives directly (docs/backend.md): LibTorch itself
// links Debian's libdnnl; tonnx calls it to keep what ATen rebuilds on every call, the
// primitive and the weights reordered into its format. Which of them runs for a node is
// decided in choose.h.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "passes/fuse.h"

namespace tonnx::backend {

// ConvTranspose (1-D to 3-D, group 1, float) on oneDNN's deconvolution, with the weights
// reordered once per input shape. ATen 1.13 has no oneDNN deconvolution: it runs one GEMM
// per image and col2im, 2-3x slower on DCGAN's layers (docs/backend.md). With 16 or more
// channels on both sides, activations go through oneDNN's blocked layout (reordered in and
// out on each call; results differ from ATen's by rounding, ~1e-6 relative); with fewer,
// oneDNN's GEMM-based primitive on the plain layout, as fast and bit-identical there.
class OneDnnDeconv {
 public:
  struct Params {
    std::vector<int64_t> strides, dilations;  // per spatial dim, ONNX's (1 = no dilation)
    std::vector<int64_t> pads_begin, pads_end, output_padding;
  };
  // Null where oneDNN does not apply: a weight that is not a float tensor of rank 3 to 5,
  // group != 1, or parameters it cannot express (an end pad smaller than output_padding).
  static std::shared_ptr<const OneDnnDeconv> make(const at::Tensor& weight, int64_t group,
                                                  Params p);
  // X (and bias B, if defined) -> Y; undefined where this call's input does not fit (wrong
  // rank, channels or dtype, an empty tensor, an output size <= 0), for ATen to run it.
  at::Tensor run(const at::Tensor& x, const at::Tensor& b) const;
  // How many calls of run(), over all instances, oneDNN has computed (for tests).
  static uint64_t runs();
  ~OneDnnDeconv();

 private:
  struct Impl;
  OneDnnDeconv() = default;
  std::unique_ptr<Impl> impl_;
};

// Conv (2-D, float, weight an initializer) on oneDNN with the weights reordered once per
// input shape and the output in channels-last (NHWC) layout, which oneDNN's AVX-512
// convolutions run fastest and every ATen kernel reads as the same NCHW tensor; a chain of
// convolutions then hands NHWC from one to the next with no conversion. ATen 1.13 reorders
// the weights on every call for its oneDNN convolutions and runs 1x1 ones through im2col.
// The fused stages of FusedConv run inside the primitive as post-ops where oneDNN computes
// them with the same arithmetic as ATen: BatchNormalization with constant statistics
// (x * alpha + beta, alpha and beta computed as ATen does), the Add of a same-shape Z (sum)
// and LeakyRelu; the rest runs after, on ATen (Relu too: oneDNN's turns NaN into 0).
class OneDnnConv {
 public:
  struct Params {
    std::vector<int64_t> strides, dilations, pads_begin, pads_end;
    int64_t group = 1;
  };
  // The stages after the convolution, in ONNX's order: BN, then Add(Z), then activation.
  struct Fused {
    bool batchnorm = false;        // the node has a BN ...
    at::Tensor bn_alpha, bn_beta;  // ... and these are defined when its inputs are constants
    bool add = false;              // the node has a Z
    passes::FusedActivation activation = passes::FusedActivation::None;
    float alpha = 0.01f;  // LeakyRelu's slope
  };
  // Which stages a call ran; the caller runs the rest on ATen, in order.
  struct Done {
    bool batchnorm = false, add = false, activation = false;
  };
  static std::shared_ptr<const OneDnnConv> make(const at::Tensor& weight, Params p, Fused f);
  // X, bias B and Z (B and Z may be undefined) -> Y; undefined where X does not fit (then
  // nothing ran). Post-ops run up to the first stage oneDNN cannot compute as ATen does:
  // BN with run-time statistics, a Z of another shape (broadcast), Relu, Sigmoid and Tanh.
  at::Tensor run(const at::Tensor& x, const at::Tensor& b, const at::Tensor& z, Done& done) const;
  static uint64_t runs();
  ~OneDnnConv();

 private:
  struct Impl;
  OneDnnConv() = default;
  std::unique_ptr<Impl> impl_;
};

// Conv (2-D, float, weight an initializer, the same pads on both sides) on the primitive that
// ATen's own at::mkldnn_convolution builds (the same descriptors: formats left to oneDNN,
// forward propagation), with the weight reordered once, and activations that may stay in
// oneDNN's blocked layout from one node to the next instead of being reordered to NCHW and
// back around every convolution: nChw16c with AVX-512, nChw8c with AVX2 alone, whichever the
// primitive writes. A blocked activation travels as a float tensor [N, C/B, H, W, B] (C a
// multiple of the width B; kernels/blocked_layout.h). The results are those of
// at::mkldnn_convolution bit for bit (tests assert it), so LibTorch's own wherever ATen picks
// oneDNN: the caller asks ATen's backend choice first.
class OneDnnBlockedConv {
 public:
  struct Params {
    std::vector<int64_t> strides, dilations, pads;  // per spatial dim; pads on both sides
    int64_t group = 1;
    // Where the shape qualifies (winograd()), oneDNN's Winograd algorithm instead of the
    // direct one: fewer products, rounds differently from LibTorch (docs/backend.md).
    bool winograd = false;
  };
  // Null where it does not apply: a weight that is not a 4-D float tensor, a bad parameter.
  static std::shared_ptr<const OneDnnBlockedConv> make(const at::Tensor& weight, Params p);
  // X ([N, C, H, W] contiguous, or [N, C/B, H, W, B] when x_blocked, B 8 or 16) and bias B
  // (may be undefined) -> Y: blocked where want_blocked and the primitive writes nChw16c or
  // nChw8c (the output channels a multiple of that width), else [N, O, OH, OW]. Undefined
  // where the call does not fit (dtype, channels, an empty tensor, an output size <= 0), for
  // ATen to run it.
  at::Tensor run(const at::Tensor& x, bool x_blocked, const at::Tensor& b, bool want_blocked) const;
  // Whether run() takes the Winograd algorithm for X of these (logical, NCHW) sizes, with a
  // bias or not: allowed by Params, a 3x3 kernel, stride 1, no dilation, one group, at least
  // 64 input and 16 output channels, enough work that the transforms pay, and oneDNN offers
  // its F(2x2) kernel for the shape (the primitive is built here on first asking). The caller
  // skips ATen's backend choice for these only: where oneDNN declines, the direct algorithm
  // runs where ATen would run oneDNN, as for any other shape.
  bool winograd(at::IntArrayRef x, bool bias) const;
  // Which algorithm run() takes for X of these sizes: the one place that decides, for the
  // tests to ask. oneDNN offers its Winograd F(2x2) kernel on some AVX-512 CPUs and shapes and
  // not on others (its heuristics weigh cache sizes and threads: an Intel Xeon offers it for
  // 128 -> 128 on 28 x 28, Zen 4 does not); tonnx's own F(2x2) (winograd.h) runs where oneDNN
  // declines and the shape suits it. Only tonnx's gives the same bits at any thread count.
  enum class Algorithm { direct, onednn_winograd, own_winograd };
  Algorithm algorithm(at::IntArrayRef x, bool bias) const;
  static const char* name(Algorithm);
  // The part of that test that does not depend on X (Params::winograd aside).
  static bool winograd_weight(const at::Tensor& weight, const Params& p);
  static uint64_t runs();
  static uint64_t winograd_runs();  // convolutions run with a Winograd algorithm (either)
  ~OneDnnBlockedConv();

 private:
  struct Impl;
  OneDnnBlockedConv() = default;
  std::unique_ptr<Impl> impl_;
};

// Calls of ATen's oneDNN convolution with a weight reordered at prepare (conv/aten_conv.cpp),
// over all Reps: for tests.
uint64_t prepacked_conv_runs();

}  // namespace tonnx::backend
