// Inference BatchNormalization as ATen 1.13 computes it, in one pass with the activation.
#pragma once

#include <ATen/ATen.h>

#include "backend/kernels/kernel.h"

namespace tonnx::backend {

// ATen's per-channel terms: y = x * alpha + beta, with (in float) invstd = 1 / sqrt(var +
// eps), alpha = invstd * scale, beta = bias - mean * alpha (one rounding: a fused
// multiply-add, as ATen's compiled kernel does).
struct BatchNormTerms {
  at::Tensor alpha, beta;
  bool defined() const { return alpha.defined(); }
};

// From float 1-D scale, bias, mean and var of one length; undefined terms otherwise.
BatchNormTerms batchnorm_terms(const at::Tensor& scale, const at::Tensor& bias,
                               const at::Tensor& mean, const at::Tensor& var, double eps);

// The terms of a node whose inputs first..first+3 (scale, bias, mean, var) are initializers;
// undefined when they are not all initializers of the expected kind.
inline BatchNormTerms constant_batchnorm_terms(const KernelSpec& s, size_t first, double eps) {
  if (s.constant_inputs.size() < first + 4) return {};
  const std::vector<at::Tensor>& c = s.constant_inputs;
  return batchnorm_terms(c[first], c[first + 1], c[first + 2], c[first + 3], eps);
}

// x * alpha + beta per channel, then Relu when `relu` (as at::relu_: NaN and -0 kept), in one
// parallel pass, bit for bit what at::batch_norm (then at::relu_) returns. Writes into `out`
// when given (it may be x itself), else into a new tensor. x: float [N, C, ...] contiguous, or
// 4-D channels-last. Returns an undefined tensor when it cannot: another dtype or layout, C
// not the terms' length, no AVX2 and FMA, or a CPU on which the probe at first use found
// ATen's results different (then the caller runs ATen).
at::Tensor batchnorm_inference(const at::Tensor& x, const BatchNormTerms& t, bool relu,
                               at::Tensor out = at::Tensor());

// The same on a blocked x [N, C/B, H, W, B] (kernels/blocked_layout.h), element for element what
// batchnorm_inference computes on the NCHW tensor; undefined where it cannot. With z (a
// residual of x's sizes, blocked alike), z is added before the Relu: in the same pass, what
// at::batch_norm, then add_(z), then relu_ compute (a FusedConv's BatchNormalization, Z and
// Relu: one pass over its output instead of three).
at::Tensor batchnorm_blocked(const at::Tensor& x, const BatchNormTerms& t, bool relu,
                             at::Tensor out = at::Tensor(), const at::Tensor& z = at::Tensor());

// Concat over channels, then the same, in one pass: no concatenated tensor is written and
// read back (DenseNet's Concat -> BatchNormalization -> Relu before each dense layer). `xs`:
// all blocked (`blocked`: [N, Ci/16, H, W, 16]) or all NCHW contiguous [N, Ci, ...], float,
// equal but for Ci; the result in that layout. Element for element what the Concat and then
// batchnorm_inference (or batchnorm_blocked) compute; undefined where it cannot.
at::Tensor batchnorm_concat(const std::vector<at::Tensor>& xs, const BatchNormTerms& t, bool relu,
                            bool blocked);

// Whether the kernels above run on this CPU (AVX2 and FMA as cpu.h caps them, and the probe
// against ATen at first use); where not, each returns undefined and the caller runs ATen.
bool batchnorm_kernel_runs();

}  // namespace tonnx::backend
