// The activation an ai.tonnx fused node (FusedConv, FusedGemm) applies after its main op.
#pragma once

#include <ATen/ATen.h>

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
  double alpha = 0.01;
  explicit FusedActivation(const ir::Node& n) : alpha(n.attr_f("activation_alpha", 0.01f)) {
    std::string name = n.attr_s("activation", "");
    std::optional<Kind> k = passes::parse_fused_activation(name);
    if (!k) kernel_fail(n, "unknown fused activation '" + name + "'");
    kind = *k;
  }
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
    }
  }
};

}  // namespace tonnx::backend
