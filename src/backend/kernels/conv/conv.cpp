// The convolution kernels: Conv, ConvTranspose and the fused ai.tonnx::FusedConv
// (passes/fuse/conv.cpp). Each node's path is chosen once at prepare by choose.h, which says
// why (NodeProfile::kernel); the kernels here run it and its fallbacks.
#include "backend/kernels/batchnorm_one_pass.h"
#include "backend/kernels/blocked_layout.h"
#include "backend/kernels/conv/choose.h"
#include "backend/kernels/conv_like.h"
#include "backend/kernels/fused_activation.h"
#include "backend/kernels/kernel.h"

#include <utility>

namespace tonnx::backend {
using namespace conv_attrs;  // NOLINT: ConvLike and its helpers

namespace {

TONNX_KERNEL("Conv", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvLike c = parse_conv_like(n);
  int64_t group = conv_group(n);
  ConvChoice ch = choose_conv(s, c, group, {});
  auto dnn = ch.direct;
  auto blocked = ch.blocked;
  at::Tensor w_mkldnn = ch.w_prepacked;
  bool in_b = s.blocked_input(0), out_b = s.blocked_out, exact = s.choices.exact;
  Kernel k = [c, group, dnn, blocked, w_mkldnn, in_b, out_b, exact,
              &n](const Tensors& in) -> Tensors {
    at::Tensor b = in.size() > 2 ? in[2] : at::Tensor();
    if (dnn) {
      OneDnnConv::Done done;
      at::Tensor y = dnn->run(in.at(0), b, {}, done);
      if (y.defined()) return {y};
    }
    bool xb = is_blocked(in.at(0), in_b);
    if (blocked) {
      at::Tensor y = run_blocked_conv(*blocked, c, group, in.at(0), xb, in.at(1), b, out_b, exact);
      if (y.defined()) return {y};
    }
    return {run_conv(n, c, group, plain(in.at(0), in_b), in.at(1), b, w_mkldnn, exact)};
  };
  k.set_note(ch.describe());
  return k;
});

// ai.tonnx::FusedConv(X, W, B?, Z?[, scale, bias, mean, var]): Conv, or ConvTranspose with
// transposed=1; then the inference BatchNormalization when its four inputs are given (with
// bn_epsilon); then Z when given (Add, in place when the shapes agree); then the activation.
TONNX_KERNEL_DOMAIN(
    "FusedConv", passes::kFusedDomain, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
      const ir::Node& n = s.node;
      // (A model file may name this internal op: check what it reads.)
      size_t n_in = n.inputs().size();
      if (n_in < 2 || (n_in > 4 && n_in != 8) || n.outputs().size() != 1)
        kernel_fail(n,
                    "takes X, W, B?, Z? and optionally BatchNormalization's scale, bias, "
                    "mean and var (2-4 or 8 inputs) and 1 output, got " +
                        std::to_string(n_in) + " and " + std::to_string(n.outputs().size()));
      ConvTransposeAttrs a = parse_conv_transpose(n);
      bool transposed = n.attr_i("transposed", 0) != 0;
      FusedActivation act(n);
      double eps = n.attr_f("bn_epsilon", 1e-5f);
      BatchNormTerms bn_terms =
          n.inputs().size() > 7 ? constant_batchnorm_terms(s, 4, eps) : BatchNormTerms{};
      ConvChoice ch;
      if (transposed) {
        ch = choose_conv_transpose(s, a);
      } else {
        OneDnnConv::Fused f;
        f.batchnorm = n.inputs().size() > 7;
        f.bn_alpha = bn_terms.alpha;
        f.bn_beta = bn_terms.beta;
        f.add = n.inputs().size() > 3 && n.input(3) != nullptr;
        f.activation = act.kind;
        f.alpha = static_cast<float>(act.alpha);
        ch = choose_conv(s, a.c, a.group, std::move(f));
      }
      auto dnn = ch.deconv;
      auto dnn_conv = ch.direct;
      auto blocked = ch.blocked;
      at::Tensor w_mkldnn = ch.w_prepacked;
      bool in_b = s.blocked_input(0), z_b = s.blocked_input(3), out_b = s.blocked_out;
      bool exact = s.choices.exact;
      Kernel k = [a, transposed, act, eps, dnn, dnn_conv, blocked, w_mkldnn, bn_terms, in_b, z_b,
                  out_b, exact, &n](const Tensors& in) -> Tensors {
        at::Tensor b = in.size() > 2 ? in[2] : at::Tensor();
        at::Tensor z = in.size() > 3 ? in[3] : at::Tensor();
        OneDnnConv::Done done;
        at::Tensor y;
        if (dnn_conv) y = dnn_conv->run(in.at(0), b, z, done);
        if (!y.defined() && blocked)
          y = run_blocked_conv(*blocked, a.c, a.group, in.at(0), is_blocked(in.at(0), in_b),
                               in.at(1), b, out_b, exact);
        // `blk`: y is blocked, and each stage below runs on that layout until one cannot
        // (BatchNormalization with run-time statistics, a Z that is not blocked alike).
        bool blk = y.defined() && y.dim() == 5;
        auto to_plain = [&] {
          if (blk) y = blocked_to_plain(y);
          blk = false;
        };
        if (!y.defined())
          y = transposed
                  ? conv_transpose(n, a, dnn.get(), in.at(0), in.at(1), b)
                  : run_conv(n, a.c, a.group, plain(in.at(0), in_b), in.at(1), b, w_mkldnn, exact);
        if (done.activation) return {y};
        bool has_z = in.size() > 3 && in[3].defined() && !done.add;
        if (in.size() > 7 && !done.batchnorm) {
          // As the BatchNormalization kernel computes it, in place on the convolution's output
          // (with the Relu when nothing comes between), else ATen's call.
          bool relu = !has_z && act.kind == FusedActivation::Kind::Relu;
          // A blocked Z like y, then a Relu or nothing: all three in the one pass.
          if (blk && has_z && is_blocked(z, z_b) && z.sizes() == y.sizes() &&
              (act.kind == FusedActivation::Kind::Relu ||
               act.kind == FusedActivation::Kind::None)) {
            bool relu_z = act.kind == FusedActivation::Kind::Relu;
            if (batchnorm_blocked(y, bn_terms, relu_z, y, z).defined()) return {hand_on(y, out_b)};
          }
          at::Tensor r = blk ? batchnorm_blocked(y, bn_terms, relu, y) : at::Tensor();
          if (!r.defined()) {
            to_plain();
            r = batchnorm_inference(y, bn_terms, relu, y);
          }
          if (r.defined()) {
            if (relu) return {blk ? hand_on(y, out_b) : y};
          } else {
            y = at::batch_norm(y, in[4], in[5], in[6], in[7], false, 0.0, eps, false);
          }
        }
        if (has_z) {
          if (!(blk && is_blocked(z, z_b) && z.sizes() == y.sizes())) {
            to_plain();
            z = plain(z, z_b);
          }
          if (z.sizes() == y.sizes() && z.scalar_type() == y.scalar_type())
            y.add_(z);
          else
            y = at::add(y, z);  // broadcasting: the Add's own semantics
        }
        act(y);
        // A plain value the plan holds blocked is told from a blocked one by its rank 4.
        if (out_b && !blk && y.dim() != 4)
          kernel_fail(n, "output of shape " + c10::str(y.sizes()) +
                             " is not 4-D, but the plan holds it in the blocked layout "
                             "(run with --plain-layout)");
        return {blk ? hand_on(y, out_b) : y};
      };
      k.set_note(ch.describe());
      return k;
    });

TONNX_KERNEL("ConvTranspose", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvTransposeAttrs a = parse_conv_transpose(n);
  ConvChoice ch = choose_conv_transpose(s, a);
  auto dnn = ch.deconv;
  Kernel k = [a, dnn, &n](const Tensors& in) -> Tensors {
    return {
        conv_transpose(n, a, dnn.get(), in.at(0), in.at(1), in.size() > 2 ? in[2] : at::Tensor())};
  };
  k.set_note(ch.describe());
  return k;
});

}  // namespace
}  // namespace tonnx::backend
