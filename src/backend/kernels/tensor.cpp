// Tensor-manipulation kernels: constants, shapes, reshapes, slicing, gathering
// (Cast is in string.cpp: one kernel casts numbers and strings).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>

#include "backend/kernels/blocked_layout.h"
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

TONNX_KERNEL("Constant", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  at::Tensor value;
  if (const ir::AttrValue* a = n.attr("value"))
    value = a->t();
  else if (const ir::AttrValue* a = n.attr("value_float"))
    value = at::scalar_tensor(a->f(), at::kFloat);
  else if (const ir::AttrValue* a = n.attr("value_int"))
    value = at::scalar_tensor(a->i(), at::kLong);
  else if (const ir::AttrValue* a = n.attr("value_floats"))
    value = at::tensor(a->floats(), at::kFloat);
  else if (const ir::AttrValue* a = n.attr("value_ints"))
    value = at::tensor(a->ints(), at::kLong);
  else
    kernel_fail(n,
                "has no value attribute that tonnx supports (value, value_float(s), value_int(s))");
  return [value](const Tensors&) -> Tensors { return {value}; };
});

TONNX_KERNEL("Shape", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  int64_t start = s.node.attr_i("start", 0);
  std::optional<int64_t> end;
  if (s.node.has_attr("end")) end = s.node.attr_i("end", 0);
  return [start, end](const Tensors& in) -> Tensors {
    int64_t r = in.at(0).dim();
    auto clampi = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
    int64_t b = clampi(start), e = end ? clampi(*end) : r;
    std::vector<int64_t> dims;
    for (int64_t i = b; i < e; ++i) dims.push_back(in[0].size(i));
    return {at::tensor(dims, at::kLong)};
  };
});

TONNX_KERNEL("Size", 1, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return
      [](const Tensors& in) -> Tensors { return {at::scalar_tensor(in.at(0).numel(), at::kLong)}; };
});

// Reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
at::Tensor reshape_onnx(const ir::Node& n, const at::Tensor& x, std::vector<int64_t> shape,
                        bool allowzero) {
  int64_t infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= x.dim())
        kernel_fail(n, "shape[" + std::to_string(i) + "] is 0 (copy) but the input has rank " +
                           std::to_string(x.dim()));
      shape[i] = x.size(static_cast<int64_t>(i));
    } else if (shape[i] == -1) {
      if (infer >= 0) kernel_fail(n, "shape has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < -1) {
      kernel_fail(n, "shape[" + std::to_string(i) + "] is " + std::to_string(shape[i]) +
                         "; dims must be >= -1");
    }
  }
  if (infer >= 0) {
    std::vector<int64_t> others = shape;
    others.erase(others.begin() + infer);
    std::optional<int64_t> product = ir::product_of(others);  // nullopt: overflows
    int64_t known = product.value_or(0);
    if (known == 0 || x.numel() % known != 0)
      kernel_fail(n, "cannot infer the -1 dim: " + std::to_string(x.numel()) + " elements into " +
                         c10::str(at::IntArrayRef(shape)));
    shape[infer] = x.numel() / known;
  }
  if (ir::product_of(shape) != x.numel())
    kernel_fail(n, "cannot reshape a tensor of shape " + c10::str(x.sizes()) + " (" +
                       std::to_string(x.numel()) + " elements) to " +
                       c10::str(at::IntArrayRef(shape)));
  return x.reshape(shape);
}

TONNX_KERNEL("Reshape", 5, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool allowzero = n.attr_i("allowzero", 0) != 0;
  return [&n, allowzero](const Tensors& in) -> Tensors {
    return {reshape_onnx(n, in.at(0), to_int_vector(in.at(1)), allowzero)};
  };
});
TONNX_KERNEL("Reshape", 1, 4, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  std::vector<int64_t> shape = n.attr_ints("shape");
  return [&n, shape](const Tensors& in) -> Tensors {
    return {reshape_onnx(n, in.at(0), shape, false)};
  };
});

