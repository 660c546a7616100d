// Neural-network kernels: convolution and pooling (Gemm and MatMul are in gemm.cpp).
#include "backend/kernels/batchnorm.h"
#include "backend/kernels/fused_activation.h"
#include "backend/kernels/kernel.h"
#include "backend/kernels/pool.h"
#include "backend/onednn.h"

#include <ATen/native/ConvUtils.h>

#include <algorithm>
#include <atomic>

namespace tonnx::backend {
namespace {

struct ConvLike {
  AutoPad auto_pad = AutoPad::NotSet;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  bool ceil_mode = false;

  // Fills defaults for `spatial` dims and resolves SAME_* padding for this input.
  std::vector<int64_t> resolve_pads(const ir::Node& n, at::IntArrayRef in_spatial,
                                    const std::vector<int64_t>& k) const {
    size_t d = in_spatial.size();
    check_lengths(d, k.size());
    std::vector<int64_t> p = pads.empty() ? std::vector<int64_t>(2 * d, 0) : pads;
    if (p.size() != 2 * d)
      kernel_fail(n, "pads has " + std::to_string(p.size()) + " values; expected " +
                         std::to_string(2 * d) + " for " + std::to_string(d) + " spatial dims");
    if (auto_pad == AutoPad::SameUpper || auto_pad == AutoPad::SameLower) {
      for (size_t i = 0; i < d; ++i) {
        int64_t s = stride(i), dil = dilation(i);
        int64_t out = (in_spatial[i] + s - 1) / s;
        int64_t total = std::max<int64_t>(0, (out - 1) * s + (k[i] - 1) * dil + 1 - in_spatial[i]);
        int64_t small = total / 2, big = total - small;
        p[i] = auto_pad == AutoPad::SameUpper ? small : big;
        p[i + d] = auto_pad == AutoPad::SameUpper ? big : small;
      }
    } else if (auto_pad == AutoPad::Valid) {
      std::fill(p.begin(), p.end(), 0);
    }
    return p;
  }
  // The pads attribute as begins and ends for `d` spatial dims (empty: none given); false
  // where it has another length (the kernel's own path reports that).
  bool split_pads(size_t d, std::vector<int64_t>& begins, std::vector<int64_t>& ends) const {
    if (pads.empty()) return true;
    if (pads.size() != 2 * d) return false;
    begins.assign(pads.begin(), pads.begin() + d);
    ends.assign(pads.begin() + d, pads.end());
    return true;
  }
  // strides and dilations (when given) must have one value per spatial dim, as the kernel.
  void check_lengths(size_t d, size_t kernel_len) const {
    auto fits = [d](const std::vector<int64_t>& v) { return v.empty() || v.size() == d; };
    if (!fits(strides) || !fits(dilations) || kernel_len != d)
      throw std::invalid_argument(
          "kernel_shape, strides and dilations must have one value per spatial dim (" +
          std::to_string(d) + "); they have " + std::to_string(kernel_len) + ", " +
          std::to_string(strides.size()) + " and " + std::to_string(dilations.size()));
  }
  int64_t stride(size_t i) const { return strides.empty() ? 1 : strides.at(i); }
  int64_t dilation(size_t i) const { return dilations.empty() ? 1 : dilations.at(i); }
  std::vector<int64_t> stride_vec(size_t d) const {
    check_lengths(d, d);
    return strides.empty() ? std::vector<int64_t>(d, 1) : strides;
  }
  std::vector<int64_t> dilation_vec(size_t d) const {
    check_lengths(d, d);
    return dilations.empty() ? std::vector<int64_t>(d, 1) : dilations;
  }
};

ConvLike parse_conv_like(const ir::Node& n) {
  ConvLike c;
  c.auto_pad = parse_auto_pad(n);
  c.kernel = n.attr_ints("kernel_shape");
  c.strides = n.attr_ints("strides");
  c.dilations = n.attr_ints("dilations");
  c.pads = n.attr_ints("pads");
  c.ceil_mode = n.attr_i("ceil_mode", 0) != 0;
  // Values first (a stride of 0 divides by zero in the output size); lengths against the
  // input's rank at run time (check_lengths).
  // Up to 2^31, so that no output-size formula overflows.
  constexpr int64_t kMax = int64_t{1} << 31;
  for (const auto* v : {&c.kernel, &c.strides, &c.dilations})
    for (int64_t x : *v)
      if (x < 1 || x > kMax)
        kernel_fail(n,
                    "kernel_shape, strides and dilations must be 1 to 2^31, got " + c10::str(*v));
  for (int64_t x : c.pads)
    if (x < 0 || x > kMax) kernel_fail(n, "pads must be 0 to 2^31, got " + c10::str(c.pads));
  return c;
}

// Pools also require every explicit pad to be smaller than the kernel, as ONNX Runtime does:
// a window wholly in padding has no input, and kernel 65536 with pads 65536 on a 5-wide input
// (found by fuzz_run) was minutes of work over padding.
ConvLike parse_pool(const ir::Node& n) {
  ConvLike c = parse_conv_like(n);
  size_t d = c.kernel.size();
  if (c.auto_pad == AutoPad::NotSet && c.pads.size() == 2 * d)
    for (size_t i = 0; i < 2 * d; ++i)
      if (c.pads[i] >= c.kernel[i % d])
        kernel_fail(n, "pads " + c10::str(c10::IntArrayRef(c.pads)) +
                           " must each be smaller than kernel_shape " +
                           c10::str(c10::IntArrayRef(c.kernel)));
  return c;
}

bool symmetric(const std::vector<int64_t>& p) {
  size_t d = p.size() / 2;
  for (size_t i = 0; i < d; ++i)
    if (p[i] != p[i + d]) return false;
  return true;
}

// at::constant_pad_nd takes pads last-dim first as (begin, end) pairs.
std::vector<int64_t> aten_pad_order(const std::vector<int64_t>& p) {
  size_t d = p.size() / 2;
  std::vector<int64_t> out;
  for (size_t i = d; i-- > 0;) {
    out.push_back(p[i]);
    out.push_back(p[i + d]);
  }
  return out;
}

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

// Whether ATen with two or more threads runs this convolution on oneDNN. At one thread ATen
// sends a 1x1 convolution (stride 1, batch under 16) to its GEMM path instead: OpenBLAS's
// AVX2 kernels here, 1.4x slower on ResNet-50's 1x1 layers than oneDNN's AVX-512 ones. tonnx
// keeps oneDNN's at every thread count, so such a convolution rounds as LibTorch's does with
// two or more threads, bit for bit (docs/backend.md, "Convolution").
bool mkldnn_as_multithreaded_aten(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                                  const std::vector<int64_t>& st, const std::vector<int64_t>& pad,
                                  const std::vector<int64_t>& dil, int64_t group) {
  auto backend = at::native::select_conv_backend(
      x, w, b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt, st, pad, dil, false,
      std::vector<int64_t>(st.size(), 0), group);
  if (backend == at::native::ConvBackend::Mkldnn) return true;
  auto ones = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t e) { return e == 1; });
  };
  // The one case ATen's ConvParams::use_mkldnn() turns on its thread count: 1x1, stride 1, no
  // dilation, batch under 16, at one thread; and then still only where its size test ("native
  // is faster") passes: groups, a batch over 1 or an input over 20480 elements.
  return backend == at::native::ConvBackend::Slow2d && at::globalContext().userEnabledMkldnn() &&
         at::get_num_threads() == 1 && w.size(-1) == 1 && w.size(-2) == 1 && ones(st) &&
         ones(dil) && x.size(0) < 16 && (group > 1 || x.size(0) > 1 || x.numel() > 20480);
}

