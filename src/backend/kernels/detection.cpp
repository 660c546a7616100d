// Sampling and detection kernels: GridSample (16, 20), AffineGrid (20), MaxUnpool,
// NonMaxSuppression, RoiAlign, MaxRoiPool (the random ops are in random.cpp).
#include <array>

#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

// GridSample-16 (modes bilinear, nearest, bicubic) and 20 (renamed linear, nearest, cubic; any
// number of spatial dims): ATen samples 2-D and 3-D grids (3-D without cubic), and the kernel
// refuses the others by name.
KernelFactory grid_sample(const std::array<const char*, 3> modes) {
  return [modes](const KernelSpec& s) -> Kernel {
    const ir::Node& n = s.node;
    std::string mode = n.attr_s("mode", modes[0]), pad = n.attr_s("padding_mode", "zeros");
    bool align = n.attr_i("align_corners", 0) != 0;
    int64_t m = -1;
    for (int64_t i = 0; i < 3; ++i)
      if (mode == modes[i]) m = i;
    int64_t p = pad == "zeros" ? 0 : pad == "border" ? 1 : pad == "reflection" ? 2 : -1;
    if (m < 0)
      kernel_fail(n, std::string("mode must be ") + modes[0] + ", " + modes[1] + " or " + modes[2] +
                         "; got " + mode);
    if (p < 0) kernel_fail(n, "padding_mode must be zeros, border or reflection; got " + pad);
    return [&n, m, p, align](const Tensors& in) -> Tensors {
      const at::Tensor& x = in.at(0);
      const at::Tensor& grid = in.at(1);
      if (x.dim() != 4 && x.dim() != 5)
        kernel_fail(n, "X of rank " + std::to_string(x.dim()) +
                           ": tonnx's backend samples 2-D and 3-D grids only (X of rank 4 or 5)");
      if (x.dim() == 5 && m == 2) kernel_fail(n, "cubic mode on a 3-D grid is not implemented");
      if (grid.dim() != x.dim() || grid.size(0) != x.size(0) || grid.size(-1) != x.dim() - 2)
        kernel_fail(n, "grid must be [N, spatial..., " + std::to_string(x.dim() - 2) +
                           "] for X of shape " + c10::str(x.sizes()) + ", got " +
                           c10::str(grid.sizes()));
      return {at::grid_sampler(x, grid.to(x.scalar_type()), m, p, align)};
    };
  };
}
TONNX_KERNEL("GridSample", 16, 19, grid_sample({"bilinear", "nearest", "bicubic"}));
TONNX_KERNEL("GridSample", 20, kAnyOpset, grid_sample({"linear", "nearest", "cubic"}));

// AffineGrid-20: theta [N, 2, 3] or [N, 3, 4] and size (N, C, H, W) or (N, C, D, H, W) -> the
// sampling grid, as PyTorch's affine_grid.
TONNX_KERNEL("AffineGrid", 20, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool align = n.attr_i("align_corners", 0) != 0;
  return [&n, align](const Tensors& in) -> Tensors {
    const at::Tensor& theta = in.at(0);
    std::vector<int64_t> size = to_int_vector(in.at(1));
    size_t d = size.size() == 4 ? 2 : size.size() == 5 ? 3 : 0;
    if (d == 0)
      kernel_fail(
          n, "size must have 4 or 5 values (N, C, [D,] H, W), got " + std::to_string(size.size()));
    if (theta.dim() != 3 || theta.size(0) != size[0] || theta.size(1) != static_cast<int64_t>(d) ||
        theta.size(2) != static_cast<int64_t>(d) + 1)
      kernel_fail(n, "theta must be [" + std::to_string(size[0]) + ", " + std::to_string(d) + ", " +
                         std::to_string(d + 1) + "] for size " + c10::str(size) + ", got " +
                         c10::str(theta.sizes()));
    for (int64_t v : size)
      if (v < 0) kernel_fail(n, "size " + c10::str(size) + " has a negative value");
    checked_numel(n, size, "the grid's size");
    return {at::affine_grid_generator(theta, size, align)};
  };
});

