// oneDNN's blocked activation layout, nChw16c or nChw8c, as the plan passes it between kernels.
//
// A blocked activation of logical shape [N, C, H, W] (C a multiple of the block width B) is
// the float tensor [N, C/B, H, W, B]: element (n, c, h, w) at [n][c / B][h][w][c % B]. B is
// the width oneDNN's convolutions chose (16 with AVX-512, 8 with AVX2 alone), read off the
// tensor's last dim; they read and write it without the reorders to and from NCHW that ATen
// does around each call. The plan decides at prepare which values may be blocked (blocked_plan.cpp)
// and tells the kernels through KernelSpec::blocked_in / blocked_out; such a value is only ever
// read by kernels that know the layout, and holds either the blocked form or an ordinary 4-D tensor
// (a kernel may decline: it then writes NCHW). The two are told apart by rank: the chain of a
// blocked value starts at a 2-D convolution, so a 5-D tensor there is always the blocked form.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace tonnx::backend {

// The block widths oneDNN's convolutions use for float activations.
constexpr int64_t kBlockWidths[2] = {8, 16};
inline bool blocked_width(int64_t w) { return w == 8 || w == 16; }

// Whether `t`, read where the plan allows the blocked layout (`allowed`), is blocked.
inline bool is_blocked(const at::Tensor& t, bool allowed) {
  return allowed && t.defined() && t.dim() == 5;
}

// [N, C/B, H, W, B] -> [N, C, H, W], contiguous.
inline at::Tensor blocked_to_plain(const at::Tensor& b) {
  // (contiguous(): with one block, reshape alone would return a channels-last view)
  return b.permute({0, 1, 4, 2, 3})
      .reshape({b.size(0), b.size(1) * b.size(4), b.size(2), b.size(3)})
      .contiguous();
}

// [N, C, H, W] (C a multiple of `width`) -> [N, C/width, H, W, width].
inline at::Tensor plain_to_blocked(const at::Tensor& t, int64_t width) {
  return t.view({t.size(0), t.size(1) / width, width, t.size(2), t.size(3)})
      .permute({0, 1, 3, 4, 2})
      .contiguous();
}

// `t` as an ordinary tensor, whichever form it has.
inline at::Tensor plain(const at::Tensor& t, bool allowed) {
  return is_blocked(t, allowed) ? blocked_to_plain(t) : t;
}

// A blocked result handed on: kept blocked where the plan allows it for the output, else NCHW.
inline at::Tensor hand_on(const at::Tensor& y, bool out_allowed) {
  return y.dim() == 5 && !out_allowed ? blocked_to_plain(y) : y;
}

// The blocked tensor as the 4-D channels-last tensor of N * C/B images of B channels each,
// which ATen's channels-last kernels read: every op independent per channel over H and W
// (pooling) computes there what it computes on the NCHW tensor, element for element.
inline at::Tensor blocked_as_channels_last(const at::Tensor& b) {
  return b.view({b.size(0) * b.size(1), b.size(2), b.size(3), b.size(4)}).permute({0, 3, 1, 2});
}

// The inverse, for a channels-last result of that view (n: the batch); undefined where `cl`
// is not laid out channels-last.
inline at::Tensor channels_last_as_blocked(const at::Tensor& cl, int64_t n) {
  if (cl.dim() != 4 || !cl.is_contiguous(at::MemoryFormat::ChannelsLast) ||
      !blocked_width(cl.size(1)) || n <= 0 || cl.size(0) % n != 0)
    return {};
  return cl.permute({0, 2, 3, 1}).view({n, cl.size(0) / n, cl.size(2), cl.size(3), cl.size(1)});
}

}  // namespace tonnx::backend
