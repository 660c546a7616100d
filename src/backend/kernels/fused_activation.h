// The activation an ai.tonnx fused node (FusedConv, FusedGemm) applies after its main op.
#pragma once

#include <ATen/ATen.h>

#include <limits>
#include <optional>
#include <string>

#include "backend/kernels/kernel.h"
#include "passes/fuse.h"

namespace tonnx::backend {

// The fused activation of an ai.tonnx node, applied in place on a tensor the kernel itself
// allocated: the same ATen functions as the unfused kernels, so the same results.
struct FusedActivation {
  using Kind = passes::FusedActivation;
  Kind kind = Kind::None;
  double alpha = 0.01, beta = 0.5;  // LeakyRelu's slope; HardSigmoid's alpha and beta
  double lo = 0, hi = 0;            // Clip's bounds
  explicit FusedActivation(const ir::Node& n) {
    std::string name = n.attr_s("activation", "");
    std::optional<Kind> k = passes::parse_fused_activation(name);
    if (!k) kernel_fail(n, "unknown fused activation '" + name + "'");
    kind = *k;
    alpha = n.attr_f("activation_alpha", kind == Kind::HardSigmoid ? 0.2f : 0.01f);
    beta = n.attr_f("activation_beta", 0.5f);
    lo = n.attr_f("activation_min", -std::numeric_limits<float>::infinity());
    hi = n.attr_f("activation_max", std::numeric_limits<float>::infinity());
  }
  // As the unfused kernels compute it (backend/kernels/elementwise.cpp): Clip's maximum then
  // minimum are ATen's clamp (NaN stays NaN), HardSigmoid's x * alpha + beta rounds the
  // product, then the sum, as the out-of-place calls do. Swish alone differs: x * Sigmoid(x)
  // is how exporters write SiLU, and ATen's silu, which LibTorch ran, computes x / (1 + e^-x)
  // in one pass (within an ulp or two of the written-out form, as the fused Gelu).
  void operator()(at::Tensor& y) const {
    switch (kind) {
      case Kind::None:
        break;
      case Kind::Relu:
        y.relu_();
        break;
      case Kind::LeakyRelu:
        at::leaky_relu_(y, alpha);
        break;
      case Kind::Sigmoid:
        y.sigmoid_();
        break;
      case Kind::Tanh:
        y.tanh_();
        break;
      case Kind::Clip:
        y.clamp_(lo, hi);
        break;
      case Kind::HardSigmoid:
        y.mul_(alpha).add_(beta).clamp_(0, 1);
        break;
      case Kind::HardSwish:
        at::hardswish_(y);
        break;
      case Kind::Swish:
        at::silu_(y);
        break;
    }
  }
};

}  // namespace tonnx::backend