at::Tensor run_conv(const ir::Node& n, const ConvLike& c, int64_t group, at::Tensor x,
                    const at::Tensor& w, const at::Tensor& b,
                    const at::Tensor& w_mkldnn = at::Tensor()) {
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
      mkldnn_as_multithreaded_aten(x, w, b, st, pad_arg, dil, group)) {
    g_prepacked_conv_runs.fetch_add(1, std::memory_order_relaxed);
    return at::mkldnn_convolution(x, w_mkldnn, b.defined() ? b.contiguous() : b, pad_arg, st, dil,
                                  group);
  }
  return at::convolution(x, w, b, st, pad_arg, dil, false, out_pad, group);
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
  if (!s.choices.onednn_conv || s.constant_inputs.size() < 2 || !s.constant_inputs[1].defined() ||
      s.constant_inputs[1].dim() != 4 ||
      (c.auto_pad != AutoPad::NotSet && c.auto_pad != AutoPad::Valid))
    return nullptr;
  OneDnnConv::Params p{c.strides, c.dilations, {}, {}, group};
  if (c.auto_pad != AutoPad::Valid && !c.split_pads(2, p.pads_begin, p.pads_end)) return nullptr;
  if (!c.kernel.empty() &&
      c.kernel != std::vector<int64_t>(s.constant_inputs[1].sizes().begin() + 2,
                                       s.constant_inputs[1].sizes().end()))
    return nullptr;  // kernel_shape disagrees with W: ATen's path reports it
  return OneDnnConv::make(s.constant_inputs[1], std::move(p), std::move(f));
}

