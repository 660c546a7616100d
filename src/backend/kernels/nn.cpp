// Neural-network kernels: convolution (pooling is in nn_pool.cpp; Gemm and MatMul in gemm.cpp).
#include "backend/kernels/batchnorm.h"
#include "backend/kernels/blocked.h"
#include "backend/kernels/conv_like.h"
#include "backend/kernels/fused_activation.h"
#include "backend/kernels/kernel.h"
#include "backend/onednn.h"

#include <ATen/native/ConvUtils.h>

#include <algorithm>
#include <atomic>

namespace tonnx::backend {
using namespace conv_attrs;  // NOLINT: ConvLike and its helpers

namespace {

// ATen runs most float convolutions on oneDNN (its "Mkldnn" backend) and reorders the weight
// into oneDNN's layout on every call: on ResNet-50's 512-channel 3x3 layers that is a third of
// the time (1 thread: 2.39 -> 1.73 ms). A Conv whose weight is an initializer keeps the weight
// reordered once (at::mkldnn_reorder_conv2d_weight, as torch.utils.mkldnn does) and, where
// ATen itself would choose that backend for this call (at::native::select_conv_backend: it
// depends on the shapes and the thread count), makes ATen's own call with it. The primitive
// is the same, so results are bit-identical to at::convolution's (tests assert it).
std::atomic<uint64_t> g_prepacked_conv_runs{0};

at::Tensor prepack_conv_weight(const KernelSpec& s, const ConvLike& c, int64_t group) {
  if (!at::hasMKLDNN() || s.constant_inputs.size() < 2 || !s.constant_inputs[1].defined())
    return {};
  const at::Tensor& w = s.constant_inputs[1];
  if (w.dim() != 4 || w.scalar_type() != at::kFloat || w.numel() == 0 || group < 1 ||
      w.size(0) % group != 0)
    return {};
  // The node's geometry, where it is fixed, so that the format is the one the primitive wants.
  std::vector<int64_t> pad{0, 0}, st = c.stride_vec(2), dil = c.dilation_vec(2);
  if (c.pads.size() == 4 && symmetric(c.pads) && c.auto_pad == AutoPad::NotSet)
    pad = {c.pads[0], c.pads[1]};
  if (st.size() != 2 || dil.size() != 2) return {};
  try {
    return at::mkldnn_reorder_conv2d_weight(w.contiguous().to_mkldnn(), pad, st, dil, group);
  } catch (const std::exception&) {  // c10::Error, or ideep's / oneDNN's own
    return {};                       // ATen reorders per call, as before
  }
}

}  // namespace

int64_t conv_group(const ir::Node& n) {
  int64_t group = n.attr_i("group", 1);
  if (group < 1 || group > (int64_t{1} << 31))
    kernel_fail(n, "group is " + std::to_string(group) + "; it must be at least 1");
  return group;
}

namespace {

// Whether tonnx runs this convolution on oneDNN (ATen's backend choice is asked once):
// - Where ATen with two or more threads does, bit for bit. At one thread ATen sends a 1x1
//   convolution (stride 1, batch under 16) to its GEMM path instead: OpenBLAS's AVX2 kernels
//   here, 1.4x slower on ResNet-50's 1x1 layers than oneDNN's AVX-512 ones. tonnx keeps
//   oneDNN's at every thread count, so such a convolution rounds as LibTorch's does with two
//   or more threads (docs/backend.md, "Convolution").
// - Also where ATen's size test alone keeps it off ("for some case, native is faster"): a 2-D
//   float convolution at batch 1, group 1, not 1x1, with at most 20480 input elements, which
//   ATen runs as im2col and an OpenBLAS GEMM. That is not faster: DenseNet-121's sixteen 3x3
//   convolutions on 7x7 take 0.50 ms each so and 0.27 ms on oneDNN (AVX2 EPYC), and they
//   break its blocked chain. These round differently from LibTorch (about 1e-6 relative;
//   docs/backend.md, "Convolution"), so not with `exact`.
bool runs_on_onednn(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                    const std::vector<int64_t>& st, const std::vector<int64_t>& pad,
                    const std::vector<int64_t>& dil, int64_t group, bool exact) {
  auto backend = at::native::select_conv_backend(
      x, w, b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt, st, pad, dil, false,
      std::vector<int64_t>(st.size(), 0), group);
  if (backend == at::native::ConvBackend::Mkldnn) return true;
  if (backend != at::native::ConvBackend::Slow2d || !at::globalContext().userEnabledMkldnn())
    return false;
  auto ones = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t e) { return e == 1; });
  };
  bool one_by_one = w.size(-1) == 1 && w.size(-2) == 1;
  // The one case ATen's ConvParams::use_mkldnn() turns on its thread count: 1x1, stride 1, no
  // dilation, batch under 16, at one thread; and then still only where its size test passes:
  // groups, a batch over 1 or an input over 20480 elements.
  if (at::get_num_threads() == 1 && one_by_one && ones(st) && ones(dil) && x.size(0) < 16 &&
      (group > 1 || x.size(0) > 1 || x.numel() > 20480))
    return true;
  return !exact && x.dim() == 4 && x.size(0) == 1 && group == 1 && x.numel() <= 20480 &&
         !one_by_one;
}

