// Shape and indexing kernels: ConstantOfShape, EyeLike, Flatten, Tile, Split, Pad,
// Depth/SpaceToDepth, GatherElements/ND, Scatter*, OneHot, NonZero, Compress, ReverseSequence,
// TopK, Unique.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

TONNX_KERNEL("ConstantOfShape", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  at::Tensor value = at::zeros({1}, at::kFloat);
  if (const ir::AttrValue* a = s.node.attr("value")) value = a->t();
  return [value](const Tensors& in) -> Tensors {
    std::vector<int64_t> shape = to_int_vector(in.at(0));
    return {value.reshape({}).expand(shape).contiguous()};
  };
});

TONNX_KERNEL("EyeLike", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t k = n.attr_i("k", 0);
  int64_t dtype = n.attr_i("dtype", 0);
  return [&n, k, dtype](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (x.dim() != 2) kernel_fail(n, "input must be 2-D, got rank " + std::to_string(x.dim()));
    at::ScalarType st =
        dtype ? ir::scalar_type_from_dtype(static_cast<ir::DType>(dtype)) : x.scalar_type();
    at::Tensor y = at::zeros(x.sizes(), st);
    int64_t rows = x.size(0), cols = x.size(1);
    if (k >= cols || k <= -rows) return {y};  // the diagonal misses the matrix (no i + k overflow)
    for (int64_t i = 0; i < rows; ++i)
      if (i + k >= 0 && i + k < cols) y[i][i + k] = 1;
    return {y};
  };
});

TONNX_KERNEL("Flatten", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  int64_t axis = s.node.attr_i("axis", 1);
  const ir::Node& n = s.node;
  return [axis, &n](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = axis < 0 ? axis + x.dim() : axis;
    if (a < 0 || a > x.dim())
      kernel_fail(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(x.dim()));
    int64_t outer = checked_numel(n, x.sizes().slice(0, a).vec(), "the outer size");
    int64_t inner = checked_numel(n, x.sizes().slice(a).vec(), "the inner size");
    return {x.reshape({outer, inner})};
  };
});

TONNX_KERNEL("Tile", 6, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors { return {in.at(0).repeat(to_int_vector(in.at(1)))}; };
});

// Split: sizes from the `split` attribute (< 13) or input, else equal parts (num_outputs).
TONNX_KERNEL("Split", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 0);
  std::vector<int64_t> attr_split = n.attr_ints("split");
  size_t n_out = n.outputs().size();
  bool from_input = s.opset >= 13;
  if (n.has_attr("num_outputs") && n.attr_i("num_outputs", 0) != static_cast<int64_t>(n_out))
    kernel_fail(n, "num_outputs is " + std::to_string(n.attr_i("num_outputs", 0)) +
                       " but the node has " + std::to_string(n_out) + " outputs");
  if (n.has_attr("num_outputs") && n.inputs().size() > 1 && n.input(1))
    kernel_fail(n, "has both num_outputs and the split input; Split-18 takes one or the other");
  return [&n, axis, attr_split, n_out, from_input](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = norm_axis(n, axis, x.dim());
    std::vector<int64_t> sizes = attr_split;
    if (from_input || in.size() > 1)
      sizes = in.size() > 1 && in[1].defined() ? to_int_vector(in[1]) : std::vector<int64_t>{};
    if (sizes.empty()) {
      int64_t chunk = (x.size(a) + static_cast<int64_t>(n_out) - 1) / static_cast<int64_t>(n_out);
      for (size_t i = 0; i < n_out; ++i) {
        int64_t left = x.size(a) - chunk * static_cast<int64_t>(i);
        sizes.push_back(std::max<int64_t>(0, std::min(chunk, left)));
      }
    }
    check_split_sizes(n, sizes, a, x.size(a));
    auto parts = x.split_with_sizes(sizes, a);
    return Tensors(parts.begin(), parts.end());
  };
});

