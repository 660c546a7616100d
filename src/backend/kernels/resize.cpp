// Resize and Upsample. Every mode is separable: each axis is resampled by a [out, in] weight
// matrix built from the coordinate transform and the interpolation kernel, so nearest,
// linear and cubic share one code path and any rank works.
#include <algorithm>

#include "backend/kernels/kernel.h"

#include <optional>

namespace tonnx::backend {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfHalfPixelForNn,
  TfCropAndResize
};
enum class Rounding { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct ResizeAttrs {
  Mode mode = Mode::Nearest;
  Coord coord = Coord::HalfPixel;
  Rounding nearest = Rounding::RoundPreferFloor;
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false;
};

// An attribute's value among `names` (in the enum's order), failing naming the node.
template <typename E, size_t N>
E parse_choice(const ir::Node& n, const char* attr, const std::string& value,
               const char* const (&names)[N]) {
  std::string known;
  for (size_t i = 0; i < N; ++i) {
    if (value == names[i]) return static_cast<E>(i);
    known += (i ? ", " : "") + std::string(names[i]);
  }
  kernel_fail(n, std::string(attr) + " must be one of " + known + "; got '" + value + "'");
}

Mode parse_mode(const ir::Node& n, std::string value) {
  if (value == "bilinear") value = "linear";  // Upsample's old name
  static const char* const names[] = {"nearest", "linear", "cubic"};
  return parse_choice<Mode>(n, "mode", value, names);
}

// The source coordinate of output i in the modes that divide by the scale, computed in T;
// nullopt for the others.
template <class T>
std::optional<double> by_scale(Coord coord, int64_t i, double out, double scale) {
  const T x = static_cast<T>(i), s = static_cast<T>(scale), half = T(0.5);
  switch (coord) {
    case Coord::HalfPixel:
      return (x + half) / s - half;
    case Coord::PytorchHalfPixel:
      return out > 1 ? (x + half) / s - half : T(0);
    case Coord::Asymmetric:
      return x / s;
    case Coord::TfHalfPixelForNn:
      return (x + half) / s;
    default:
      return std::nullopt;
  }
}

// `out` is in * scale, unrounded: ONNX transforms coordinates with the exact scale. In double,
// or with `in_float` in float, as ONNX Runtime and LibTorch compute a nearest neighbour's
// coordinate: in double, x / 2.9f for output 29 is 9.99999967 (floor 9), in float 10.
double source_coord(const ResizeAttrs& a, int64_t i, int64_t in, double out, double scale,
                    double start, double end, bool in_float) {
  if (auto x = in_float ? by_scale<float>(a.coord, i, out, scale)
                        : by_scale<double>(a.coord, i, out, scale))
    return *x;
  if (a.coord == Coord::AlignCorners)
    return out == 1 ? 0.0 : static_cast<double>(i) * (in - 1) / (out - 1);
  if (out > 1)
    return start * (in - 1) + static_cast<double>(i) * (end - start) * (in - 1) / (out - 1);
  return 0.5 * (start + end) * (in - 1);
}

int64_t nearest_index(Rounding mode, double x) {
  if (mode == Rounding::Floor) return static_cast<int64_t>(std::floor(x));
  if (mode == Rounding::Ceil) return static_cast<int64_t>(std::ceil(x));
  double f = std::floor(x);
  if (x - f == 0.5) return static_cast<int64_t>(mode == Rounding::RoundPreferCeil ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

// Weights [out, in] for one axis, and which outputs fall outside (tf_crop_and_resize).
std::pair<at::Tensor, at::Tensor> axis_weights(const ResizeAttrs& a, int64_t in, int64_t out,
                                               double scale, double start, double end) {
  if (in == 0 && out > 0)
    throw std::invalid_argument("cannot resize an axis of size 0 to " + std::to_string(out));
  at::Tensor m = at::zeros({out, in}, at::kDouble);
  at::Tensor outside = at::zeros({out}, at::kBool);
  auto M = m.accessor<double, 2>();
  auto clampi = [in](int64_t k) { return std::clamp<int64_t>(k, 0, in - 1); };
  for (int64_t i = 0; i < out; ++i) {
    double x = source_coord(a, i, in, in * scale, scale, start, end, a.mode == Mode::Nearest);
    // A NaN or astronomically far coordinate (a scale of 1e-300, a hostile roi) would make
    // the index casts undefined.
    if (!(std::fabs(x) < 1e15))
      throw std::invalid_argument("the scale or roi maps output " + std::to_string(i) +
                                  " to source coordinate " + std::to_string(x));
    if (a.coord == Coord::TfCropAndResize && (x < 0 || x > in - 1)) outside[i] = true;
    if (a.mode == Mode::Nearest) {
      M[i][clampi(nearest_index(a.nearest, x))] = 1;
    } else if (a.mode == Mode::Linear) {
      double xc = std::clamp(x, 0.0, static_cast<double>(in - 1));
      int64_t x0 = static_cast<int64_t>(std::floor(xc));
      double r = xc - x0;
      M[i][clampi(x0)] += 1 - r;
      M[i][clampi(x0 + 1)] += r;
    } else {
      double A = a.cubic_a;
      int64_t x0 = static_cast<int64_t>(std::floor(x));
      double r = x - x0;
      double c[4] = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
                     ((A + 2) * r - (A + 3)) * r * r + 1,
                     ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
                     ((A * (2 - r) - 5 * A) * (2 - r) + 8 * A) * (2 - r) - 4 * A};
      double total = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t idx = x0 - 1 + k;
        if (a.exclude_outside && (idx < 0 || idx >= in)) c[k] = 0;
        total += c[k];
      }
      for (int k = 0; k < 4; ++k)
        M[i][clampi(x0 - 1 + k)] += a.exclude_outside ? c[k] / total : c[k];
    }
  }
  return {m, outside};
}

at::Tensor resize(const ir::Node& n, const ResizeAttrs& a, const at::Tensor& x,
                  std::vector<double> scales, std::vector<int64_t> sizes,
                  const std::vector<double>& roi) {
  int64_t r = x.dim();
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != r)
      kernel_fail(
          n, "sizes has " + std::to_string(sizes.size()) + " values for rank " + std::to_string(r));
    scales.clear();
    for (int64_t d = 0; d < r; ++d) scales.push_back(static_cast<double>(sizes[d]) / x.size(d));
  } else {
    if (static_cast<int64_t>(scales.size()) != r)
      kernel_fail(n, "scales has " + std::to_string(scales.size()) + " values for rank " +
                         std::to_string(r));
    for (int64_t d = 0; d < r; ++d) {
      if (!(scales[d] > 0) || !std::isfinite(scales[d]))
        kernel_fail(n, "scales[" + std::to_string(d) + "] is " + std::to_string(scales[d]) +
                           "; scales must be positive and finite");
      // In float, as ONNX Runtime computes it (and as the exporter declared it): 5 * 1.4f is
      // 7 in float, 6.99999988 in double.
      double size = std::floor(
          static_cast<double>(static_cast<float>(x.size(d)) * static_cast<float>(scales[d])));
      if (size > static_cast<double>(int64_t{1} << 40))
        kernel_fail(n, "scales[" + std::to_string(d) + "] = " + std::to_string(scales[d]) +
                           " makes axis " + std::to_string(d) + " of size " +
                           std::to_string(x.size(d)) + " too large (" + std::to_string(size) +
                           " elements)");
      sizes.push_back(static_cast<int64_t>(size));
    }
  }
  at::ScalarType st = x.scalar_type();
  at::Tensor y = x.to(at::kDouble);
  at::Tensor outside_any = at::zeros(sizes, at::kBool);
  for (int64_t d = 0; d < r; ++d) {
    if (sizes[d] == x.size(d) && scales[d] == 1.0 && a.coord != Coord::TfCropAndResize) continue;
    double start = roi.size() == static_cast<size_t>(2 * r) ? roi[d] : 0.0;
    double end = roi.size() == static_cast<size_t>(2 * r) ? roi[d + r] : 1.0;
    auto [m, outside] = axis_weights(a, x.size(d), sizes[d], scales[d], start, end);
    y = at::matmul(y.movedim(d, -1), m.t()).movedim(-1, d);
    std::vector<int64_t> shape(r, 1);
    shape[d] = sizes[d];
    outside_any = outside_any | outside.reshape(shape);
  }
  if (a.coord == Coord::TfCropAndResize)
    y = at::where(outside_any, at::full({}, a.extrapolation, at::kDouble), y);
  if (!at::isFloatingType(st)) y = at::round(y);
  return y.to(st);
}