TONNX_KERNEL("MaxUnpool", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  std::vector<int64_t> k = n.attr_ints("kernel_shape"), st = n.attr_ints("strides"),
                       pads = n.attr_ints("pads");
  for (const auto* v : {&k, &st})
    for (int64_t x : *v)
      if (x < 1) kernel_fail(n, "kernel_shape and strides must be >= 1, got " + c10::str(*v));
  for (int64_t x : pads)
    if (x < 0) kernel_fail(n, "pads must be >= 0, got " + c10::str(pads));
  return [&n, k, st, pads](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (x.dim() < 3)
      kernel_fail(n, "X must be [N, C, D1, ...], got rank " + std::to_string(x.dim()));
    size_t d = static_cast<size_t>(x.dim() - 2);
    if (k.size() != d || (!st.empty() && st.size() != d) || (!pads.empty() && pads.size() != 2 * d))
      kernel_fail(n, "kernel_shape, strides and pads must have " + std::to_string(d) + ", " +
                         std::to_string(d) + " and " + std::to_string(2 * d) +
                         " values for X of rank " + std::to_string(x.dim()));
    if (in.at(1).sizes() != x.sizes())
      kernel_fail(
          n, "I must have X's shape " + c10::str(x.sizes()) + ", got " + c10::str(in[1].sizes()));
    std::vector<int64_t> shape{x.size(0), x.size(1)};
    for (size_t i = 0; i < d; ++i) {
      int64_t s_i = st.empty() ? 1 : st[i];
      int64_t pb = pads.empty() ? 0 : pads[i], pe = pads.empty() ? 0 : pads[i + d];
      const char* what = "the output size";
      int64_t size = checked_add(
          n, checked_mul(n, std::max<int64_t>(x.size(2 + i) - 1, 0), s_i, what), k[i], what);
      if (pb > size || pe > size - pb)
        kernel_fail(n, "pads " + c10::str(pads) + " leave no output along spatial axis " +
                           std::to_string(i));
      shape.push_back(size - pb - pe);
    }
    // Indices address the default output shape; an explicit output_shape pads (or crops)
    // it at the end of each spatial dim, as ONNX's reference does.
    at::Tensor y = at::zeros({checked_numel(n, shape, "the output size")}, x.options());
    y.index_put_({in.at(1).reshape({-1}).to(at::kLong)}, x.reshape({-1}));
    y = y.reshape(shape);
    if (in.size() > 2 && in[2].defined()) {
      std::vector<int64_t> want = to_int_vector(in[2]), p;
      if (want.size() != shape.size())
        kernel_fail(n, "output_shape has " + std::to_string(want.size()) + " values; expected " +
                           std::to_string(shape.size()));
      for (size_t i = want.size(); i-- > 2;) {
        p.push_back(0);
        p.push_back(want[i] - shape[i]);
      }
      y = at::constant_pad_nd(y, p, 0);
    }
    return {y};
  };
});

