// Convolutions on ATen: see aten_conv.h.
#include "backend/kernels/conv/aten_conv.h"

#include <ATen/native/ConvUtils.h>

#include <algorithm>
#include <atomic>

#include "backend/kernels/conv/onednn_conv.h"

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
}  // namespace

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

int64_t conv_group(const ir::Node& n) {
  int64_t group = n.attr_i("group", 1);
  if (group < 1 || group > (int64_t{1} << 31))
    kernel_fail(n, "group is " + std::to_string(group) + "; it must be at least 1");
  return group;
}

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

uint64_t prepacked_conv_runs() { return g_prepacked_conv_runs.load(); }

}  // namespace tonnx::backend
