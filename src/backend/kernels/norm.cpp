// Normalization and loss kernels: BatchNormalization, LayerNormalization,
// InstanceNormalization, LRN, MeanVarianceNormalization, NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss.
#include "backend/kernels/batchnorm.h"
#include "backend/kernels/blocked.h"
#include "backend/kernels/fused_activation.h"
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

// The inference BatchNormalization of in[0..4], then Relu when `relu`: in one pass where
// batchnorm_inference can, else ATen's calls (the unfused kernels' own).
// A blocked X (kernels/blocked.h; `in_b`: the plan allows it) stays blocked where the terms
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

TONNX_KERNEL("LayerNormalization", 17, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", -1);
  double eps = n.attr_f("epsilon", 1e-5f);
  // Only Y wanted (as both exporters write it): LibTorch's own layer_norm, the function the
  // model ran, one vectorized pass per row in float. Mean and InvStdDev, a scale or bias
  // that broadcasts, or other types take the double-precision path below.
  const bool only_y = n.outputs().size() == 1;
  return [&n, axis, eps, only_y](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = norm_axis(n, axis, x.dim());
    at::IntArrayRef normalized = x.sizes().slice(a);
    const at::Tensor& scale = in.at(1);
    at::Tensor bias = in.size() > 2 ? in[2] : at::Tensor();
    if (only_y && x.scalar_type() == at::kFloat && scale.scalar_type() == at::kFloat &&
        scale.sizes() == normalized && c10::multiply_integers(normalized) > 0 &&
        (!bias.defined() || (bias.scalar_type() == at::kFloat && bias.sizes() == normalized)))
      return {at::layer_norm(x, normalized, scale, bias, eps, /*cudnn_enable=*/false)};
    std::vector<int64_t> dims;
    for (int64_t d = a; d < x.dim(); ++d) dims.push_back(d);
    at::Tensor xf = x.to(at::kDouble);
    at::Tensor mean = xf.mean(dims, true);
    at::Tensor var = (xf - mean).pow(2).mean(dims, true);
    at::Tensor inv = at::rsqrt(var + eps);
    at::Tensor y = (xf - mean) * inv * in.at(1).to(at::kDouble);
    if (in.size() > 2 && in[2].defined()) y = y + in[2].to(at::kDouble);
    // Mean and InvStdDev keep the reduced dims as 1.
    return {y.to(x.scalar_type()), mean.to(x.scalar_type()), inv.to(x.scalar_type())};
  };
});

TONNX_KERNEL("InstanceNormalization", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double eps = s.node.attr_f("epsilon", 1e-5f);
  return [eps](const Tensors& in) -> Tensors {
    return {at::instance_norm(in.at(0), in.at(1), in.at(2), {}, {}, true, 0.0, eps, false)};
  };
});

TONNX_KERNEL("LRN", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  double alpha = n.attr_f("alpha", 1e-4f), beta = n.attr_f("beta", 0.75f),
         bias = n.attr_f("bias", 1.0f);
  int64_t size = n.attr_i("size", 1);
  if (size < 1) kernel_fail(n, "size must be >= 1, got " + std::to_string(size));
  return [&n, alpha, beta, bias, size](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (x.dim() < 2) kernel_fail(n, "X must be [N, C, ...], got rank " + std::to_string(x.dim()));
    int64_t C = x.size(1);
    at::Tensor sq = x * x, sum = at::zeros_like(x);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t c = 0; c < C; ++c) {
      int64_t b = std::max<int64_t>(0, c - lo), e = std::min<int64_t>(C - 1, c + hi);
      sum.select(1, c).copy_(sq.narrow(1, b, e - b + 1).sum(1));
    }
    return {x / at::pow(bias + alpha / static_cast<double>(size) * sum, beta)};
  };
});

TONNX_KERNEL("MeanVarianceNormalization", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  std::vector<int64_t> axes = s.node.attr_ints("axes", {0, 2, 3});
  return [axes](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    at::Tensor mean = x.mean(axes, true);
    at::Tensor var = (x * x).mean(axes, true) - mean * mean;
    return {(x - mean) / (at::sqrt(var) + 1e-9)};
  };
});

// NLL over class axis 1: input (N, C, d...), target (N, d...), optional weight (C).
at::Tensor nll(const ir::Node& n, const at::Tensor& input, const at::Tensor& target_in,
               const at::Tensor& weight, const std::string& reduction,
               std::optional<int64_t> ignore) {
  at::Tensor target = target_in.to(at::kLong);
  at::Tensor valid = at::ones_like(target, at::kBool);
  if (ignore) valid = target != *ignore;
  at::Tensor safe = at::where(valid, target, at::zeros_like(target));
  int64_t C = input.size(1);
  if (safe.numel() > 0 && (safe.min().item<int64_t>() < 0 || safe.max().item<int64_t>() >= C))
    kernel_fail(n, "a target is outside [0, " + std::to_string(C - 1) + "]");
  at::Tensor picked = -at::gather(input, 1, safe.unsqueeze(1)).squeeze(1);
  at::Tensor w = weight.defined() ? weight.index_select(0, safe.reshape({-1})).reshape(safe.sizes())
                                  : at::ones_like(picked);
  w = w * valid.to(w.scalar_type());
  at::Tensor loss = picked * w;
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  if (reduction != "mean") kernel_fail(n, "reduction must be none, sum or mean; got " + reduction);
  if (!weight.defined() && !ignore) return loss.mean();
  return loss.sum() / w.sum();
}

TONNX_KERNEL("NegativeLogLikelihoodLoss", 12, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  std::string reduction = n.attr_s("reduction", "mean");
  std::optional<int64_t> ignore;
  if (n.has_attr("ignore_index")) ignore = n.attr_i("ignore_index", 0);
  return [&n, reduction, ignore](const Tensors& in) -> Tensors {
    at::Tensor w = in.size() > 2 ? in[2] : at::Tensor();
    return {nll(n, in.at(0), in.at(1), w, reduction, ignore)};
  };
});

TONNX_KERNEL("SoftmaxCrossEntropyLoss", 12, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  std::string reduction = n.attr_s("reduction", "mean");
  std::optional<int64_t> ignore;
  if (n.has_attr("ignore_index")) ignore = n.attr_i("ignore_index", 0);
  return [&n, reduction, ignore](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    at::Tensor logp = at::log_softmax(x, 1);
    at::Tensor w = in.size() > 2 ? in[2] : at::Tensor();
    at::Tensor loss = nll(n, logp, in.at(1), w, reduction, ignore);
    return {loss, logp};
  };
});

}  // namespace
}  // namespace tonnx::backend
