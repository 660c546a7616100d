// oneDNN primitives for the kernels where ATen 1.13 leaves speed behind (docs/backend.md).
// LibTorch itself links Debian's libdnnl; tonnx calls it directly to keep what ATen
// rebuilds on every call: the primitive, and the weights reordered into its format.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

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

}  // namespace tonnx::backend