double iou(const float* a, const float* b, bool center) {
  auto corners = [center](const float* p, double& y1, double& x1, double& y2, double& x2) {
    if (center) {
      x1 = p[0] - p[2] / 2, x2 = p[0] + p[2] / 2, y1 = p[1] - p[3] / 2, y2 = p[1] + p[3] / 2;
    } else {
      y1 = std::min(p[0], p[2]), y2 = std::max(p[0], p[2]);
      x1 = std::min(p[1], p[3]), x2 = std::max(p[1], p[3]);
    }
  };
  double ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
  corners(a, ay1, ax1, ay2, ax2);
  corners(b, by1, bx1, by2, bx2);
  double ih = std::max(0.0, std::min(ay2, by2) - std::max(ay1, by1));
  double iw = std::max(0.0, std::min(ax2, bx2) - std::max(ax1, bx1));
  double inter = ih * iw;
  double uni = (ay2 - ay1) * (ax2 - ax1) + (by2 - by1) * (bx2 - bx1) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

TONNX_KERNEL("NonMaxSuppression", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool center = n.attr_i("center_point_box", 0) != 0;
  return [&n, center](const Tensors& in) -> Tensors {
    at::Tensor boxes = in.at(0).to(at::kFloat).contiguous();
    at::Tensor scores = in.at(1).to(at::kFloat).contiguous();
    // boxes [B, N, 4] and scores [B, C, N] must agree before any pointer is computed.
    if (boxes.dim() != 3 || boxes.size(2) != 4)
      kernel_fail(
          n, "boxes must be [num_batches, spatial_dimension, 4], got " + c10::str(boxes.sizes()));
    if (scores.dim() != 3 || scores.size(0) != boxes.size(0) || scores.size(2) != boxes.size(1))
      kernel_fail(n, "scores must be [num_batches, num_classes, spatial_dimension] = [" +
                         std::to_string(boxes.size(0)) + ", C, " + std::to_string(boxes.size(1)) +
                         "] for boxes " + c10::str(boxes.sizes()) + ", got " +
                         c10::str(scores.sizes()));
    auto opt = [&](size_t i) { return in.size() > i && in[i].defined() && in[i].numel() > 0; };
    int64_t max_out = opt(2) ? in[2].item<int64_t>() : 0;
    float iou_th = opt(3) ? in[3].item<float>() : 0.0f;
    bool has_score_th = opt(4);
    float score_th = has_score_th ? in[4].item<float>() : 0.0f;
    int64_t B = scores.size(0), C = scores.size(1), N = scores.size(2);
    std::vector<int64_t> out;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const float* sc = scores.data_ptr<float>() + (b * C + c) * N;
        const float* bx = boxes.data_ptr<float>() + b * N * 4;
        std::vector<int64_t> order;
        for (int64_t i = 0; i < N; ++i)
          if (!has_score_th || sc[i] > score_th) order.push_back(i);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
        std::vector<int64_t> kept;
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool ok = true;
          for (int64_t j : kept) ok = ok && iou(bx + i * 4, bx + j * 4, center) <= iou_th;
          if (ok) kept.push_back(i);
        }
        for (int64_t i : kept) out.insert(out.end(), {b, c, i});
      }
    return {at::tensor(out, at::kLong).reshape({-1, 3})};
  };
});

// X must be [N, C, H, W] and rois [R, cols]; each batch index in [0, N). Fails naming the node.
void check_rois(const ir::Node& n, const at::Tensor& x, const at::Tensor& rois, int64_t cols,
                const std::vector<int64_t>& batch) {
  if (x.dim() != 4)
    kernel_fail(n, "input X must be 4-D [N, C, H, W], got " + std::to_string(x.dim()) + "-D");
  if (rois.dim() != 2 || rois.size(1) != cols)
    kernel_fail(
        n, "rois must be [num_rois, " + std::to_string(cols) + "], got " + c10::str(rois.sizes()));
  if (static_cast<int64_t>(batch.size()) != rois.size(0))
    kernel_fail(n, "there are " + std::to_string(rois.size(0)) + " rois but " +
                       std::to_string(batch.size()) + " batch indices");
  for (size_t r = 0; r < batch.size(); ++r)
    if (batch[r] < 0 || batch[r] >= x.size(0))
      kernel_fail(n, "roi " + std::to_string(r) + " has batch index " + std::to_string(batch[r]) +
                         ", out of range for a batch of " + std::to_string(x.size(0)));
}

