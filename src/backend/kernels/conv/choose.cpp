// The choice of a convolution's path: see choose.h.
#include "backend/kernels/conv/choose.h"

#include <utility>
#include <vector>

namespace tonnx::backend {
using namespace conv_attrs;  // NOLINT: ConvLike and its helpers

namespace {

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

// oneDNN's convolution for a 2-D Conv whose weight is an initializer and whose pads do not
// depend on the input shape (SAME_* stays on ATen). `f` carries FusedConv's stages.
std::shared_ptr<const OneDnnConv> onednn_direct(const KernelSpec& s, const ConvLike& c,
                                                int64_t group, OneDnnConv::Fused f,
                                                std::string& why) {
  const at::Tensor* w = constant_2d_weight(s, c);
  if (!s.choices.onednn_conv)
    return why = "oneDNN direct is off (PrepareOptions::onednn_conv)", nullptr;
  if (!w) return why = "W is not the initializer of a 2-D convolution", nullptr;
  if (c.auto_pad != AutoPad::NotSet && c.auto_pad != AutoPad::Valid)
    return why = "SAME_* pads depend on the input", nullptr;
  OneDnnConv::Params p{c.strides, c.dilations, {}, {}, group};
  if (c.auto_pad != AutoPad::Valid && !c.split_pads(2, p.pads_begin, p.pads_end))
    return why = "pads do not fit 2 spatial dims", nullptr;
  auto dnn = OneDnnConv::make(*w, std::move(p), std::move(f));
  if (!dnn) why = "oneDNN direct does not take this weight or these parameters";
  return dnn;
}

// The blocked-layout convolution for a node whose input or output the plan may keep blocked,
// or which may take Winograd: explicit pads, the same on both sides (SAME_* pads depend on the
// input).
std::shared_ptr<const OneDnnBlockedConv> onednn_blocked(const KernelSpec& s, const ConvLike& c,
                                                        int64_t group, std::string& why) {
  const at::Tensor* w = constant_2d_weight(s, c);
  if (!w) return why += "; W is not the initializer of a 2-D convolution", nullptr;
  OneDnnBlockedConv::Params p{c.strides, c.dilations, {0, 0}, group, s.choices.winograd};
  // Outside a blocked chain it runs the convolutions that may take Winograd (reading and
  // writing NCHW there).
  bool winograd = s.choices.winograd && OneDnnBlockedConv::winograd_weight(*w, p);
  if (!s.blocked_input(0) && !s.blocked_out && !winograd)
    return why += "; the plan keeps neither X nor Y blocked, and no Winograd for this weight",
           nullptr;
  if (c.auto_pad == AutoPad::NotSet && !c.pads.empty()) {
    if (c.pads.size() != 4 || !symmetric(c.pads))
      return why += "; pads differ between the two sides", nullptr;
    p.pads = {c.pads[0], c.pads[1]};
  } else if (c.auto_pad != AutoPad::NotSet && c.auto_pad != AutoPad::Valid) {
    return why += "; SAME_* pads depend on the input", nullptr;
  }
  auto blocked = OneDnnBlockedConv::make(*w, std::move(p));  // (it checks dtype and lengths)
  if (!blocked) why += "; oneDNN blocked does not take this weight or these parameters";
  return blocked;
}

}  // namespace

const char* conv_path_name(ConvChoice::Path p) {
  switch (p) {
    case ConvChoice::Path::onednn_direct:
      return "oneDNN direct";
    case ConvChoice::Path::onednn_blocked:
      return "oneDNN blocked";
    case ConvChoice::Path::aten_prepacked:
      return "ATen, W prepacked";
    case ConvChoice::Path::aten:
      return "ATen";
    case ConvChoice::Path::onednn_deconv:
      return "oneDNN deconvolution";
  }
  return "?";
}

std::string ConvChoice::describe() const {
  return std::string(conv_path_name(path)) + (why.empty() ? "" : ": " + why);
}

ConvChoice choose_conv(const KernelSpec& s, const ConvLike& c, int64_t group,
                       OneDnnConv::Fused fused) {
  ConvChoice r;
  r.direct = onednn_direct(s, c, group, std::move(fused), r.why);
  if (r.direct) {
    r.path = ConvChoice::Path::onednn_direct;
    r.why = "PrepareOptions::onednn_conv";
    return r;
  }
  std::string not_direct = r.why;
  r.blocked = onednn_blocked(s, c, group, r.why);
  if (r.blocked) {
    r.path = ConvChoice::Path::onednn_blocked;
    r.why = not_direct + (s.blocked_input(0) || s.blocked_out ? "; the plan keeps X or Y blocked"
                                                              : "; a Winograd candidate");
    r.why += "; ATen where the call does not fit or ATen would not pick oneDNN";
    return r;
  }
  r.w_prepacked = prepack_conv_weight(s, c, group);
  if (r.w_prepacked.defined()) {
    r.path = ConvChoice::Path::aten_prepacked;
    r.why += "; ATen's oneDNN call where ATen picks it";
    return r;
  }
  r.path = ConvChoice::Path::aten;
  r.why +=
      "; W is not prepacked for ATen's oneDNN call (not a non-empty float 2-D initializer, "
      "a LibTorch without oneDNN, or oneDNN refused it)";
  return r;
}

ConvChoice choose_conv_transpose(const KernelSpec& s, const ConvTransposeAttrs& a) {
  ConvChoice r;
  r.path = ConvChoice::Path::aten;
  if (s.constant_inputs.size() < 2 || !s.constant_inputs[1].defined()) {
    r.why = "W is not an initializer";
    return r;
  }
  if (!a.output_shape.empty() || a.c.auto_pad != AutoPad::NotSet) {
    r.why = "auto_pad or output_shape resolve per input shape";
    return r;
  }
  const at::Tensor& w = s.constant_inputs[1];
  size_t d = w.dim() > 2 ? static_cast<size_t>(w.dim() - 2) : 0;
  OneDnnDeconv::Params p{a.c.strides, a.c.dilations, {}, {}, a.output_padding};
  if (!a.c.split_pads(d, p.pads_begin, p.pads_end)) {
    r.why = "pads do not fit the weight's spatial dims";
    return r;
  }
  r.deconv = OneDnnDeconv::make(w, a.group, std::move(p));
  if (!r.deconv) {
    r.why = "oneDNN's deconvolution does not take this weight or these parameters";
    return r;
  }
  r.path = ConvChoice::Path::onednn_deconv;
  r.why = "explicit pads and W an initializer; ATen where the call does not fit";
  return r;
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

at::Tensor conv_transpose(const ir::Node& n, const ConvTransposeAttrs& a, const OneDnnDeconv* dnn,
                          const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  if (dnn) {
    at::Tensor y = dnn->run(x, b);
    if (y.defined()) return y;
  }
  return run_conv_transpose(n, a, x, w, b);
}

}  // namespace tonnx::backend