// Pad: constant, reflect, edge; pads as attribute (< 11) or input, with optional axes (18).
TONNX_KERNEL("Pad", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  std::string mode = n.attr_s("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    kernel_fail(n, "mode must be constant, reflect or edge; got \"" + mode + "\"");
  bool legacy = s.opset < 11;
  std::vector<int64_t> attr_pads = n.attr_ints(s.opset < 2 ? "paddings" : "pads");
  double attr_value = n.attr_f("value", 0.0f);
  return [&n, mode, legacy, attr_pads, attr_value](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    std::vector<int64_t> pads = legacy ? attr_pads : to_int_vector(in.at(1));
    double value = attr_value;
    if (!legacy && in.size() > 2 && in[2].defined() && in[2].numel() > 0)
      value = in[2].item<double>();
    int64_t r = x.dim();
    std::vector<int64_t> axes;
    if (!legacy && in.size() > 3 && in[3].defined()) {
      for (int64_t a : to_int_vector(in[3])) axes.push_back(norm_axis(n, a, r));
    } else {
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    }
    if (pads.size() != 2 * axes.size())
      kernel_fail(n, "pads has " + std::to_string(pads.size()) + " values; expected " +
                         std::to_string(2 * axes.size()));
    constexpr int64_t kMaxPad = int64_t{1} << 40;  // no -pad overflow below
    for (int64_t v : pads)
      if (v < -kMaxPad || v > kMaxPad)
        kernel_fail(n, "pad " + std::to_string(v) + " is out of range");
    std::vector<int64_t> full(2 * r, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      full[axes[i]] = pads[i];
      full[axes[i] + r] = pads[i + axes.size()];
    }
    if (mode == "constant") {
      std::vector<int64_t> p;
      for (int64_t i = r; i-- > 0;) {
        p.push_back(full[i]);
        p.push_back(full[i + r]);
      }
      return {at::constant_pad_nd(x, p, value)};
    }
    // reflect / edge: pad one axis at a time with index arithmetic (any rank, any dtype).
    for (int64_t d = 0; d < r; ++d) {
      int64_t b = full[d], e = full[d + r], len = x.size(d);
      if (b == 0 && e == 0) continue;
      if (b < 0 || e < 0) {
        x = x.narrow(d, std::max<int64_t>(0, -b),
                     len + std::min<int64_t>(0, b) + std::min<int64_t>(0, e));
        b = std::max<int64_t>(0, b);
        e = std::max<int64_t>(0, e);
        len = x.size(d);
      }
      if (len == 0) kernel_fail(n, "cannot " + mode + "-pad an empty axis");
      at::Tensor idx = at::arange(-b, len + e, at::kLong);
      if (mode == "edge") {
        idx = idx.clamp(0, len - 1);
      } else {
        if (len == 1) {
          idx = at::zeros_like(idx);
        } else {
          int64_t period = 2 * (len - 1);
          idx = at::remainder(idx, period);
          idx = at::where(idx >= len, period - idx, idx);
        }
      }
      x = x.index_select(d, idx);
    }
    return {x};
  };
});

// blocksize >= 1 whose square fits, and X 4-D with C (DepthToSpace) or H and W (SpaceToDepth)
// divisible by it.
int64_t blocksize(const ir::Node& n) {
  int64_t b = n.attr_i("blocksize", 1);
  if (b < 1 || b > (int64_t{1} << 20))
    kernel_fail(n, "blocksize must be in 1..2^20, got " + std::to_string(b));
  return b;
}
void check_blocks(const ir::Node& n, const at::Tensor& x, int64_t c_div, int64_t hw_div) {
  if (x.dim() != 4) kernel_fail(n, "X must be 4-D, got rank " + std::to_string(x.dim()));
  if (x.size(1) % c_div || x.size(2) % hw_div || x.size(3) % hw_div)
    kernel_fail(n, "X " + c10::str(x.sizes()) + " does not divide into blocks of " +
                       std::to_string(hw_div > 1 ? hw_div : c_div));
}

TONNX_KERNEL("DepthToSpace", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t b = blocksize(n);
  bool crd = s.node.attr_s("mode", "DCR") == "CRD";
  return [&n, b, crd](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    check_blocks(n, x, b * b, 1);
    int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    at::Tensor y;
    if (crd)
      y = x.reshape({N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3});
    else
      y = x.reshape({N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2});
    return {y.reshape({N, C / (b * b), H * b, W * b})};
  };
});
TONNX_KERNEL("SpaceToDepth", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t b = blocksize(n);
  return [&n, b](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    check_blocks(n, x, 1, b);
    int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    at::Tensor y = x.reshape({N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4});
    return {y.reshape({N, C * b * b, H / b, W / b})};
  };
});