at::Tensor run_conv(const ir::Node& n, const ConvLike& c, int64_t group, at::Tensor x,
                    const at::Tensor& w, const at::Tensor& b, const at::Tensor& w_mkldnn,
                    bool exact) {
  if (x.dim() < 3)
    kernel_fail(n, "input X has rank " + std::to_string(x.dim()) + "; expected N x C x spatial...");
  if (w.dim() != x.dim())
    kernel_fail(n, "weight W has rank " + std::to_string(w.dim()) + " but X has rank " +
                       std::to_string(x.dim()));
  if (x.size(1) % group != 0 || x.size(1) / group != w.size(1))
    kernel_fail(n, "input channels C is not equal to kernel channels * group. C: " +
                       std::to_string(x.size(1)) + " kernel channels: " +
                       std::to_string(w.size(1)) + " group: " + std::to_string(group));
  size_t d = x.dim() - 2;
  std::vector<int64_t> k(w.sizes().begin() + 2, w.sizes().end());
  std::vector<int64_t> p = c.resolve_pads(n, x.sizes().slice(2), k);
  std::vector<int64_t> pad_arg(p.begin(), p.begin() + d);
  if (!symmetric(p)) {
    x = at::constant_pad_nd(x, aten_pad_order(p), 0);
    std::fill(pad_arg.begin(), pad_arg.end(), 0);
  }
  std::vector<int64_t> st = c.stride_vec(d), dil = c.dilation_vec(d), out_pad(d, 0);
  if (w_mkldnn.defined() && d == 2 && x.scalar_type() == at::kFloat && x.is_contiguous() &&
      x.suggest_memory_format() == at::MemoryFormat::Contiguous &&  // not [N,1,H,W] NHWC
      w.sizes() == w_mkldnn.sizes() &&
      (!b.defined() || (b.scalar_type() == at::kFloat && b.dim() == 1)) &&
      runs_on_onednn(x, w, b, st, pad_arg, dil, group, exact)) {
    g_prepacked_conv_runs.fetch_add(1, std::memory_order_relaxed);
    return at::mkldnn_convolution(x, w_mkldnn, b.defined() ? b.contiguous() : b, pad_arg, st, dil,
                                  group);
  }
  return at::convolution(x, w, b, st, pad_arg, dil, false, out_pad, group);
}

// The weight of a 2-D Conv that oneDNN may keep reordered: an initializer of rank 4 whose
// kernel_shape (if given) agrees with it (otherwise ATen's path reports the disagreement).
const at::Tensor* constant_2d_weight(const KernelSpec& s, const ConvLike& c) {
  if (s.constant_inputs.size() < 2 || !s.constant_inputs[1].defined() ||
      s.constant_inputs[1].dim() != 4)
    return nullptr;
  const at::Tensor& w = s.constant_inputs[1];
  if (!c.kernel.empty() && c.kernel != std::vector<int64_t>(w.sizes().begin() + 2, w.sizes().end()))
    return nullptr;
  return &w;
}

// The blocked-layout convolution (onednn.h) for a node whose input or output the plan may
// keep blocked: explicit pads, the same on both sides (SAME_* pads depend on the input).
std::shared_ptr<const OneDnnBlockedConv> make_blocked_conv(const KernelSpec& s, const ConvLike& c,
                                                           int64_t group) {
  const at::Tensor* w = constant_2d_weight(s, c);
  if (!w) return nullptr;
  OneDnnBlockedConv::Params p{c.strides, c.dilations, {0, 0}, group, s.choices.winograd};
  // Outside a blocked chain it runs the convolutions that may take Winograd (reading and
  // writing NCHW there).
  bool winograd = s.choices.winograd && OneDnnBlockedConv::winograd_weight(*w, p);
  if (!s.blocked_input(0) && !s.blocked_out && !winograd) return nullptr;
  if (c.auto_pad == AutoPad::NotSet && !c.pads.empty()) {
    if (c.pads.size() != 4 || !symmetric(c.pads)) return nullptr;
    p.pads = {c.pads[0], c.pads[1]};
  } else if (c.auto_pad != AutoPad::NotSet && c.auto_pad != AutoPad::Valid) {
    return nullptr;
  }
  return OneDnnBlockedConv::make(*w, std::move(p));  // (it checks dtype and lengths)
}