// Concat of contiguous tensors of one dtype and rank whose sizes agree except along `axis`,
// as one parallel copy: each output row (the dims before `axis`) is the inputs' rows one after
// another. ATen 1.13's cat copies input by input through TensorIterator when more than one
// thread runs, one parallel region per input: DenseNet-121's 62 Concats of up to 32 inputs
// took 1.6 ms at one thread and 3.6 ms at two. Returns an undefined tensor for other inputs
// (ATen's cat checks and reports them).
at::Tensor concat_contiguous(const Tensors& in, int64_t axis) {
  if (in.size() < 2) return {};
  const at::Tensor& first = in[0];
  int64_t dim = first.dim();
  if (dim == 0 || axis < 0 || axis >= dim) return {};
  std::vector<int64_t> sizes = first.sizes().vec();
  sizes[axis] = 0;
  for (const at::Tensor& t : in) {
    if (!t.defined() || t.dim() != dim || t.scalar_type() != first.scalar_type() ||
        !t.is_contiguous() || t.is_quantized() || t.device() != first.device() ||
        t.layout() != at::kStrided)
      return {};
    for (int64_t d = 0; d < dim; ++d)
      if (d != axis && t.size(d) != first.size(d)) return {};
    sizes[axis] += t.size(axis);
  }
  at::Tensor out = at::empty(sizes, first.options());
  const int64_t elem = static_cast<int64_t>(out.element_size());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= sizes[d];
  // Bytes per row of each input, and where each starts within an output row.
  std::vector<int64_t> row(in.size()), start(in.size());
  int64_t out_row = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    row[i] = in[i].numel() / std::max<int64_t>(outer, 1) * elem;
    start[i] = out_row;
    out_row += row[i];
  }
  if (outer == 0 || out_row == 0) return out;
  char* dst = static_cast<char*>(out.data_ptr());
  std::vector<const char*> src(in.size());
  for (size_t i = 0; i < in.size(); ++i) src[i] = static_cast<const char*>(in[i].data_ptr());
  // Output bytes [b, e) in 64 KB grains: each copied from the input that holds them.
  at::parallel_for(0, outer * out_row, 64 << 10, [&](int64_t b, int64_t e) {
    while (b < e) {
      int64_t o = b / out_row, off = b % out_row;
      // The last input starting at or before off: an empty input starts where the next one
      // does, so this is never one (off < out_row).
      size_t i = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), off) -
                                     start.begin() - 1);
      int64_t in_off = off - start[i];
      int64_t n = std::min(row[i] - in_off, e - b);
      std::memcpy(dst + b, src[i] + o * row[i] + in_off, static_cast<size_t>(n));
      b += n;
    }
  });
  return out;
}

// Blocked inputs along channels (kernels/blocked_layout.h), all of one block width, an NCHW one
// among them converted where its channels are a multiple of that width (a thin convolution's
// output, next to a wide blocked concatenation); undefined where a shape does not fit.
at::Tensor concat_blocked(const Tensors& in, const std::vector<bool>& in_b) {
  int64_t width = 0;
  for (size_t i = 0; i < in.size() && !width; ++i)
    if (is_blocked(in[i], i < in_b.size() && in_b[i])) width = in[i].size(4);
  if (!blocked_width(width)) return {};
  Tensors blocks;
  for (size_t i = 0; i < in.size(); ++i) {
    const at::Tensor& t = in[i];
    if (!t.defined() || t.scalar_type() != at::kFloat) return {};
    if (is_blocked(t, i < in_b.size() && in_b[i])) {
      if (t.size(4) != width) return {};
      blocks.push_back(t.contiguous());
    } else {
      if (t.dim() != 4 || t.size(1) % width != 0) return {};
      blocks.push_back(plain_to_blocked(t, width));
    }
    const at::Tensor& b = blocks.back();
    if (b.size(0) != blocks[0].size(0) || b.size(2) != blocks[0].size(2) ||
        b.size(3) != blocks[0].size(3))
      return {};
  }
  at::Tensor y = concat_contiguous(blocks, 1);
  return y.defined() ? y : at::cat(blocks, 1);
}

TONNX_KERNEL("Concat", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 1);
  std::vector<bool> in_b(n.inputs().size());
  for (size_t i = 0; i < in_b.size(); ++i) in_b[i] = s.blocked_input(i);
  bool out_b = s.blocked_out;
  return [axis, &n, in_b, out_b](const Tensors& in) -> Tensors {
    bool any_blocked = false;
    for (size_t i = 0; i < in.size() && i < in_b.size(); ++i)
      any_blocked = any_blocked || is_blocked(in[i], in_b[i]);
    if (any_blocked) {  // over channels (the plan allows only that): blocks follow blocks
      at::Tensor y = concat_blocked(in, in_b);
      if (y.defined()) return {hand_on(y, out_b)};
      Tensors plain_in;
      for (size_t i = 0; i < in.size(); ++i) plain_in.push_back(plain(in[i], in_b[i]));
      return {at::cat(plain_in, norm_axis(n, axis, 4))};
    }
    int64_t a = norm_axis(n, axis, in.at(0).dim());
    at::Tensor y = concat_contiguous(in, a);
    if (y.defined()) return {y};
    return {at::cat(in, a)};
  };
});

TONNX_KERNEL("Transpose", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  std::vector<int64_t> perm = s.node.attr_ints("perm");
  return [perm](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (perm.empty()) {
      std::vector<int64_t> rev;
      for (int64_t i = x.dim() - 1; i >= 0; --i) rev.push_back(i);
      return {x.permute(rev).contiguous()};
    }
    return {x.permute(perm).contiguous()};
  };
});