at::Tensor wrap_indices(const ir::Node& n, const at::Tensor& idx_in, int64_t size) {
  at::Tensor idx = idx_in.to(at::kLong);
  if (idx.numel() > 0) {
    int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    if (lo < -size || hi >= size)
      kernel_fail(n, "index " + std::to_string(lo < -size ? lo : hi) + " is out of range [" +
                         std::to_string(-size) + ", " + std::to_string(size - 1) + "]");
  }
  return at::where(idx < 0, idx + size, idx);
}

TONNX_KERNEL("GatherElements", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 0);
  return [&n, axis](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = norm_axis(n, axis, x.dim());
    return {at::gather(x, a, wrap_indices(n, in.at(1), x.size(a)))};
  };
});

// Scatter (opset 9-10) and ScatterElements: reduction none/add/mul (16), min/max (18).
KernelFactory scatter_elements() {
  return [](const KernelSpec& s) -> Kernel {
    const ir::Node& n = s.node;
    int64_t axis = n.attr_i("axis", 0);
    std::string red = n.attr_s("reduction", "none");
    return [&n, axis, red](const Tensors& in) -> Tensors {
      const at::Tensor& x = in.at(0);
      int64_t a = norm_axis(n, axis, x.dim());
      at::Tensor idx = wrap_indices(n, in.at(1), x.size(a));
      const at::Tensor& upd = in.at(2);
      if (red == "none") return {x.scatter(a, idx, upd)};
      std::string r = red == "add" ? "sum" : red == "mul" ? "prod" : red == "max" ? "amax" : "amin";
      return {x.scatter_reduce(a, idx, upd, r, true)};
    };
  };
}
TONNX_KERNEL("Scatter", 9, 10, scatter_elements());
TONNX_KERNEL("ScatterElements", 11, kAnyOpset, scatter_elements());

TONNX_KERNEL("GatherND", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t batch_dims = n.attr_i("batch_dims", 0);
  return [&n, batch_dims](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    at::Tensor idx = in.at(1).to(at::kLong);
    if (batch_dims < 0 || idx.dim() < batch_dims + 1 || x.dim() < batch_dims)
      kernel_fail(n, "batch_dims " + std::to_string(batch_dims) + " does not fit data of rank " +
                         std::to_string(x.dim()) + " and indices of rank " +
                         std::to_string(idx.dim()));
    int64_t k = idx.size(-1);
    if (batch_dims + k > x.dim()) kernel_fail(n, "indices' last dim is too large for the data");
    for (int64_t d = 0; d < batch_dims; ++d)
      if (idx.size(d) != x.size(d))
        kernel_fail(n, "indices' batch dim " + std::to_string(d) + " is " +
                           std::to_string(idx.size(d)) + " but the data's is " +
                           std::to_string(x.size(d)));
    std::vector<int64_t> batch(x.sizes().begin(), x.sizes().begin() + batch_dims);
    int64_t B = checked_numel(n, batch, "the batch size");
    at::Tensor xb = x.reshape([&] {
      std::vector<int64_t> sh{B};
      sh.insert(sh.end(), x.sizes().begin() + batch_dims, x.sizes().end());
      return sh;
    }());
    std::vector<int64_t> idx_mid(idx.sizes().begin() + batch_dims, idx.sizes().end() - 1);
    at::Tensor ib = idx.reshape({B, -1, k});
    // Linearize the k indexed dims.
    at::Tensor lin = at::zeros({B, ib.size(1)}, at::kLong);
    for (int64_t j = 0; j < k; ++j) {
      int64_t size = xb.size(1 + j);
      at::Tensor ij = ib.select(2, j);
      ij = at::where(ij < 0, ij + size, ij);
      if (ij.numel() > 0 && (ij.min().item<int64_t>() < 0 || ij.max().item<int64_t>() >= size))
        kernel_fail(n, "an index along data dim " + std::to_string(batch_dims + j) +
                           " is out of range for its size " + std::to_string(size));
      lin = lin * size + ij;
    }
    std::vector<int64_t> rest(xb.sizes().begin() + 1 + k, xb.sizes().end());
    at::Tensor flat = xb.reshape({B, -1, checked_numel(n, rest, "the slice size")});
    at::Tensor g = at::gather(flat, 1, lin.unsqueeze(-1).expand({B, lin.size(1), flat.size(2)}));
    std::vector<int64_t> out = batch;
    out.insert(out.end(), idx_mid.begin(), idx_mid.end());
    out.insert(out.end(), rest.begin(), rest.end());
    return {g.reshape(out)};
  };
});