// Runs `blocked` where it takes Winograd, or where the ordinary path runs this convolution on
// oneDNN (runs_on_onednn: the same primitive, so the same results), else undefined for the
// ordinary path.
at::Tensor run_blocked_conv(const OneDnnBlockedConv& blocked, const ConvLike& c, int64_t group,
                            const at::Tensor& x, bool x_blocked, const at::Tensor& w,
                            const at::Tensor& b, bool want_blocked, bool exact) {
  if (x.scalar_type() != at::kFloat || (!x_blocked && x.dim() != 4) ||
      (!x_blocked && x.suggest_memory_format() != at::MemoryFormat::Contiguous))
    return {};
  std::vector<int64_t> xs = x.sizes().vec();
  if (x_blocked) xs = {x.size(0), x.size(1) * x.size(4), x.size(2), x.size(3)};
  if (xs[1] != w.size(1) * group || w.dim() != 4) return {};
  if (b.defined() && (b.scalar_type() != at::kFloat || b.dim() != 1)) return {};
  std::vector<int64_t> pads(2, 0);
  if (c.auto_pad == AutoPad::NotSet && c.pads.size() == 4) pads = {c.pads[0], c.pads[1]};
  // ATen's backend choice reads sizes, dtype and device only: an unfilled stand-in will do.
  at::Tensor standin = x_blocked ? at::empty(xs, x.options()) : x;
  if (!blocked.winograd(xs, b.defined()) &&
      !runs_on_onednn(standin, w, b, c.stride_vec(2), pads, c.dilation_vec(2), group, exact))
    return {};
  return blocked.run(x.contiguous(), x_blocked, b, want_blocked);
}

struct ConvTransposeAttrs {
  ConvLike c;
  int64_t group;
  std::vector<int64_t> output_padding, output_shape;
};

ConvTransposeAttrs parse_conv_transpose(const ir::Node& n) {
  return {parse_conv_like(n), conv_group(n), n.attr_ints("output_padding"),
          n.attr_ints("output_shape")};
}

at::Tensor run_conv_transpose(const ir::Node& n, const ConvTransposeAttrs& a, const at::Tensor& x,
                              const at::Tensor& w, const at::Tensor& b) {
  const ConvLike& c = a.c;
  if (x.dim() < 3)
    kernel_fail(n, "input X has rank " + std::to_string(x.dim()) + "; expected N x C x spatial...");
  size_t d = x.dim() - 2;
  if (x.size(1) != w.size(0))
    kernel_fail(n, "input channels " + std::to_string(x.size(1)) + " != weight's first dim " +
                       std::to_string(w.size(0)));
  auto st = c.stride_vec(d), dil = c.dilation_vec(d);
  std::vector<int64_t> op =
      a.output_padding.empty() ? std::vector<int64_t>(d, 0) : a.output_padding;
  std::vector<int64_t> pads = c.pads.empty() ? std::vector<int64_t>(2 * d, 0) : c.pads;
  if (pads.size() != 2 * d || op.size() != d ||
      (!a.output_shape.empty() && a.output_shape.size() < d))
    kernel_fail(n, "pads, output_padding and output_shape must have " + std::to_string(2 * d) +
                       ", " + std::to_string(d) + " and " + std::to_string(d) +
                       " values for X of rank " + std::to_string(x.dim()));
  bool explicit_pads = a.output_shape.empty() && c.auto_pad == AutoPad::NotSet;
  if (explicit_pads && symmetric(pads))  // ATen crops symmetric pads itself: no copy
    return at::convolution(x, w, b, st, std::vector<int64_t>(pads.begin(), pads.begin() + d), dil,
                           true, op, a.group);
  if (c.auto_pad == AutoPad::Valid) std::fill(pads.begin(), pads.end(), 0);
  at::Tensor full =
      at::convolution(x, w, b, st, std::vector<int64_t>(d, 0), dil, true, op, a.group);
  if (!a.output_shape.empty() || c.auto_pad == AutoPad::SameUpper ||
      c.auto_pad == AutoPad::SameLower) {
    for (size_t i = 0; i < d; ++i) {
      int64_t in_i = x.size(2 + i);
      int64_t target =
          !a.output_shape.empty() ? a.output_shape[a.output_shape.size() - d + i] : in_i * st[i];
      int64_t total = full.size(2 + i) - target;
      if (total < 0) {
        full = at::constant_pad_nd(full, [&] {
          std::vector<int64_t> p(2 * (full.dim() - 2 - i), 0);
          p[p.size() - 1] = -total;
          return p;
        }());
        total = 0;
      }
      bool upper = c.auto_pad != AutoPad::SameLower;
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[i + d] = total - pads[i];
    }
  }
  for (size_t i = 0; i < d; ++i) {
    int64_t len = full.size(2 + i) - pads[i] - pads[i + d];
    if (len < 0) kernel_fail(n, "pads are larger than the output");
    full = full.narrow(static_cast<int64_t>(2 + i), pads[i], len);
  }
  return full.contiguous();
}

