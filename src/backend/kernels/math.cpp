// Math kernels beyond the elementwise tables: activations with attributes, Mod, BitShift,
// CumSum, Det, Einsum, Hardmax, Trilu, Where, Range.
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

using Fn1 = std::function<at::Tensor(const at::Tensor&)>;
Kernel unary_fn(Fn1 f) {
  return [f](const Tensors& in) -> Tensors { return {f(in.at(0))}; };
}

TONNX_KERNEL("Celu", 12, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double alpha = s.node.attr_f("alpha", 1.0f);
  return unary_fn([alpha](const at::Tensor& x) { return at::celu(x, alpha); });
});
TONNX_KERNEL("ThresholdedRelu", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double alpha = s.node.attr_f("alpha", 1.0f);
  return unary_fn(
      [alpha](const at::Tensor& x) { return at::where(x > alpha, x, at::zeros_like(x)); });
});
TONNX_KERNEL("Shrink", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double bias = s.node.attr_f("bias", 0.0f), lambd = s.node.attr_f("lambd", 0.5f);
  return unary_fn([bias, lambd](const at::Tensor& x) {
    at::Tensor y =
        at::where(x < -lambd, x + bias, at::where(x > lambd, x - bias, at::zeros_like(x)));
    return y.to(x.scalar_type());
  });
});
TONNX_KERNEL("IsInf", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  bool pos = s.node.attr_i("detect_positive", 1) != 0,
       neg = s.node.attr_i("detect_negative", 1) != 0;
  return unary_fn([pos, neg](const at::Tensor& x) {
    at::Tensor r = at::zeros(x.sizes(), at::kBool);
    if (pos) r = r | at::isposinf(x);
    if (neg) r = r | at::isneginf(x);
    return r;
  });
});

// Mod: fmod=0 takes the divisor's sign (integers only), fmod=1 the dividend's (C fmod).
TONNX_KERNEL("Mod", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  bool fmod = s.node.attr_i("fmod", 0) != 0;
  return [fmod](const Tensors& in) -> Tensors {
    const at::Tensor &a = in.at(0), &b = in.at(1);
    if (fmod) return {at::fmod(a, b)};
    return {at::remainder(a, b)};
  };
});

TONNX_KERNEL("BitShift", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  std::string dir = s.node.attr_s("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    kernel_fail(s.node, "direction must be \"LEFT\" or \"RIGHT\", got \"" + dir + "\"");
  bool left = dir == "LEFT";
  return [left](const Tensors& in) -> Tensors {
    const at::Tensor &a = in.at(0), &b = in.at(1);
    return {left ? at::bitwise_left_shift(a, b) : at::bitwise_right_shift(a, b)};
  };
});

TONNX_KERNEL("CumSum", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool exclusive = n.attr_i("exclusive", 0) != 0, reverse = n.attr_i("reverse", 0) != 0;
  return [&n, exclusive, reverse](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    int64_t a = norm_axis(n, in.at(1).item<int64_t>(), x.dim());
    if (reverse) x = x.flip(a);
    at::Tensor y = at::cumsum(x, a, x.scalar_type());
    if (exclusive) y = y - x;
    if (reverse) y = y.flip(a);
    return {y};
  };
});

TONNX_KERNEL("Det", 11, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors { return {at::linalg_det(in.at(0))}; };
});

TONNX_KERNEL("Einsum", 12, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  std::string eq = s.node.attr_s("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  return [eq](const Tensors& in) -> Tensors { return {at::einsum(eq, in)}; };
});

// Hardmax: 1 at the first maximum along the axis (opset < 13: of the input coerced to 2-D).
TONNX_KERNEL("Hardmax", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  bool legacy = s.opset < 13;
  int64_t axis = n.attr_i("axis", legacy ? 1 : -1);
  return [&n, legacy, axis](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    int64_t a = norm_axis(n, axis, x.dim());
    at::Tensor v = x;
    int64_t along = a;
    if (legacy) {
      v = x.reshape({checked_numel(n, x.sizes().slice(0, a).vec(), "the outer size"), -1});
      along = 1;
    }
    at::Tensor idx = at::argmax(v, along, true);
    at::Tensor y = at::zeros_like(v).scatter_(along, idx, 1);
    return {y.reshape(x.sizes())};
  };
});