TONNX_KERNEL("Conv", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvLike c = parse_conv_like(n);
  int64_t group = conv_group(n);
  auto dnn = make_onednn_conv(s, c, group, {});
  at::Tensor w_mkldnn = dnn ? at::Tensor() : prepack_conv_weight(s, c, group);
  return [c, group, dnn, w_mkldnn, &n](const Tensors& in) -> Tensors {
    at::Tensor b = in.size() > 2 ? in[2] : at::Tensor();
    if (dnn) {
      OneDnnConv::Done done;
      at::Tensor y = dnn->run(in.at(0), b, {}, done);
      if (y.defined()) return {y};
    }
    return {run_conv(n, c, group, in.at(0), in.at(1), b, w_mkldnn)};
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
      at::Tensor w_mkldnn =
          transposed || dnn_conv ? at::Tensor() : prepack_conv_weight(s, a.c, a.group);
      return [a, transposed, act, eps, dnn, dnn_conv, w_mkldnn, bn_terms,
              &n](const Tensors& in) -> Tensors {
        at::Tensor b = in.size() > 2 ? in[2] : at::Tensor();
        at::Tensor z = in.size() > 3 ? in[3] : at::Tensor();
        OneDnnConv::Done done;
        at::Tensor y;
        if (dnn_conv) y = dnn_conv->run(in.at(0), b, z, done);
        if (!y.defined())
          y = transposed ? conv_transpose(n, a, dnn.get(), in.at(0), in.at(1), b)
                         : run_conv(n, a.c, a.group, in.at(0), in.at(1), b, w_mkldnn);
        if (done.activation) return {y};
        bool has_z = in.size() > 3 && in[3].defined() && !done.add;
        if (in.size() > 7 && !done.batchnorm) {
          // As the BatchNormalization kernel computes it, in place on the convolution's output
          // (with the Relu when nothing comes between), else ATen's call.
          bool relu = !has_z && act.kind == FusedActivation::Kind::Relu;
          if (batchnorm_inference(y, bn_terms, relu, y).defined()) {
            if (relu) return {y};
          } else {
            y = at::batch_norm(y, in[4], in[5], in[6], in[7], false, 0.0, eps, false);
          }
        }
        if (has_z) {
          const at::Tensor& z = in[3];
          if (z.sizes() == y.sizes() && z.scalar_type() == y.scalar_type())
            y.add_(z);
          else
            y = at::add(y, z);  // broadcasting: the Add's own semantics
        }
        act(y);
        return {y};
      };
    });

// 2-D float pooling without indices, where ATen 1.13's NCHW kernels are slow (max_pool2d
// always computes indices: 5-9 ms on ResNet's and Inception's first pools). Measured on
// this machine: oneDNN's pooling on plain NCHW is 5-20x faster while the output plane is
// at most 56x56, and 2x slower than ATen beyond; ATen's channels-last max pooling is 3-5x
// faster than NCHW at every size. Results are bit-identical, except that oneDNN's max skips
// NaNs where PyTorch propagates them (inputs whose sum is not finite avoid it) and its
// average differs with ceil_mode and count_include_pad (avoided).
enum class PoolPath { ATen, OneDnn, ChannelsLast };
PoolPath pool_path(const at::Tensor& x, size_t d, bool is_max, bool want_indices,
                   const std::vector<int64_t>& dilations, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                   bool ceil_mode) {
  if (want_indices || d != 2 || x.scalar_type() != at::kFloat || x.numel() == 0)
    return PoolPath::ATen;
  for (int64_t v : dilations)
    if (v != 1) return PoolPath::ATen;
  int64_t plane = 1;
  for (size_t i = 0; i < 2; ++i) {
    int64_t span = x.size(2 + i) + 2 * pads[i] - kernel[i];
    if (span < 0) return PoolPath::ATen;
    plane *= (ceil_mode ? (span + strides[i] - 1) : span) / strides[i] + 1;
  }
  constexpr int64_t kOneDnnMaxPlane = 56 * 56;
  if (plane <= kOneDnnMaxPlane && (is_max || !ceil_mode) &&
      (!is_max || std::isfinite(x.sum().item<float>())))
    return PoolPath::OneDnn;
  return is_max ? PoolPath::ChannelsLast : PoolPath::ATen;
}

