// The loss kernels: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

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