std::vector<double> to_doubles(const at::Tensor& t) {
  at::Tensor c = t.to(at::kDouble).contiguous().reshape({-1});
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Resize-18's axes: scales, sizes and roi given for `axes` only become ones for every axis (a
// scale of 1, the input's size, the whole extent [0, 1]).
void expand_to_all_axes(const ir::Node& n, const std::vector<int64_t>& axes, const at::Tensor& x,
                        std::vector<double>& roi, std::vector<double>& scales,
                        std::vector<int64_t>& sizes) {
  int64_t r = x.dim();
  size_t k = axes.size();
  std::vector<int64_t> at_axis;
  for (int64_t v : axes) {
    int64_t d = norm_axis(n, v, r);
    if (std::find(at_axis.begin(), at_axis.end(), d) != at_axis.end())
      kernel_fail(n, "axes names dim " + std::to_string(d) + " twice");
    at_axis.push_back(d);
  }
  auto check = [&](size_t got, size_t want, const char* what) {
    if (got != want)
      kernel_fail(n, std::string(what) + " has " + std::to_string(got) + " values for " +
                         std::to_string(k) + " axes; expected " + std::to_string(want));
  };
  if (!scales.empty()) {
    check(scales.size(), k, "scales");
    std::vector<double> all(r, 1.0);
    for (size_t i = 0; i < k; ++i) all[at_axis[i]] = scales[i];
    scales = all;
  }
  if (!sizes.empty()) {
    check(sizes.size(), k, "sizes");
    std::vector<int64_t> all = x.sizes().vec();
    for (size_t i = 0; i < k; ++i) all[at_axis[i]] = sizes[i];
    sizes = all;
  }
  if (!roi.empty()) {
    check(roi.size(), 2 * k, "roi");
    std::vector<double> all(2 * r, 0.0);
    for (int64_t d = 0; d < r; ++d) all[r + d] = 1.0;
    for (size_t i = 0; i < k; ++i) {
      all[at_axis[i]] = roi[i];
      all[r + at_axis[i]] = roi[k + i];
    }
    roi = all;
  }
}

TONNX_KERNEL("Resize", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ResizeAttrs a;
  a.mode = parse_mode(n, n.attr_s("mode", "nearest"));
  bool v10 = s.opset < 11;
  static const char* const coords[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                       "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  static const char* const roundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
  a.coord =
      v10 ? Coord::Asymmetric
          : parse_choice<Coord>(n, "coordinate_transformation_mode",
                                n.attr_s("coordinate_transformation_mode", "half_pixel"), coords);
  a.nearest =
      v10 ? Rounding::Floor
          : parse_choice<Rounding>(n, "nearest_mode",
                                   n.attr_s("nearest_mode", "round_prefer_floor"), roundings);
  a.cubic_a = n.attr_f("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.attr_i("exclude_outside", 0) != 0;
  a.extrapolation = n.attr_f("extrapolation_value", 0.0f);
  // Opset 18's additions: scales, sizes and roi for the listed axes only, which this kernel
  // takes; an antialiasing filter for downsampling and sizes that keep the aspect ratio, which
  // it refuses by name (half_pixel_symmetric, opset 19, is refused with the other modes).
  if (n.attr_i("antialias", 0) != 0)
    kernel_fail(n, "antialias=1 (opset 18) is not implemented by tonnx's backend");
  std::string policy = n.attr_s("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    kernel_fail(n, "keep_aspect_ratio_policy \"" + policy +
                       "\" (opset 18) is not implemented by tonnx's backend; only \"stretch\"");
  std::vector<int64_t> axes = n.attr_ints("axes");
  return [&n, a, v10, axes](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (v10) return {resize(n, a, x, to_doubles(in.at(1)), {}, {})};
    std::vector<double> roi, scales;
    std::vector<int64_t> sizes;
    if (in.size() > 1 && in[1].defined()) roi = to_doubles(in[1]);
    if (in.size() > 2 && in[2].defined()) scales = to_doubles(in[2]);
    if (in.size() > 3 && in[3].defined()) sizes = to_int_vector(in[3]);
    if (!axes.empty()) expand_to_all_axes(n, axes, x, roi, scales, sizes);
    return {resize(n, a, x, scales, sizes, roi)};
  };
});

TONNX_KERNEL("Upsample", 1, 9, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  ResizeAttrs a;
  a.mode = parse_mode(n, n.attr_s("mode", "nearest"));
  a.coord = Coord::Asymmetric;
  a.nearest = Rounding::Floor;
  std::vector<double> attr_scales;
  for (float f : n.attr_floats("scales")) attr_scales.push_back(f);
  if (s.opset < 7) {  // height_scale / width_scale on NCHW
    attr_scales = {1.0, 1.0, n.attr_f("height_scale", 1.0f), n.attr_f("width_scale", 1.0f)};
  }
  bool from_input = s.opset >= 9;
  return [&n, a, attr_scales, from_input](const Tensors& in) -> Tensors {
    std::vector<double> sc = from_input ? to_doubles(in.at(1)) : attr_scales;
    return {resize(n, a, in.at(0), sc, {}, {})};
  };
});

}  // namespace
}  // namespace tonnx::backend