TONNX_KERNEL("MaxPool", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvLike c = parse_pool(n);
  bool col_major = n.attr_i("storage_order", 0) != 0;
  bool want_indices = n.outputs().size() > 1;
  return [c, &n, want_indices, col_major](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    if (x.dim() < 3)
      kernel_fail(n, "X must be [N, C, D1, ...], got rank " + std::to_string(x.dim()));
    size_t d = x.dim() - 2;
    if (c.kernel.size() != d)
      kernel_fail(n, "kernel_shape has " + std::to_string(c.kernel.size()) + " dims but X has " +
                         std::to_string(d) + " spatial dims");
    std::vector<int64_t> p = c.resolve_pads(n, x.sizes().slice(2), c.kernel);
    std::vector<int64_t> pad_arg(p.begin(), p.begin() + d);
    bool is_int = !at::isFloatingType(x.scalar_type());
    at::Tensor xin = is_int ? x.to(at::kDouble) : x;
    // ATen takes symmetric pads of at most half the kernel; pad other cases explicitly.
    bool big_pad = false;
    for (size_t i = 0; i < d; ++i) big_pad = big_pad || 2 * p[i] > c.kernel[i];
    if (want_indices && (big_pad || !symmetric(p)))
      kernel_fail(
          n, "indices with pads larger than half the kernel or asymmetric pads are not supported");
    if (!symmetric(p) || big_pad) {
      xin = at::constant_pad_nd(xin, aten_pad_order(p), -std::numeric_limits<double>::infinity());
      std::fill(pad_arg.begin(), pad_arg.end(), 0);
    }
    at::Tensor y, idx;
    auto st = c.stride_vec(d), dil = c.dilation_vec(d);
    PoolPath path = pool_path(xin, d, true, want_indices, dil, c.kernel, st, pad_arg, c.ceil_mode);
    if (path != PoolPath::OneDnn && d == 2 && !want_indices && dil[0] == 1 && dil[1] == 1) {
      y = max_pool2d_exact(
          xin, {c.kernel[0], c.kernel[1], st[0], st[1], pad_arg[0], pad_arg[1], c.ceil_mode});
      if (y.defined()) return {is_int ? y.to(x.scalar_type()) : y};
    }
    switch (path) {
      case PoolPath::OneDnn:
        return {at::mkldnn_max_pool2d(xin.to_mkldnn(), c.kernel, st, pad_arg, dil, c.ceil_mode)
                    .to_dense()};
      case PoolPath::ChannelsLast:
        return {at::max_pool2d(xin.contiguous(at::MemoryFormat::ChannelsLast), c.kernel, st,
                               pad_arg, dil, c.ceil_mode)
                    .contiguous()};
      case PoolPath::ATen:
        break;
    }
    if (d == 1)
      std::tie(y, idx) = at::max_pool1d_with_indices(xin, c.kernel, st, pad_arg, dil, c.ceil_mode);
    else if (d == 2)
      std::tie(y, idx) = at::max_pool2d_with_indices(xin, c.kernel, st, pad_arg, dil, c.ceil_mode);
    else if (d == 3)
      std::tie(y, idx) = at::max_pool3d_with_indices(xin, c.kernel, st, pad_arg, dil, c.ceil_mode);
    else
      kernel_fail(n, "only 1-3 spatial dims are supported");
    if (is_int) y = y.to(x.scalar_type());
    if (!want_indices) return {y};
    // ATen indexes within each (N, C) plane; ONNX over the whole tensor, row major.
    int64_t plane = 1;
    for (size_t i = 2; i < static_cast<size_t>(x.dim()); ++i) plane *= x.size(i);
    at::Tensor base =
        at::arange(x.size(0) * x.size(1), at::kLong).reshape({x.size(0), x.size(1)}) * plane;
    for (size_t i = 0; i < d; ++i) base = base.unsqueeze(-1);
    if (col_major) {
      // Row-major offset within the plane -> column-major (the last spatial dim slowest...
      // reversed): recompute from the coordinates.
      at::Tensor rem = idx.clone(), out = at::zeros_like(idx);
      std::vector<at::Tensor> coord(d);
      for (size_t i = d; i-- > 0;) {
        coord[i] = at::remainder(rem, x.size(2 + i));
        rem = at::div(rem, x.size(2 + i), "floor");
      }
      for (size_t i = d; i-- > 0;) out = out * x.size(2 + i) + coord[i];
      idx = out;
    }
    return {y, idx + base};
  };
});

