// Signal kernels (opset 17): window functions, DFT, STFT, MelWeightMatrix. Complex values are
// real tensors with a trailing dim of 2 (real, imaginary), as ONNX specifies.
#include <c10/util/complex.h>

#include <algorithm>

#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

at::ScalarType out_type(const ir::Node& n) {
  return ir::scalar_type_from_dtype(static_cast<ir::DType>(n.attr_i("output_datatype", 1)));
}

KernelFactory window(std::vector<double> coeffs) {
  return [coeffs](const KernelSpec& s) -> Kernel {
    const ir::Node& n = s.node;
    bool periodic = n.attr_i("periodic", 1) != 0;
    at::ScalarType st = out_type(n);
    return [coeffs, periodic, st](const Tensors& in) -> Tensors {
      int64_t size = in.at(0).item<int64_t>();
      double N = static_cast<double>(periodic ? size : size - 1);
      at::Tensor k = at::arange(size, at::kDouble);
      at::Tensor w = at::zeros({size}, at::kDouble);
      for (size_t i = 0; i < coeffs.size(); ++i)
        w = w + coeffs[i] * at::cos(2 * M_PI * static_cast<double>(i) * k / N) * (i % 2 ? -1 : 1);
      return {w.to(st)};
    };
  };
}
TONNX_KERNEL("HannWindow", 17, kAnyOpset, window({0.5, 0.5}));
TONNX_KERNEL("HammingWindow", 17, kAnyOpset, window({25.0 / 46, 21.0 / 46}));
TONNX_KERNEL("BlackmanWindow", 17, kAnyOpset, window({0.42, 0.5, 0.08}));

at::Tensor to_complex(const at::Tensor& x) {
  at::Tensor d = x.to(at::kDouble);
  if (d.size(-1) == 1) return at::complex(d.select(-1, 0), at::zeros_like(d.select(-1, 0)));
  return at::complex(d.select(-1, 0), d.select(-1, 1));
}
at::Tensor from_complex(const at::Tensor& c, at::ScalarType st) {
  return at::view_as_real(c.contiguous()).to(st);
}

// DFT-17: axis an attribute (default 1); DFT-20: an optional input (default -2).
TONNX_KERNEL("DFT", 17, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t attr_axis = n.attr_i("axis", 1);
  bool axis_input = s.opset >= 20;
  bool inverse = n.attr_i("inverse", 0) != 0, onesided = n.attr_i("onesided", 0) != 0;
  if (inverse && onesided)
    kernel_fail(n,
                "inverse=1 with onesided=1 (a real signal from half a spectrum) is not "
                "implemented by tonnx's backend");
  return [&n, attr_axis, axis_input, inverse, onesided](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t axis = attr_axis;
    if (axis_input) {
      axis = -2;
      if (in.size() > 2 && in[2].defined()) {
        if (in[2].numel() != 1) kernel_fail(n, "axis must be a scalar");
        axis = in[2].item<int64_t>();
      }
    }
    if (x.dim() < 2 || (x.size(-1) != 1 && x.size(-1) != 2))
      kernel_fail(n,
                  "input must have a last dim of 1 (real) or 2 (complex) after the signal's "
                  "dims, got shape " +
                      c10::str(x.sizes()));
    // A negative axis counts the last (real, imaginary) dim, as opset 20 defines it.
    int64_t a = axis < 0 ? axis + x.dim() : axis;
    if (a < 0 || a > x.dim() - 2)
      kernel_fail(n, "axis " + std::to_string(axis) + " is not a signal dim of an input of rank " +
                         std::to_string(x.dim()));
    at::Tensor c = to_complex(x);
    int64_t len = in.size() > 1 && in[1].defined() ? in[1].item<int64_t>() : c.size(a);
    at::Tensor y = inverse ? at::fft_ifft(c, len, a) : at::fft_fft(c, len, a);
    if (onesided) y = y.narrow(a, 0, len / 2 + 1);
    return {from_complex(y, x.scalar_type())};
  };
});