TONNX_KERNEL("ScatterND", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  std::string red = s.node.attr_s("reduction", "none");
  return [&n, red](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0).clone();
    at::Tensor idx = in.at(1).to(at::kLong);
    const at::Tensor& upd = in.at(2);
    if (idx.dim() < 1) kernel_fail(n, "indices must have rank >= 1");
    int64_t k = idx.size(-1);
    if (k < 1 || k > x.dim())
      kernel_fail(n, "indices' last dim " + std::to_string(k) + " must be in 1.." +
                         std::to_string(x.dim()) + " (the data's rank)");
    at::Tensor ii = idx.reshape({-1, k});
    std::vector<int64_t> rest(x.sizes().begin() + k, x.sizes().end());
    at::Tensor u = upd.reshape([&] {
      std::vector<int64_t> sh{ii.size(0)};
      sh.insert(sh.end(), rest.begin(), rest.end());
      return sh;
    }());
    for (int64_t i = 0; i < ii.size(0); ++i) {
      at::Tensor view = x;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = ii[i][j].item<int64_t>();
        view = view.select(0, v < 0 ? v + view.size(0) : v);
      }
      if (red == "add")
        view.add_(u[i]);
      else if (red == "mul")
        view.mul_(u[i]);
      else if (red == "max")
        view.copy_(at::maximum(view, u[i]));
      else if (red == "min")
        view.copy_(at::minimum(view, u[i]));
      else
        view.copy_(u[i]);
    }
    return {x};
  };
});

TONNX_KERNEL("OneHot", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", -1);
  return [&n, axis](const Tensors& in) -> Tensors {
    at::Tensor idx = in.at(0);
    double depth_in = in.at(1).item<double>();
    if (!(depth_in >= 1 && depth_in < 9.0e18))
      kernel_fail(n, "depth must be a number >= 1, got " + std::to_string(depth_in));
    int64_t depth = static_cast<int64_t>(depth_in);
    const at::Tensor& values = in.at(2);
    at::Tensor i = idx.to(at::kLong);
    i = at::where(i < 0, i + depth, i);
    at::Tensor valid = (i >= 0) & (i < depth);
    at::Tensor oh = at::one_hot(at::where(valid, i, at::zeros_like(i)), depth) *
                    valid.unsqueeze(-1).to(at::kLong);
    int64_t a = norm_axis(n, axis, idx.dim() + 1);
    oh = oh.movedim(-1, a);
    at::Tensor off = values[0], on = values[1];
    return {at::where(oh.to(at::kBool), on, off).to(values.scalar_type())};
  };
});

TONNX_KERNEL("NonZero", 9, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (x.dim() == 0) return {at::zeros({0, x.item<bool>() ? 1 : 0}, at::kLong)};
    return {at::nonzero(x).t().contiguous()};
  };
});

TONNX_KERNEL("Compress", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool has_axis = n.has_attr("axis");
  int64_t axis = n.attr_i("axis", 0);
  return [&n, has_axis, axis](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    at::Tensor c = in.at(1).to(at::kBool);
    if (!has_axis) x = x.reshape({-1});
    int64_t a = has_axis ? norm_axis(n, axis, x.dim()) : 0;
    c = c.narrow(0, 0, std::min(c.size(0), x.size(a)));
    return {x.index_select(a, at::nonzero(c).reshape({-1}))};
  };
});

TONNX_KERNEL("ReverseSequence", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  int64_t batch_axis = s.node.attr_i("batch_axis", 1), time_axis = s.node.attr_i("time_axis", 0);
  return [batch_axis, time_axis](const Tensors& in) -> Tensors {
    at::Tensor y = in.at(0).clone();
    std::vector<int64_t> lens = to_int_vector(in.at(1));
    for (size_t b = 0; b < lens.size(); ++b) {
      at::Tensor xb = in[0].select(batch_axis, static_cast<int64_t>(b));
      int64_t t = time_axis > batch_axis ? time_axis - 1 : time_axis;
      at::Tensor rev = xb.narrow(t, 0, lens[b]).flip(t);
      y.select(batch_axis, static_cast<int64_t>(b)).narrow(t, 0, lens[b]).copy_(rev);
    }
    return {y};
  };
});

