// Normalization kernels but BatchNormalization's (batchnorm.cpp): LayerNormalization,
// InstanceNormalization, LRN, MeanVarianceNormalization, GroupNormalization (21) and
// RMSNormalization (23).
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

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
  // (X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9), in double. ONNX's reference writes the
  // variance as E[X^2] - E[X]^2, which in float cancels for data far from zero (values around
  // 1e4 with a spread of 1 lose every digit of it, and a negative result gave NaN).
  return [axes](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    at::Tensor xd = x.to(at::kDouble);
    at::Tensor centered = xd - xd.mean(axes, true);
    at::Tensor sd = at::sqrt(centered.pow(2).mean(axes, true));
    return {(centered / (sd + 1e-9)).to(x.scalar_type())};
  };
});

// GroupNormalization-21: X [N, C, ...], scale and bias [C]; statistics per group of C /
// num_groups channels, computed in float (stash_type 1) as ATen's group_norm does. (Version 18,
// with scale and bias per group, is deprecated by ONNX: validation refuses it.)
TONNX_KERNEL("GroupNormalization", 21, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t groups = n.attr_i("num_groups", 0);
  double eps = n.attr_f("epsilon", 1e-5f);
  if (groups < 1) kernel_fail(n, "num_groups must be >= 1, got " + std::to_string(groups));
  if (n.attr_i("stash_type", 1) != 1)
    kernel_fail(n, "stash_type " + std::to_string(n.attr_i("stash_type", 1)) +
                       " is not implemented by tonnx's backend; only 1 (float)");
  return [&n, groups, eps](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (x.dim() < 2) kernel_fail(n, "X must be [N, C, ...], got rank " + std::to_string(x.dim()));
    int64_t c = x.size(1);
    if (c % groups != 0)
      kernel_fail(n, "X's " + std::to_string(c) + " channels do not divide into " +
                         std::to_string(groups) + " groups");
    for (size_t i = 1; i < 3; ++i)
      if (in.at(i).dim() != 1 || in[i].size(0) != c)
        kernel_fail(n, std::string(i == 1 ? "scale" : "bias") + " must be [" + std::to_string(c) +
                           "] (one per channel), got " + c10::str(in[i].sizes()));
    at::ScalarType t = x.scalar_type();
    at::Tensor xf = t == at::kDouble ? x : x.to(at::kFloat);
    at::Tensor y = at::group_norm(xf, groups, in[1].to(xf.scalar_type()),
                                  in[2].to(xf.scalar_type()), eps, /*cudnn_enabled=*/false);
    return {y.to(t)};
  };
});

// RMSNormalization-23: X / sqrt(mean(X^2 over the axes from `axis` on) + epsilon) * scale, as
// ONNX's function body computes it: in float (stash_type 1), cast back, then the scale.
TONNX_KERNEL("RMSNormalization", 23, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", -1);
  double eps = n.attr_f("epsilon", 1e-5f);
  if (n.attr_i("stash_type", 1) != 1)
    kernel_fail(n, "stash_type " + std::to_string(n.attr_i("stash_type", 1)) +
                       " is not implemented by tonnx's backend; only 1 (float)");
  return [&n, axis, eps](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = norm_axis(n, axis, x.dim());
    std::vector<int64_t> dims;
    for (int64_t d = a; d < x.dim(); ++d) dims.push_back(d);
    at::ScalarType t = x.scalar_type();
    at::Tensor xf = t == at::kDouble ? x : x.to(at::kFloat);
    at::Tensor rms = at::sqrt((xf * xf).mean(dims, /*keepdim=*/true) + eps);
    at::Tensor normalized = (xf * at::reciprocal(rms)).to(t);
    return {normalized * in.at(1).to(t)};
  };
});

}  // namespace
}  // namespace tonnx::backend
