// tonnx's own Winograd F(2x2, 3x3) convolution on the nChw16c blocked layout, for the 3x3
// shapes where oneDNN 2.6 offers only its F(4x4, 3x3) kernel, whose rounding the tests do not
// accept (docs/backend.md, "Winograd"). The three stages, per block of output tiles: the
// input transform (tonnx, AVX-512), 16 matrix products of tiles x C by C x K (oneDNN's
// matmul, the transformed weights packed once), the output transform with the bias (tonnx).
// The transformed weights are computed in double and rounded once; the rounding is that of
// oneDNN's own F(2x2) kernel (measured: the same RMS error against a double convolution).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

namespace tonnx::backend {

class Winograd2x3 {
 public:
  // For weight W [K, C, 3, 3] (float, C and K multiples of 16) on X [n, C, h, w] with pads
  // pad_h and pad_w on both sides, stride 1, no dilation, one group. Null where it does not
  // apply: no AVX-512, another weight or shape, an empty output, or a primitive oneDNN
  // cannot make.
  // `same_weight`, where given, is one made from this weight for another input shape: its
  // transformed and packed weight is shared where the matmul reads the same format (it does
  // not depend on the rows), not computed and stored again.
  static std::unique_ptr<const Winograd2x3> make(const at::Tensor& weight, int64_t n, int64_t h,
                                                 int64_t w, int64_t pad_h, int64_t pad_w,
                                                 const Winograd2x3* same_weight = nullptr);
  // x: nChw16c [n][C/16][h][w][16]; bias: K floats or null; y: nChw16c [n][K/16][oh][ow][16].
  // Throws std::runtime_error where oneDNN fails.
  void run(const float* x, const float* bias, float* y) const;
  // Whether this CPU runs it (AVX-512 F).
  static bool available();
  static uint64_t runs();          // calls of run(), over all instances (for tests)
  static uint64_t weight_packs();  // weights transformed and packed, over all instances
  ~Winograd2x3();

 private:
  struct Impl;
  Winograd2x3() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tonnx::backend