// MaxRoiPool (Caffe2's and torchvision's RoIPool): box corners rounded to the feature grid,
// each of the pooled_shape bins the maximum of its cells, 0 for an empty bin.
TONNX_KERNEL("MaxRoiPool", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  if (!n.has_attr("pooled_shape")) kernel_fail(n, "the pooled_shape attribute is required");
  std::vector<int64_t> shape = n.attr_ints("pooled_shape");
  if (shape.size() != 2 || shape[0] <= 0 || shape[1] <= 0)
    kernel_fail(n, "pooled_shape must be two positive ints, got " + c10::str(shape));
  int64_t oh = shape[0], ow = shape[1];
  double scale = n.attr_f("spatial_scale", 1.0f);
  return [&n, oh, ow, scale](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0).contiguous();
    at::Tensor rois = in.at(1).to(at::kDouble).contiguous();
    if (rois.dim() != 2 || rois.size(1) != 5)
      kernel_fail(n, "rois must be [num_rois, 5], got " + c10::str(rois.sizes()));
    std::vector<int64_t> batch;
    auto Rr = rois.accessor<double, 2>();
    for (int64_t r = 0; r < rois.size(0); ++r) {
      double b = Rr[r][0];
      if (!(b >= 0 && b < 9.0e18))
        kernel_fail(n, "roi " + std::to_string(r) + " has batch " + "index " + std::to_string(b));
      batch.push_back(static_cast<int64_t>(b));
    }
    check_rois(n, x, rois, 5, batch);
    int64_t R = rois.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    at::Tensor y = at::zeros({R, C, oh, ow}, x.options());
    if (y.numel() == 0 || H == 0 || W == 0) return {y};  // nothing to pool (bins stay 0)
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "MaxRoiPool", [&] {
      auto X = x.accessor<scalar_t, 4>();
      auto Y = y.accessor<scalar_t, 4>();
      for (int64_t r = 0; r < R; ++r) {
        // Corners as torchvision rounds them; absurd ones are clamped first (no overflow in
        // the casts), far beyond where the result changes.
        auto corner = [&](double v) {
          return static_cast<int64_t>(std::round(std::clamp(v * scale, -1e15, 1e15)));
        };
        int64_t x1 = corner(Rr[r][1]), y1 = corner(Rr[r][2]);
        int64_t x2 = corner(Rr[r][3]), y2 = corner(Rr[r][4]);
        double bh = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / oh;
        double bw = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / ow;
        for (int64_t ph = 0; ph < oh; ++ph)
          for (int64_t pw = 0; pw < ow; ++pw) {
            int64_t hs = std::clamp<int64_t>(static_cast<int64_t>(std::floor(ph * bh)) + y1, 0, H);
            int64_t he =
                std::clamp<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bh)) + y1, 0, H);
            int64_t ws = std::clamp<int64_t>(static_cast<int64_t>(std::floor(pw * bw)) + x1, 0, W);
            int64_t we =
                std::clamp<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bw)) + x1, 0, W);
            if (he <= hs || we <= ws) continue;  // an empty bin stays 0
            for (int64_t c = 0; c < C; ++c) {
              // As torchvision and ONNX Runtime: NaN never compares greater, so it is skipped.
              auto m = static_cast<scalar_t>(-std::numeric_limits<float>::max());
              for (int64_t i = hs; i < he; ++i)
                for (int64_t j = ws; j < we; ++j)
                  if (X[batch[r]][c][i][j] > m) m = X[batch[r]][c][i][j];
              Y[r][c][ph][pw] = m;
            }
          }
      }
    });
    return {y};
  };
});

