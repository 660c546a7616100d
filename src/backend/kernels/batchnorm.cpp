// The BatchNormalization kernels: BatchNormalization, and the fused ai.tonnx::FusedBatchNorm
// (passes/fuse/batchnorm_activation.cpp) and ai.tonnx::ConcatBatchNorm
// (passes/fuse/concat_batchnorm.cpp); the one-pass computation is batchnorm_one_pass.h's.
#include "backend/kernels/batchnorm_one_pass.h"
#include "backend/kernels/blocked_layout.h"
#include "backend/kernels/fused_activation.h"
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

// The inference BatchNormalization of in[0..4], then Relu when `relu`: in one pass where
// batchnorm_inference can, else ATen's calls (the unfused kernels' own).
// A blocked X (kernels/blocked_layout.h; `in_b`: the plan allows it) stays blocked where the terms
// are constant; otherwise it is read as NCHW.
at::Tensor batchnorm_then_relu(const Tensors& in, const BatchNormTerms& t, double eps, bool relu,
                               bool in_b = false, bool out_b = false) {
  at::Tensor x = in.at(0);
  if (is_blocked(x, in_b)) {
    at::Tensor y = batchnorm_blocked(x, t, relu);
    if (y.defined()) return hand_on(y, out_b);
    x = blocked_to_plain(x);
  }
  at::Tensor y = batchnorm_inference(x, t, relu);
  if (y.defined()) return y;
  y = at::batch_norm(x, in.at(1), in.at(2), in.at(3), in.at(4), false, 0.0, eps, false);
  if (relu) y.relu_();
  return y;
}

TONNX_KERNEL("BatchNormalization", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  double eps = n.attr_f("epsilon", 1e-5f);
  double momentum = n.attr_f("momentum", 0.9f);
  // training_mode (14+): normalize with the batch statistics and also return the updated
  // running mean and variance (momentum-weighted, variance unbiased as ONNX's reference).
  bool training = n.attr_i("training_mode", 0) != 0;
  BatchNormTerms terms = training ? BatchNormTerms{} : constant_batchnorm_terms(s, 1, eps);
  bool in_b = s.blocked_input(0), out_b = s.blocked_out;
  return [&n, eps, momentum, training, terms, in_b, out_b](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (x.dim() < 2) kernel_fail(n, "X must be [N, C, ...], got rank " + std::to_string(x.dim()));
    if (!training) return {batchnorm_then_relu(in, terms, eps, false, in_b, out_b)};
    std::vector<int64_t> axes{0};
    for (int64_t i = 2; i < x.dim(); ++i) axes.push_back(i);
    at::Tensor mean = x.mean(axes), var = x.var(axes, /*unbiased=*/false);
    std::vector<int64_t> shape(x.dim(), 1);
    shape[1] = -1;
    at::Tensor y =
        (x - mean.reshape(shape)) / at::sqrt(var.reshape(shape) + eps) * in.at(1).reshape(shape) +
        in.at(2).reshape(shape);
    at::Tensor rm = in.at(3) * momentum + mean * (1 - momentum);
    at::Tensor rv = in.at(4) * momentum + var * (1 - momentum);
    return {y, rm, rv};
  };
});

// ai.tonnx::FusedBatchNorm(X, scale, B, mean, var): an inference BatchNormalization and the
// activation after it (attributes epsilon, activation): DenseNet's BN -> Relu before each
// convolution, in one pass where batchnorm_inference can, else ATen's two calls.
TONNX_KERNEL_DOMAIN(
    "FusedBatchNorm", passes::kFusedDomain, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
      const ir::Node& n = s.node;
      // (A model file may name this internal op: check what it reads.)
      if (n.inputs().size() != 5 || n.outputs().size() != 1)
        kernel_fail(n, "takes 5 inputs (X, scale, B, mean, var) and 1 output, got " +
                           std::to_string(n.inputs().size()) + " and " +
                           std::to_string(n.outputs().size()));
      double eps = n.attr_f("epsilon", 1e-5f);
      FusedActivation act(n);
      BatchNormTerms terms = constant_batchnorm_terms(s, 1, eps);
      bool in_b = s.blocked_input(0), out_b = s.blocked_out;
      return [&n, eps, act, terms, in_b, out_b](const Tensors& in) -> Tensors {
        const at::Tensor& x = in.at(0);
        if (x.dim() < 2)
          kernel_fail(n, "X must be [N, C, ...], got rank " + std::to_string(x.dim()));
        bool relu = act.kind == FusedActivation::Kind::Relu;
        at::Tensor y = batchnorm_then_relu(in, terms, eps, relu, in_b, out_b);
        if (!relu) act(y);
        return {y};
      };
    });

// ai.tonnx::ConcatBatchNorm(scale, B, mean, var, X1, ..., Xn): Concat(X1..Xn, axis) -> an
// inference BatchNormalization -> the activation (attributes axis, epsilon, activation), as
// fuse_for_cpu writes DenseNet's Concat -> BN -> Relu; one pass where the concatenation is
// over channels (batchnorm_concat), else the unfused nodes' calls.
TONNX_KERNEL_DOMAIN(
    "ConcatBatchNorm", passes::kFusedDomain, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
      const ir::Node& n = s.node;
      // (A model file may name this internal op: check what it reads.)
      if (n.inputs().size() < 5 || n.outputs().size() != 1)
        kernel_fail(n, "takes scale, B, mean, var and at least one X, and 1 output; got " +
                           std::to_string(n.inputs().size()) + " inputs and " +
                           std::to_string(n.outputs().size()) + " outputs");
      const int64_t axis = n.attr_i("axis", 1);
      const double eps = n.attr_f("epsilon", 1e-5f);
      FusedActivation act(n);
      BatchNormTerms terms = constant_batchnorm_terms(s, 0, eps);
      std::vector<bool> in_b(n.inputs().size());
      for (size_t i = 0; i < in_b.size(); ++i) in_b[i] = s.blocked_input(i);
      const bool out_b = s.blocked_out;
      return [&n, axis, eps, act, terms, in_b, out_b](const Tensors& in) -> Tensors {
        const bool relu = act.kind == FusedActivation::Kind::Relu;
        Tensors xs(in.begin() + 4, in.end());
        bool all_blocked = true, any_blocked = false;
        for (size_t i = 0; i < xs.size(); ++i) {
          bool b = is_blocked(xs[i], in_b[i + 4]);
          all_blocked = all_blocked && b;
          any_blocked = any_blocked || b;
        }
        at::Tensor y;
        // (A blocked input is 4-D logically; the plan allows it only over channels.)
        const int64_t rank = any_blocked ? 4 : xs[0].dim();
        const bool channels = rank >= 2 && norm_axis(n, axis, rank) == 1;
        if (channels && (all_blocked || !any_blocked))
          y = batchnorm_concat(xs, terms, relu, all_blocked);
        if (y.defined()) {
          // (only a blocked result is handed on as blocked: a plain 5-D one, a BatchNorm3d's
          // volume, is not the blocked form)
          if (all_blocked) y = hand_on(y, out_b);
        } else {
          for (size_t i = 0; i < xs.size(); ++i) xs[i] = plain(xs[i], in_b[i + 4]);
          Tensors bn{at::cat(xs, norm_axis(n, axis, xs[0].dim())), in[0], in[1], in[2], in[3]};
          if (bn[0].dim() < 2)
            kernel_fail(n, "X must be [N, C, ...], got rank " + std::to_string(bn[0].dim()));
          y = batchnorm_then_relu(bn, terms, eps, relu);
        }
        if (!relu) act(y);
        return {y};
      };
    });

}  // namespace
}  // namespace tonnx::backend