// oneDNN's deconvolution for a ConvTranspose whose weight is an initializer and whose pads
// are explicit (auto_pad and output_shape resolve per input shape: ATen runs those).
std::shared_ptr<const OneDnnDeconv> make_onednn_deconv(const KernelSpec& s,
                                                       const ConvTransposeAttrs& a) {
  if (s.constant_inputs.size() < 2 || !s.constant_inputs[1].defined() || !a.output_shape.empty() ||
      a.c.auto_pad != AutoPad::NotSet)
    return nullptr;
  const at::Tensor& w = s.constant_inputs[1];
  size_t d = w.dim() > 2 ? static_cast<size_t>(w.dim() - 2) : 0;
  OneDnnDeconv::Params p{a.c.strides, a.c.dilations, {}, {}, a.output_padding};
  if (!a.c.split_pads(d, p.pads_begin, p.pads_end)) return nullptr;
  return OneDnnDeconv::make(w, a.group, std::move(p));
}

at::Tensor conv_transpose(const ir::Node& n, const ConvTransposeAttrs& a, const OneDnnDeconv* dnn,
                          const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  if (dnn) {
    at::Tensor y = dnn->run(x, b);
    if (y.defined()) return y;
  }
  return run_conv_transpose(n, a, x, w, b);
}

// oneDNN's convolution for a 2-D Conv whose weight is an initializer and whose pads do not
// depend on the input shape (SAME_* stays on ATen). `f` carries FusedConv's stages.
std::shared_ptr<const OneDnnConv> make_onednn_conv(const KernelSpec& s, const ConvLike& c,
                                                   int64_t group, OneDnnConv::Fused f) {
  const at::Tensor* w = constant_2d_weight(s, c);
  if (!s.choices.onednn_conv || !w ||
      (c.auto_pad != AutoPad::NotSet && c.auto_pad != AutoPad::Valid))
    return nullptr;
  OneDnnConv::Params p{c.strides, c.dilations, {}, {}, group};
  if (c.auto_pad != AutoPad::Valid && !c.split_pads(2, p.pads_begin, p.pads_end)) return nullptr;
  return OneDnnConv::make(*w, std::move(p), std::move(f));
}

TONNX_KERNEL("Conv", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvLike c = parse_conv_like(n);
  int64_t group = conv_group(n);
  auto dnn = make_onednn_conv(s, c, group, {});
  auto blocked = dnn ? nullptr : make_blocked_conv(s, c, group);
  at::Tensor w_mkldnn = dnn || blocked ? at::Tensor() : prepack_conv_weight(s, c, group);
  bool in_b = s.blocked_input(0), out_b = s.blocked_out, exact = s.choices.exact;
  return [c, group, dnn, blocked, w_mkldnn, in_b, out_b, exact, &n](const Tensors& in) -> Tensors {
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
      auto dnn = transposed ? make_onednn_deconv(s, a) : nullptr;
      std::shared_ptr<const OneDnnConv> dnn_conv;
      if (!transposed) {
        OneDnnConv::Fused f;
        f.batchnorm = n.inputs().size() > 7;
        f.bn_alpha = bn_terms.alpha;
        f.bn_beta = bn_terms.beta;
        f.add = n.inputs().size() > 3 && n.input(3) != nullptr;
        f.activation = act.kind;
        f.alpha = static_cast<float>(act.alpha);
        dnn_conv = make_onednn_conv(s, a.c, a.group, std::move(f));
      }
      auto blocked = transposed || dnn_conv ? nullptr : make_blocked_conv(s, a.c, a.group);
      at::Tensor w_mkldnn =
          transposed || dnn_conv || blocked ? at::Tensor() : prepack_conv_weight(s, a.c, a.group);
      bool in_b = s.blocked_input(0), z_b = s.blocked_input(3), out_b = s.blocked_out;
      bool exact = s.choices.exact;
      return [a, transposed, act, eps, dnn, dnn_conv, blocked, w_mkldnn, bn_terms, in_b, z_b, out_b,
              exact, &n](const Tensors& in) -> Tensors {
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
    });

TONNX_KERNEL("ConvTranspose", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvTransposeAttrs a = parse_conv_transpose(n);
  auto dnn = make_onednn_deconv(s, a);
  return [a, dnn, &n](const Tensors& in) -> Tensors {
    return {
        conv_transpose(n, a, dnn.get(), in.at(0), in.at(1), in.size() > 2 ? in[2] : at::Tensor())};
  };
});

}  // namespace

uint64_t prepacked_conv_runs() { return g_prepacked_conv_runs.load(); }

}  // namespace tonnx::backend