TONNX_KERNEL("TopK", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", -1);
  bool largest = n.attr_i("largest", 1) != 0, sorted = n.attr_i("sorted", 1) != 0;
  int64_t attr_k = n.attr_i("k", -1);
  bool k_input = s.opset >= 10;
  return [&n, axis, largest, sorted, attr_k, k_input](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = norm_axis(n, axis, x.dim());
    int64_t k = k_input ? to_int_vector(in.at(1)).at(0) : attr_k;
    if (k < 0 || k > x.size(a))
      kernel_fail(n, "k = " + std::to_string(k) + " is out of range for axis of size " +
                         std::to_string(x.size(a)));
    // A stable sort keeps the lower index first among equal values, as ONNX requires.
    auto [v, i] = at::sort(x, /*stable=*/true, a, largest);
    (void)sorted;
    return {v.narrow(a, 0, k).contiguous(), i.narrow(a, 0, k).contiguous()};
  };
});

TONNX_KERNEL("Unique", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool has_axis = n.has_attr("axis");
  int64_t axis = n.attr_i("axis", 0);
  bool sorted = n.attr_i("sorted", 1) != 0;
  return [&n, has_axis, axis, sorted](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    int64_t a = 0;
    if (has_axis) {
      a = norm_axis(n, axis, x.dim());
      x = x.movedim(a, 0);
    } else {
      x = x.reshape({-1});
    }
    int64_t len = x.size(0);
    // Each slice as a row of int64 (integers, bool) or double (floats, with -0 made +0 so
    // that it groups with 0), hashed by its bytes: linear in the input (a pairwise comparison
    // was quadratic: hours for a million distinct values). A slice holding NaN equals nothing.
    bool is_float = at::isFloatingType(x.scalar_type());
    // Elements per slice (not numel / len: len may be 0, and then the other dims may be huge).
    int64_t width = checked_numel(n, x.sizes().slice(1).vec(), "a slice of the input");
    at::Tensor key = (is_float ? x.to(at::kDouble) + 0.0 : x.to(at::kLong)).reshape({len, width});
    key = key.contiguous();
    const auto* base = static_cast<const char*>(key.data_ptr());
    size_t row_bytes = static_cast<size_t>(width) * 8;
    auto row = [&](int64_t i) { return std::string_view(base + i * row_bytes, row_bytes); };
    auto has_nan = [&](int64_t i) {
      if (!is_float) return false;
      const double* v = key.data_ptr<double>() + i * width;
      return std::any_of(v, v + width, [](double d) { return std::isnan(d); });
    };
    std::vector<int64_t> first, inverse(len), counts;
    std::unordered_map<std::string_view, int64_t> seen;
    for (int64_t i = 0; i < len; ++i) {
      bool nan = has_nan(i);
      auto it = nan ? seen.end() : seen.find(row(i));
      int64_t found = it == seen.end() ? -1 : it->second;
      if (found < 0) {
        found = static_cast<int64_t>(first.size());
        if (!nan) seen.emplace(row(i), found);
        first.push_back(i);
        counts.push_back(0);
      }
      inverse[i] = found;
      ++counts[found];
    }
    std::vector<int64_t> order(first.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    if (sorted) {
      auto less = [&](int64_t p, int64_t q) {
        for (int64_t j = 0; j < width; ++j) {
          if (is_float) {
            double vp = key.data_ptr<double>()[first[p] * width + j];
            double vq = key.data_ptr<double>()[first[q] * width + j];
            if (std::isnan(vp) || std::isnan(vq)) {  // NaN last, as numpy sorts
              if (std::isnan(vp) != std::isnan(vq)) return std::isnan(vq);
              continue;
            }
            if (vp != vq) return vp < vq;
          } else {
            int64_t vp = key.data_ptr<int64_t>()[first[p] * width + j];
            int64_t vq = key.data_ptr<int64_t>()[first[q] * width + j];
            if (vp != vq) return vp < vq;
          }
        }
        return false;
      };
      std::stable_sort(order.begin(), order.end(), less);
    }
    std::vector<int64_t> rank(order.size()), idx, cnt;
    for (size_t r = 0; r < order.size(); ++r) {
      rank[order[r]] = static_cast<int64_t>(r);
      idx.push_back(first[order[r]]);
      cnt.push_back(counts[order[r]]);
    }
    for (auto& v : inverse) v = rank[v];
    at::Tensor idx_t = at::tensor(idx, at::kLong);
    at::Tensor y = x.index_select(0, idx_t);
    if (has_axis) y = y.movedim(0, a);
    return {y.contiguous(), idx_t, at::tensor(inverse, at::kLong), at::tensor(cnt, at::kLong)};
  };
});

}  // namespace
}  // namespace tonnx::backend
