// 2-D float max and average pooling on NCHW as ATen 1.13 computes them, vectorized.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace tonnx::backend {

// A 2-D pooling window: kernel, strides and symmetric pads (at most half the kernel, as ATen
// requires), no dilation.
struct Pool2d {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  bool ceil_mode = false;
};

// ATen's kernels scan each window row by row, one element at a time: max keeps the first of
// equal values and takes any NaN (the last one), average sums in float in that order and
// divides by the window's count (with or without the padding). These compute the same, bit
// for bit (but for which NaN a sum of two NaNs keeps: a compiler may order an add's operands
// either way), sixteen output columns at a time (AVX-512), in parallel over the planes: ATen's
// NCHW max pooling also computes indices, and tonnx's earlier paths converted layouts
// (Inception v3's first MaxPool, 147x147x64: 3.3 ms at two threads).
// They return an undefined tensor where they do not apply: not float, not 4-D contiguous
// NCHW, an empty input, pads over half the kernel, an output size under 1, no AVX-512, or a
// CPU on which the probe at first use found ATen's results different. The caller then runs
// its other path.
at::Tensor max_pool2d_exact(const at::Tensor& x, const Pool2d& p);
at::Tensor avg_pool2d_exact(const at::Tensor& x, const Pool2d& p, bool count_include_pad);

// Calls of either that computed the result, over all Reps: for tests.
uint64_t exact_pool_runs();

// The same on a blocked X ([N, C/B, H, W, B], B 16 or 8, contiguous: kernels/blocked_layout.h),
// returning the blocked result: B channels per vector (AVX-512 for 16, AVX2 for 8, each
// behind its own probe), so a window is kh x kw plain loads and no padding is read. Undefined
// where the NCHW kernels are (but for their limits on widths, which come from gathers this one
// does not need, and AVX-512 for B = 8), and on a probe's difference from ATen.
at::Tensor max_pool2d_blocked_exact(const at::Tensor& xb, const Pool2d& p);
at::Tensor avg_pool2d_blocked_exact(const at::Tensor& xb, const Pool2d& p, bool count_include_pad);
uint64_t blocked_pool_runs();
// Whether these kernels run on this CPU (its ISA as cpu.h caps it, and the probe against ATen
// at first use): width 0 for the NCHW kernels, 8 or 16 for the blocked ones.
bool pool_kernel_runs(int64_t width);

}  // namespace tonnx::backend