TONNX_KERNEL("Gather", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 0);
  return [axis, &n](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = norm_axis(n, axis, x.dim());
    at::Tensor idx = in.at(1).to(at::kLong);
    int64_t size = x.size(a);
    if (idx.numel() > 0) {
      int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
      if (lo < -size || hi >= size)
        kernel_fail(n, "indices must be in [" + std::to_string(-size) + ", " +
                           std::to_string(size - 1) + "] for axis " + std::to_string(axis) +
                           " of size " + std::to_string(size) + "; got " +
                           std::to_string(lo < -size ? lo : hi));
    }
    idx = at::where(idx < 0, idx + size, idx);
    at::Tensor flat = x.index_select(a, idx.reshape({-1}));
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().begin() + a);
    shape.insert(shape.end(), idx.sizes().begin(), idx.sizes().end());
    shape.insert(shape.end(), x.sizes().begin() + a + 1, x.sizes().end());
    return {flat.reshape(shape)};
  };
});

std::vector<int64_t> axes_of(const ir::Node& n, const Tensors& in, int opset, size_t input_idx,
                             int since_input) {
  if (opset >= since_input) {
    if (in.size() > input_idx && in[input_idx].defined()) return to_int_vector(in[input_idx]);
    return {};
  }
  return n.attr_ints("axes");
}

TONNX_KERNEL("Unsqueeze", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int opset = s.opset;
  return [&n, opset](const Tensors& in) -> Tensors {
    std::vector<int64_t> axes = axes_of(n, in, opset, 1, 13);
    at::Tensor x = in.at(0);
    int64_t out_rank = x.dim() + static_cast<int64_t>(axes.size());
    for (auto& a : axes) a = norm_axis(n, a, out_rank);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      kernel_fail(n, "axes has duplicates");
    for (int64_t a : axes) x = x.unsqueeze(a);
    return {x};
  };
});

TONNX_KERNEL("Squeeze", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int opset = s.opset;
  return [&n, opset](const Tensors& in) -> Tensors {
    std::vector<int64_t> axes = axes_of(n, in, opset, 1, 13);
    at::Tensor x = in.at(0);
    if (axes.empty()) {
      std::vector<int64_t> shape;
      for (int64_t d : x.sizes())
        if (d != 1) shape.push_back(d);
      return {x.reshape(shape)};
    }
    for (auto& a : axes) {
      a = norm_axis(n, a, x.dim());
      if (x.size(a) != 1)
        kernel_fail(n, "cannot squeeze axis " + std::to_string(a) + " of size " +
                           std::to_string(x.size(a)));
    }
    std::sort(axes.rbegin(), axes.rend());
    for (int64_t a : axes) x = x.squeeze(a);
    return {x};
  };
});

// Slice: starts/ends/axes/steps as inputs (opset 10+) or attributes (< 10).
TONNX_KERNEL("Slice", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int opset = s.opset;
  return [&n, opset](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset >= 10) {
      starts = to_int_vector(in.at(1));
      ends = to_int_vector(in.at(2));
      if (in.size() > 3 && in[3].defined()) axes = to_int_vector(in[3]);
      if (in.size() > 4 && in[4].defined()) steps = to_int_vector(in[4]);
    } else {
      starts = n.attr_ints("starts");
      ends = n.attr_ints("ends");
      axes = n.attr_ints("axes");
    }
    if (starts.size() != ends.size()) kernel_fail(n, "starts and ends differ in length");
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || steps.size() != starts.size())
      kernel_fail(n, "starts, ends, axes and steps must have the same length; got " +
                         std::to_string(starts.size()) + ", " + std::to_string(ends.size()) + ", " +
                         std::to_string(axes.size()) + " and " + std::to_string(steps.size()));
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a = norm_axis(n, axes[i], x.dim());
      int64_t dim = x.size(a), step = steps[i];
      if (step == 0) kernel_fail(n, "steps must not be 0");
      int64_t st = starts[i], en = ends[i];
      if (st < 0) st += dim;
      if (en < 0) en += dim;
      if (step > 0) {
        st = std::clamp<int64_t>(st, 0, dim);
        en = std::clamp<int64_t>(en, 0, dim);
        x = en > st ? x.slice(a, st, en, step) : x.slice(a, 0, 0);
      } else {
        st = std::clamp<int64_t>(st, 0, dim - 1);
        en = std::clamp<int64_t>(en, -1, dim - 1);
        if (st <= en || dim == 0) {
          x = x.slice(a, 0, 0);
        } else {
          // Walk backwards: flip, then slice forward.
          at::Tensor f = x.flip(a);
          x = f.slice(a, dim - 1 - st, dim - 1 - en, -step);
        }
      }
    }
    return {x.contiguous()};
  };
});

TONNX_KERNEL("Expand", 8, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    std::vector<int64_t> shape = to_int_vector(in.at(1));
    const at::Tensor& x = in.at(0);
    // ONNX Expand broadcasts both ways (a dim of 1 in shape keeps the input's).
    size_t rank = std::max<size_t>(shape.size(), x.dim());
    std::vector<int64_t> out(rank);
    for (size_t i = 0; i < rank; ++i) {
      int64_t a = i + x.dim() >= rank ? x.size(i + x.dim() - rank) : 1;
      int64_t b = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
      out[i] = a == 1 ? b : a;
    }
    return {x.expand(out).contiguous()};
  };
});

}  // namespace
}  // namespace tonnx::backend
