// oneDNN outside convolution (whose primitives are conv/onednn_conv.h's): the matmul of Gemm
// and MatMul, the test of oneDNN's pooling kernels, and the count of the per-node caches.
// LibTorch itself links Debian's libdnnl; tonnx calls it directly to keep what ATen rebuilds
// on every call: the primitive, and the weights reordered into its format.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tonnx::backend {

// MatMul and Gemm with a constant B (K x N, float) on oneDNN's matmul, B packed once (on
// the first call with 2 or more rows) into the format its AVX-512 kernels read (the format does not
// depend on A's rows: measured the same from 1 to 700). Debian's OpenBLAS 0.3.21 runs this CPU's
// GEMMs on AVX2 kernels: oneDNN's take half its time at every size measured (BERT's 128 x 768 x
// 3072: 6.6 -> 3.3 ms at one thread). Sums in another order than LibTorch: about 1e-6 relative.
class OneDnnMatmul {
 public:
  // Null where oneDNN does not apply: B not a non-empty float matrix, no fast kernel, or a
  // packed copy much larger than B (narrow B: columns are padded to blocks of 64).
  static std::shared_ptr<const OneDnnMatmul> make(const at::Tensor& b);
  // A (M x K, float) @ B + C (C undefined, or N floats: a row added to every row) -> M x N;
  // undefined where the call does not fit (dtype, shape, fewer than 2 rows), for ATen to run.
  at::Tensor run(const at::Tensor& a, const at::Tensor& c) const;
  int64_t rows() const;         // K
  int64_t cols() const;         // N
  size_t packed_bytes() const;  // of B in the format oneDNN's kernels read
  static uint64_t runs();
  ~OneDnnMatmul();

 private:
  struct Impl;
  OneDnnMatmul() = default;
  std::unique_ptr<Impl> impl_;
};

// Whether oneDNN's pooling on plain NCHW floats runs one of its jit kernels on this CPU (it
// does with AVX-512; with AVX2 alone it runs its reference kernel, `simple_nchw`, 2.5x slower
// than ATen's NCHW pooling and 6x slower than its channels-last one). Asked once.
bool onednn_nchw_pooling_is_jit();

// How many entries the oneDNN kernels' per-node caches (dnn::ShapeCache: input sizes, flags
// and thread count) have built, over all nodes (for tests).
uint64_t onednn_cache_builds();

}  // namespace tonnx::backend
