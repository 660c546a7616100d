// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin.
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

using Reducer = std::function<at::Tensor(const at::Tensor&, const std::vector<int64_t>&, bool)>;

using Unary = at::Tensor (*)(const at::Tensor&);
at::Tensor same(const at::Tensor& x) { return x; }

// Axes are an attribute before opset 18 (13 for ReduceSum) and an optional input after. With
// noop_with_empty_axes and no axes, the reduction is over no axis: `none` (the op's steps
// other than the sum: |x| for ReduceL1, log(x) for ReduceLogSum, ...), as ONNX states it.
KernelFactory reduce(Reducer f, int axes_input_since, Unary none = same) {
  return [f, axes_input_since, none](const KernelSpec& s) -> Kernel {
    const ir::Node& n = s.node;
    bool keep = n.attr_i("keepdims", 1) != 0;
    bool noop_empty = n.attr_i("noop_with_empty_axes", 0) != 0;
    bool axes_from_input = s.opset >= axes_input_since;
    std::vector<int64_t> attr_axes = n.attr_ints("axes");
    return
        [f, none, keep, noop_empty, axes_from_input, attr_axes, &n](const Tensors& in) -> Tensors {
          const at::Tensor& x = in.at(0);
          std::vector<int64_t> axes = attr_axes;
          if (axes_from_input)
            axes = in.size() > 1 && in[1].defined() ? to_int_vector(in[1]) : std::vector<int64_t>{};
          if (axes.empty()) {
            if (noop_empty) return {none(x)};
            for (int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
          }
          for (auto& a : axes) a = norm_axis(n, a, x.dim());
          std::sort(axes.begin(), axes.end());
          axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
          if (x.dim() == 0) return {f(x, {}, keep)};
          return {f(x, axes, keep)};
        };
  };
}

// Over no axis (noop_with_empty_axes): what is left of each op without its sum.
at::Tensor abs_of(const at::Tensor& x) { return at::abs(x); }
at::Tensor l2_of(const at::Tensor& x) {
  at::Tensor xf = at::isFloatingType(x.scalar_type()) ? x : x.to(at::kDouble);
  return at::sqrt(xf * xf).to(x.scalar_type());
}
at::Tensor square_of(const at::Tensor& x) { return x * x; }
at::Tensor log_of(const at::Tensor& x) { return at::log(x); }
at::Tensor log_exp_of(const at::Tensor& x) { return at::log(at::exp(x)); }

at::Tensor amax_or_empty(const at::Tensor& x, const std::vector<int64_t>& a, bool k, bool is_max) {
  // ATen refuses max over an empty dim; ONNX Runtime returns -inf/+inf (the identity).
  for (int64_t d : a)
    if (x.size(d) == 0) {
      std::vector<int64_t> shape = x.sizes().vec();
      for (int64_t dd : a) shape[dd] = k ? 1 : -1;
      std::vector<int64_t> out;
      for (int64_t v : shape)
        if (v != -1) out.push_back(v);
      double fill = is_max ? -std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::infinity();
      if (!at::isFloatingType(x.scalar_type()))
        fill = is_max ? static_cast<double>(std::numeric_limits<int64_t>::min())
                      : static_cast<double>(std::numeric_limits<int64_t>::max());
      if (x.scalar_type() == at::kBool) fill = is_max ? 0 : 1;  // (ReduceMax/Min-20)
      return at::full(out, fill, x.options());
    }
  if (a.empty()) return x;
  return is_max ? at::amax(x, a, k) : at::amin(x, a, k);
}

TONNX_KERNEL("ReduceSum", 1, kAnyOpset,
             reduce([](const at::Tensor& x, const std::vector<int64_t>& a,
                       bool k) { return at::sum(x, a, k, x.scalar_type()); },
                    13));
TONNX_KERNEL("ReduceMean", 1, kAnyOpset,
             reduce(
                 [](const at::Tensor& x, const std::vector<int64_t>& a, bool k) {
                   if (!at::isFloatingType(x.scalar_type()))
                     return at::mean(x.to(at::kDouble), a, k).to(x.scalar_type());
                   return at::mean(x, a, k);
                 },
                 18));
TONNX_KERNEL("ReduceMax", 1, kAnyOpset,
             reduce([](const at::Tensor& x, const std::vector<int64_t>& a,
                       bool k) { return amax_or_empty(x, a, k, true); },
                    18));
TONNX_KERNEL("ReduceMin", 1, kAnyOpset,
             reduce([](const at::Tensor& x, const std::vector<int64_t>& a,
                       bool k) { return amax_or_empty(x, a, k, false); },
                    18));
TONNX_KERNEL("ReduceProd", 1, kAnyOpset,
             reduce(
                 [](const at::Tensor& x, const std::vector<int64_t>& a, bool k) {
                   at::Tensor y = x;
                   for (auto it = a.rbegin(); it != a.rend(); ++it)
                     y = at::prod(y, *it, k, x.scalar_type());
                   return y;
                 },
                 18));
TONNX_KERNEL("ReduceL1", 1, kAnyOpset,
             reduce([](const at::Tensor& x, const std::vector<int64_t>& a,
                       bool k) { return at::sum(at::abs(x), a, k, x.scalar_type()); },
                    18, abs_of));
TONNX_KERNEL("ReduceL2", 1, kAnyOpset,
             reduce(
                 [](const at::Tensor& x, const std::vector<int64_t>& a, bool k) {
                   at::Tensor xf = at::isFloatingType(x.scalar_type()) ? x : x.to(at::kDouble);
                   return at::sqrt(at::sum(xf * xf, a, k)).to(x.scalar_type());
                 },
                 18, l2_of));
TONNX_KERNEL("ReduceSumSquare", 1, kAnyOpset,
             reduce([](const at::Tensor& x, const std::vector<int64_t>& a,
                       bool k) { return at::sum(x * x, a, k, x.scalar_type()); },
                    18, square_of));
TONNX_KERNEL("ReduceLogSum", 1, kAnyOpset,
             reduce([](const at::Tensor& x, const std::vector<int64_t>& a,
                       bool k) { return at::log(at::sum(x, a, k)); },
                    18, log_of));
TONNX_KERNEL("ReduceLogSumExp", 1, kAnyOpset,
             reduce(
                 [](const at::Tensor& x, const std::vector<int64_t>& a, bool k) {
                   if (x.numel() == 0) return at::log(at::sum(at::exp(x), a, k));
                   return at::logsumexp(x, a, k);
                 },
                 18, log_exp_of));

KernelFactory arg_reduce(bool is_max) {
  return [is_max](const KernelSpec& s) -> Kernel {
    const ir::Node& n = s.node;
    int64_t axis = n.attr_i("axis", 0);
    bool keep = n.attr_i("keepdims", 1) != 0;
    bool last = n.attr_i("select_last_index", 0) != 0;
    return [is_max, axis, keep, last, &n](const Tensors& in) -> Tensors {
      at::Tensor x = in.at(0);
      int64_t a = norm_axis(n, axis, x.dim());
      if (last) {
        at::Tensor flipped = x.flip(a);
        at::Tensor idx = is_max ? at::argmax(flipped, a, keep) : at::argmin(flipped, a, keep);
        return {x.size(a) - 1 - idx};
      }
      return {is_max ? at::argmax(x, a, keep) : at::argmin(x, a, keep)};
    };
  };
}
TONNX_KERNEL("ArgMax", 1, kAnyOpset, arg_reduce(true));
TONNX_KERNEL("ArgMin", 1, kAnyOpset, arg_reduce(false));

}  // namespace
}  // namespace tonnx::backend