TONNX_KERNEL("RoiAlign", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool avg = n.attr_s("mode", "avg") == "avg";
  int64_t oh = n.attr_i("output_height", 1), ow = n.attr_i("output_width", 1);
  int64_t ratio = n.attr_i("sampling_ratio", 0);
  double scale = n.attr_f("spatial_scale", 1.0f);
  double offset =
      s.opset >= 16 && n.attr_s("coordinate_transformation_mode", "half_pixel") == "half_pixel"
          ? 0.5
          : 0.0;
  if (oh <= 0 || ow <= 0)
    kernel_fail(n, "output_height and output_width must be positive, got " + std::to_string(oh) +
                       " and " + std::to_string(ow));
  return [&n, avg, oh, ow, ratio, scale, offset](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0).to(at::kDouble).contiguous();
    at::Tensor rois = in.at(1).to(at::kDouble).contiguous();
    std::vector<int64_t> bidx = to_int_vector(in.at(2).reshape({-1}));
    check_rois(n, x, rois, 4, bidx);
    int64_t R = rois.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    at::Tensor y = at::zeros({R, C, oh, ow}, at::kDouble);
    if (y.numel() == 0 || H == 0 || W == 0) return {y.to(in[0].scalar_type())};
    // Box corners must be finite: a NaN passes every range test and becomes a wild index.
    if (!at::isfinite(rois).all().item<bool>() || !std::isfinite(scale))
      kernel_fail(n, "rois and spatial_scale must be finite");
    auto X = x.accessor<double, 4>();
    auto Y = y.accessor<double, 4>();
    auto Rr = rois.accessor<double, 2>();
    for (int64_t r = 0; r < R; ++r) {
      double x1 = Rr[r][0] * scale - offset, y1 = Rr[r][1] * scale - offset;
      double x2 = Rr[r][2] * scale - offset, y2 = Rr[r][3] * scale - offset;
      double rw = x2 - x1, rh = y2 - y1;
      if (offset == 0) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
      double bh = rh / oh, bw = rw / ow;
      // Samples per bin: bounded, so a huge box or sampling_ratio cannot run for ever.
      constexpr double kMaxSamples = 1 << 16;
      double sh = ratio > 0 ? static_cast<double>(ratio) : std::ceil(rh / oh);
      double sw = ratio > 0 ? static_cast<double>(ratio) : std::ceil(rw / ow);
      if (!(sh * sw <= kMaxSamples))
        kernel_fail(n, "roi " + std::to_string(r) + " needs " + std::to_string(sh * sw) +
                           " samples per bin (more than " + std::to_string(kMaxSamples) + ")");
      int64_t gh = std::max<int64_t>(static_cast<int64_t>(sh), 1);
      int64_t gw = std::max<int64_t>(static_cast<int64_t>(sw), 1);
      for (int64_t c = 0; c < C; ++c)
        for (int64_t ph = 0; ph < oh; ++ph)
          for (int64_t pw = 0; pw < ow; ++pw) {
            double acc = avg ? 0 : -std::numeric_limits<double>::infinity();
            for (int64_t iy = 0; iy < gh; ++iy)
              for (int64_t ix = 0; ix < gw; ++ix) {
                double yy = y1 + ph * bh + (iy + 0.5) * bh / gh;
                double xx = x1 + pw * bw + (ix + 0.5) * bw / gw;
                double v = 0;
                if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
                  yy = std::max(yy, 0.0), xx = std::max(xx, 0.0);
                  int64_t y0 = static_cast<int64_t>(yy), x0 = static_cast<int64_t>(xx), yh, xh;
                  if (y0 >= H - 1)
                    y0 = yh = H - 1, yy = static_cast<double>(y0);
                  else
                    yh = y0 + 1;
                  if (x0 >= W - 1)
                    x0 = xh = W - 1, xx = static_cast<double>(x0);
                  else
                    xh = x0 + 1;
                  double ly = yy - y0, lx = xx - x0, hy = 1 - ly, hx = 1 - lx;
                  double w1 = hy * hx, w2 = hy * lx, w3 = ly * hx, w4 = ly * lx;
                  int64_t b = bidx[r];
                  if (avg) {
                    v = w1 * X[b][c][y0][x0] + w2 * X[b][c][y0][xh] + w3 * X[b][c][yh][x0] +
                        w4 * X[b][c][yh][xh];
                  } else {
                    v = std::max({w1 * X[b][c][y0][x0], w2 * X[b][c][y0][xh], w3 * X[b][c][yh][x0],
                                  w4 * X[b][c][yh][xh]});
                  }
                }
                acc = avg ? acc + v : std::max(acc, v);
              }
            Y[r][c][ph][pw] = avg ? acc / static_cast<double>(gh * gw) : acc;
          }
    }
    return {y.to(in[0].scalar_type())};
  };
});
}  // namespace
}  // namespace tonnx::backend