TONNX_KERNEL("STFT", 17, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool onesided = n.attr_i("onesided", 1) != 0;
  return [&n, onesided](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    at::Tensor c = to_complex(x);  // [batch, length]
    int64_t step = in.at(1).item<int64_t>();
    at::Tensor win = in.size() > 2 && in[2].defined() ? in[2].to(at::kDouble) : at::Tensor();
    int64_t flen = 0;
    if (in.size() > 3 && in[3].defined())
      flen = in[3].item<int64_t>();
    else if (win.defined())
      flen = win.size(0);
    else
      kernel_fail(n, "needs a window or a frame_length input");
    if (step < 1 || flen < 1 || flen > c.size(1))
      kernel_fail(n, "frame_step must be >= 1 and frame_length in 1.." + std::to_string(c.size(1)) +
                         ", got " + std::to_string(step) + " and " + std::to_string(flen));
    if (!win.defined()) win = at::ones({flen}, at::kDouble);
    int64_t frames = (c.size(1) - flen) / step + 1;
    at::Tensor f = c.unfold(1, flen, step).narrow(1, 0, frames) * win;
    at::Tensor y = at::fft_fft(f, flen, -1);
    if (onesided) y = y.narrow(-1, 0, flen / 2 + 1);
    return {from_complex(y, x.scalar_type())};
  };
});

TONNX_KERNEL("MelWeightMatrix", 17, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  at::ScalarType st = out_type(s.node);
  return [&n, st](const Tensors& in) -> Tensors {
    int64_t bins = in.at(0).item<int64_t>(), dft = in.at(1).item<int64_t>();
    int64_t rate = in.at(2).item<int64_t>();
    double lo = in.at(3).item<double>(), hi = in.at(4).item<double>();
    constexpr int64_t kMax = int64_t{1} << 24;
    if (bins < 1 || bins > kMax || dft < 1 || dft > kMax || rate < 1 || !std::isfinite(lo) ||
        !std::isfinite(hi) || lo < 0 || hi < lo)
      kernel_fail(n,
                  "num_mel_bins and dft_length must be in 1..2^24, sample_rate >= 1 and "
                  "0 <= lower_edge_hertz <= upper_edge_hertz, finite");
    int64_t spec_bins = dft / 2 + 1;
    auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
    double lo_mel = mel(lo), step = (mel(hi) - lo_mel) / static_cast<double>(bins + 2);
    std::vector<int64_t> f(bins + 2);
    for (int64_t i = 0; i < bins + 2; ++i) {
      double hz = 700 * (std::pow(10.0, (i * step + lo_mel) / 2595) - 1);
      // Clamped far outside the spectrum only so that the cast is defined.
      double bin = std::floor((dft + 1) * hz / static_cast<double>(rate));
      f[i] = static_cast<int64_t>(std::clamp(bin, -4.0e18, 4.0e18));
    }
    at::Tensor out = at::zeros({spec_bins, bins}, at::kDouble);
    auto o = out.accessor<double, 2>();
    for (int64_t i = 0; i < bins; ++i) {
      int64_t l = f[i], c = f[i + 1], u = f[i + 2];
      if (c == l) {
        if (c >= 0 && c < spec_bins) o[c][i] = 1;
      } else {
        // Only the bins inside the spectrum: the loops stay as long as the output.
        for (int64_t j = std::max<int64_t>(l, 0); j <= std::min(c, spec_bins - 1); ++j)
          o[j][i] = static_cast<double>(j - l) / static_cast<double>(c - l);
      }
      if (u > c)
        for (int64_t j = std::max<int64_t>(c, 0); j < std::min(u, spec_bins); ++j)
          o[j][i] = static_cast<double>(u - j) / static_cast<double>(u - c);
    }
    return {out.to(st)};
  };
});

}  // namespace
}  // namespace tonnx::backend
