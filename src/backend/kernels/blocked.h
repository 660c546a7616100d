// oneDNN's blocked activation layout, nChw16c, as the plan passes it between kernels.
//
// A blocked activation of logical shape [N, C, H, W] (C a multiple of 16) is the float tensor
// [N, C/16, H, W, 16]: element (n, c, h, w) at [n][c / 16][h][w][c % 16]. oneDNN's
// convolutions read and write it without the reorders to and from NCHW that ATen does around
// each call. The plan decides at prepare which values may be blocked (layout.cpp) and tells
// the kernels through KernelSpec::blocked_in / blocked_out; such a value is only ever read by
// kernels that know the layout, and holds either the blocked form or an ordinary 4-D tensor
// (a kernel may decline: it then writes NCHW). The two are told apart by rank: the chain of a
// blocked value starts at a 2-D convolution, so a 5-D tensor there is always the blocked form.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace tonnx::backend {

// Whether `t`, read where the plan allows the blocked layout (`allowed`), is blocked.
inline bool is_blocked(const at::Tensor& t, bool allowed) {
  return allowed && t.defined() && t.dim() == 5;
}

// [N, C/16, H, W, 16] -> [N, C, H, W], contiguous.
inline at::Tensor blocked_to_plain(const at::Tensor& b) {
  // (contiguous(): with one block, reshape alone would return a channels-last view)
  return b.permute({0, 1, 4, 2, 3})
      .reshape({b.size(0), b.size(1) * 16, b.size(2), b.size(3)})
      .contiguous();
}

// [N, C, H, W] (C a multiple of 16) -> [N, C/16, H, W, 16].
inline at::Tensor plain_to_blocked(const at::Tensor& t) {
  return t.view({t.size(0), t.size(1) / 16, 16, t.size(2), t.size(3)})
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

// The blocked tensor as the 4-D channels-last tensor of N * C/16 images of 16 channels each,
// which ATen's channels-last kernels read: every op independent per channel over H and W
// (pooling) computes there what it computes on the NCHW tensor, element for element.
inline at::Tensor blocked_as_channels_last(const at::Tensor& b) {
  return b.view({b.size(0) * b.size(1), b.size(2), b.size(3), 16}).permute({0, 3, 1, 2});
}

// The inverse, for a channels-last result of that view (n: the batch); undefined where `cl`
// is not laid out channels-last.
inline at::Tensor channels_last_as_blocked(const at::Tensor& cl, int64_t n) {
  if (cl.dim() != 4 || !cl.is_contiguous(at::MemoryFormat::ChannelsLast) || cl.size(1) != 16 ||
      n <= 0 || cl.size(0) % n != 0)
    return {};
  return cl.permute({0, 2, 3, 1}).view({n, cl.size(0) / n, cl.size(2), cl.size(3), 16});
}

}  // namespace tonnx::backend