// Average pooling as sum(x) / count, so that any padding and count_include_pad work.
TONNX_KERNEL("AveragePool", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ConvLike c = parse_pool(n);
  bool include_pad = n.attr_i("count_include_pad", 0) != 0;
  return [c, &n, include_pad](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    if (x.dim() < 3)
      kernel_fail(n, "X must be [N, C, D1, ...], got rank " + std::to_string(x.dim()));
    size_t d = x.dim() - 2;
    std::vector<int64_t> p = c.resolve_pads(n, x.sizes().slice(2), c.kernel);
    auto st = c.stride_vec(d);
    if (symmetric(p) && c.dilations.empty()) {
      std::vector<int64_t> pad_arg(p.begin(), p.begin() + d);
      bool ok = true;
      for (size_t i = 0; i < d; ++i) ok = ok && pad_arg[i] * 2 <= c.kernel[i];
      if (ok) {
        if (d == 1) return {at::avg_pool1d(x, c.kernel, st, pad_arg, c.ceil_mode, include_pad)};
        if (d == 2) {
          std::vector<int64_t> one(2, 1);
          if (pool_path(x, d, false, false, one, c.kernel, st, pad_arg, c.ceil_mode) ==
              PoolPath::OneDnn)
            return {at::avg_pool2d(x.to_mkldnn(), c.kernel, st, pad_arg, c.ceil_mode, include_pad)
                        .to_dense()};
          at::Tensor y = avg_pool2d_exact(
              x, {c.kernel[0], c.kernel[1], st[0], st[1], pad_arg[0], pad_arg[1], c.ceil_mode},
              include_pad);
          if (y.defined()) return {y};
          return {at::avg_pool2d(x, c.kernel, st, pad_arg, c.ceil_mode, include_pad)};
        }
        if (d == 3) return {at::avg_pool3d(x, c.kernel, st, pad_arg, c.ceil_mode, include_pad)};
      }
    }
    at::Tensor xp = at::constant_pad_nd(x, aten_pad_order(p), 0);
    at::Tensor ones = at::constant_pad_nd(at::ones_like(x.select(1, 0).unsqueeze(1)),
                                          aten_pad_order(p), include_pad ? 1 : 0);
    std::vector<int64_t> zero(d, 0);
    auto pool = [&](const at::Tensor& t) {
      if (d == 1) return at::avg_pool1d(t, c.kernel, st, zero, c.ceil_mode, true);
      if (d == 2) return at::avg_pool2d(t, c.kernel, st, zero, c.ceil_mode, true);
      return at::avg_pool3d(t, c.kernel, st, zero, c.ceil_mode, true);
    };
    return {pool(xp) / pool(ones)};
  };
});

TONNX_KERNEL("GlobalAveragePool", 1, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    std::vector<int64_t> dims;
    for (int64_t i = 2; i < x.dim(); ++i) dims.push_back(i);
    return {x.mean(dims, true)};
  };
});
TONNX_KERNEL("GlobalMaxPool", 1, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    for (int64_t i = 2; i < x.dim(); ++i) x = std::get<0>(x.max(i, true));
    return {x};
  };
});

// ConvTranspose: computed without padding, then cropped by pads (or to output_shape).
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