TONNX_KERNEL("Trilu", 14, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  bool upper = s.node.attr_i("upper", 1) != 0;
  return [upper](const Tensors& in) -> Tensors {
    int64_t k = in.size() > 1 && in[1].defined() ? in[1].item<int64_t>() : 0;
    const at::Tensor& x = in.at(0);
    return {upper ? at::triu(x, k) : at::tril(x, k)};
  };
});

TONNX_KERNEL("Where", 9, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    return {at::where(in.at(0).to(at::kBool), in.at(1), in.at(2))};
  };
});

TONNX_KERNEL("Range", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const Tensors& in) -> Tensors {
    const at::Tensor &start = in.at(0), &limit = in.at(1), &delta = in.at(2);
    at::ScalarType st = start.scalar_type();
    if (at::isFloatingType(st)) {
      double a = start.item<double>(), b = limit.item<double>(), d = delta.item<double>();
      if (d == 0) kernel_fail(n, "delta must not be 0");
      double steps = std::ceil((b - a) / d);
      if (!std::isfinite(steps) || steps > 9.0e18)
        kernel_fail(n, "start, limit and delta must give a finite number of values");
      int64_t count = std::max<int64_t>(0, static_cast<int64_t>(steps));
      return {(at::arange(count, at::kDouble) * d + a).to(st)};
    }
    int64_t a = start.item<int64_t>(), b = limit.item<int64_t>(), d = delta.item<int64_t>();
    if (d == 0) kernel_fail(n, "delta must not be 0");
    // In 128 bits: limit - start may not fit 64.
    __int128 span = static_cast<__int128>(b) - a + d + (d > 0 ? -1 : 1);
    __int128 cnt = span / d;
    int64_t count = cnt < 0 ? 0 : cnt > INT64_MAX ? INT64_MAX : static_cast<int64_t>(cnt);
    return {(at::arange(count, at::kLong) * d + a).to(st)};
  };
});

// Opset < 13: the input is coerced to 2-D at `axis`; 13 applies along one axis.
KernelFactory softmax_like(bool log) {
  return [log](const KernelSpec& s) -> Kernel {
    bool legacy = s.opset < 13;
    int64_t axis = s.node.attr_i("axis", legacy ? 1 : -1);
    const ir::Node& n = s.node;
    return [log, legacy, axis, &n](const Tensors& in) -> Tensors {
      const at::Tensor& x = in.at(0);
      int64_t a = norm_axis(n, axis, x.dim());
      if (!legacy) return {log ? at::log_softmax(x, a) : at::softmax(x, a)};
      at::Tensor flat =
          x.reshape({checked_numel(n, x.sizes().slice(0, a).vec(), "the outer size"), -1});
      at::Tensor y = log ? at::log_softmax(flat, 1) : at::softmax(flat, 1);
      return {y.reshape(x.sizes())};
    };
  };
}
TONNX_KERNEL("Softmax", 1, kAnyOpset, softmax_like(false));
TONNX_KERNEL("LogSoftmax", 1, kAnyOpset, softmax_like(true));

TONNX_KERNEL("Dropout", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  bool want_mask = s.node.outputs().size() > 1;
  double attr_ratio = s.node.attr_f("ratio", 0.5f);
  return [want_mask, attr_ratio](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    bool training = in.size() > 2 && in[2].defined() && in[2].item<bool>();
    double ratio = in.size() > 1 && in[1].defined() ? in[1].item<double>() : attr_ratio;
    if (!training || ratio == 0) {
      if (!want_mask) return {x};
      return {x, at::ones_like(x, at::kBool)};
    }
    // Training: a fresh mask from LibTorch's generator, scaled by 1 / (1 - ratio).
    at::Tensor mask = at::rand(x.sizes(), at::kDouble) >= ratio;
    return {(x * mask / (1 - ratio)).to(x.scalar_type()), mask};
  };
});

}  // namespace
}  // namespace tonnx::backend
