// The elementwise family: one generic kernel over tables of ATen functions.
#include "backend/kernels/blocked_layout.h"
#include "backend/kernels/kernel.h"
#include "passes/fuse.h"

namespace tonnx::backend {
namespace {

using Unary = at::Tensor (*)(const at::Tensor&);
using Binary = at::Tensor (*)(const at::Tensor&, const at::Tensor&);

// Elementwise, so a blocked input (kernels/blocked_layout.h; the plan allows it for Relu) is
// computed as it is.
KernelFactory unary(Unary f) {
  return [f](const KernelSpec& spec) -> Kernel {
    bool in_b = spec.blocked_input(0), out_b = spec.blocked_out;
    return [f, in_b, out_b](const Tensors& in) -> Tensors {
      if (is_blocked(in.at(0), in_b)) return {hand_on(f(in[0]), out_b)};
      return {f(in.at(0))};
    };
  };
}

// Result keeps the type of the first input (ONNX requires equal types; Pow keeps the base's).
KernelFactory binary(Binary f, bool keep_type = true) {
  return [f, keep_type](const KernelSpec& spec) -> Kernel {
    const ir::Node& node = spec.node;
    // Opset < 7 broadcasts only with broadcast=1, aligning B at `axis`.
    int64_t legacy_axis =
        spec.opset < 7 && node.attr_i("broadcast", 0) ? node.attr_i("axis", -1) : -1;
    bool legacy = spec.opset < 7 && node.has_attr("axis") && node.attr_i("broadcast", 0);
    // Blocked inputs (kernels/blocked_layout.h; the plan allows them for Add): two of one shape are
    // computed as they are, elementwise; otherwise both are read as NCHW.
    bool a_b = spec.blocked_input(0), b_b = spec.blocked_input(1), out_b = spec.blocked_out;
    return
        [&node, f, keep_type, legacy, legacy_axis, a_b, b_b, out_b](const Tensors& in) -> Tensors {
          at::Tensor a = in.at(0), b = in.at(1);
          if (is_blocked(a, a_b) || is_blocked(b, b_b)) {
            if (is_blocked(a, a_b) && is_blocked(b, b_b) && a.sizes() == b.sizes() &&
                a.scalar_type() == b.scalar_type())
              return {hand_on(f(a, b), out_b)};
            a = plain(a, a_b);
            b = plain(b, b_b);
          }
          if (legacy && b.dim() < a.dim()) {
            int64_t axis = legacy_axis < 0 ? legacy_axis + a.dim() : legacy_axis;
            if (axis < 0 || axis > a.dim() - b.dim())
              kernel_fail(node, "axis " + std::to_string(legacy_axis) + " places B (rank " +
                                    std::to_string(b.dim()) + ") outside A (rank " +
                                    std::to_string(a.dim()) + ")");
            std::vector<int64_t> shape(a.dim(), 1);
            for (int64_t i = 0; i < b.dim(); ++i) shape[axis + i] = b.size(i);
            b = b.reshape(shape);
          }
          at::Tensor r = f(a, b);
          if (keep_type && r.scalar_type() != a.scalar_type()) r = r.to(a.scalar_type());
          return {r};
        };
  };
}

at::Tensor relu(const at::Tensor& x) { return at::relu(x); }
at::Tensor sigmoid(const at::Tensor& x) { return at::sigmoid(x); }
at::Tensor tanh_(const at::Tensor& x) { return at::tanh(x); }
at::Tensor exp_(const at::Tensor& x) { return at::exp(x); }
at::Tensor log_(const at::Tensor& x) { return at::log(x); }
at::Tensor sqrt_(const at::Tensor& x) { return at::sqrt(x); }
at::Tensor neg(const at::Tensor& x) { return at::neg(x); }
at::Tensor abs_(const at::Tensor& x) { return at::abs(x); }
at::Tensor reciprocal(const at::Tensor& x) { return at::reciprocal(x); }
at::Tensor floor_(const at::Tensor& x) { return at::floor(x); }
at::Tensor ceil_(const at::Tensor& x) { return at::ceil(x); }
at::Tensor round_(const at::Tensor& x) { return at::round(x); }
at::Tensor sin_(const at::Tensor& x) { return at::sin(x); }
at::Tensor cos_(const at::Tensor& x) { return at::cos(x); }
at::Tensor tan_(const at::Tensor& x) { return at::tan(x); }
at::Tensor asin_(const at::Tensor& x) { return at::asin(x); }
at::Tensor acos_(const at::Tensor& x) { return at::acos(x); }
at::Tensor atan_(const at::Tensor& x) { return at::atan(x); }
at::Tensor sinh_(const at::Tensor& x) { return at::sinh(x); }
at::Tensor cosh_(const at::Tensor& x) { return at::cosh(x); }
at::Tensor asinh_(const at::Tensor& x) { return at::asinh(x); }
at::Tensor acosh_(const at::Tensor& x) { return at::acosh(x); }
at::Tensor atanh_(const at::Tensor& x) { return at::atanh(x); }
at::Tensor erf_(const at::Tensor& x) { return at::erf(x); }
at::Tensor sign(const at::Tensor& x) { return at::sign(x); }
at::Tensor not_(const at::Tensor& x) { return at::logical_not(x); }
at::Tensor isnan_(const at::Tensor& x) { return at::isnan(x); }
at::Tensor softsign(const at::Tensor& x) { return x / (1 + at::abs(x)); }
at::Tensor softplus(const at::Tensor& x) { return at::log1p(at::exp(-at::abs(x))) + at::relu(x); }

at::Tensor add(const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); }
at::Tensor sub(const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b); }
at::Tensor mul(const at::Tensor& a, const at::Tensor& b) { return at::mul(a, b); }
at::Tensor div(const at::Tensor& a, const at::Tensor& b) {
  // Integer division truncates toward zero, as C and ONNX Runtime do.
  if (at::isIntegralType(a.scalar_type(), /*includeBool=*/false)) return at::div(a, b, "trunc");
  return at::div(a, b);
}
at::Tensor pow_(const at::Tensor& a, const at::Tensor& b) { return at::pow(a, b); }
at::Tensor and_(const at::Tensor& a, const at::Tensor& b) { return at::logical_and(a, b); }
at::Tensor or_(const at::Tensor& a, const at::Tensor& b) { return at::logical_or(a, b); }
at::Tensor xor_(const at::Tensor& a, const at::Tensor& b) { return at::logical_xor(a, b); }
at::Tensor eq(const at::Tensor& a, const at::Tensor& b) { return at::eq(a, b); }
at::Tensor gt(const at::Tensor& a, const at::Tensor& b) { return at::gt(a, b); }
at::Tensor lt(const at::Tensor& a, const at::Tensor& b) { return at::lt(a, b); }
at::Tensor ge(const at::Tensor& a, const at::Tensor& b) { return at::ge(a, b); }
at::Tensor le(const at::Tensor& a, const at::Tensor& b) { return at::le(a, b); }

TONNX_KERNEL("Relu", 1, kAnyOpset, unary(relu));
TONNX_KERNEL("Sigmoid", 1, kAnyOpset, unary(sigmoid));
TONNX_KERNEL("Tanh", 1, kAnyOpset, unary(tanh_));
TONNX_KERNEL("Exp", 1, kAnyOpset, unary(exp_));
TONNX_KERNEL("Log", 1, kAnyOpset, unary(log_));
TONNX_KERNEL("Sqrt", 1, kAnyOpset, unary(sqrt_));
TONNX_KERNEL("Neg", 1, kAnyOpset, unary(neg));
TONNX_KERNEL("Abs", 1, kAnyOpset, unary(abs_));
TONNX_KERNEL("Reciprocal", 1, kAnyOpset, unary(reciprocal));
TONNX_KERNEL("Floor", 1, kAnyOpset, unary(floor_));
TONNX_KERNEL("Ceil", 1, kAnyOpset, unary(ceil_));
TONNX_KERNEL("Round", 11, kAnyOpset, unary(round_));
TONNX_KERNEL("Sin", 7, kAnyOpset, unary(sin_));
TONNX_KERNEL("Cos", 7, kAnyOpset, unary(cos_));
TONNX_KERNEL("Tan", 7, kAnyOpset, unary(tan_));
TONNX_KERNEL("Asin", 7, kAnyOpset, unary(asin_));
TONNX_KERNEL("Acos", 7, kAnyOpset, unary(acos_));
TONNX_KERNEL("Atan", 7, kAnyOpset, unary(atan_));
TONNX_KERNEL("Sinh", 9, kAnyOpset, unary(sinh_));
TONNX_KERNEL("Cosh", 9, kAnyOpset, unary(cosh_));
TONNX_KERNEL("Asinh", 9, kAnyOpset, unary(asinh_));
TONNX_KERNEL("Acosh", 9, kAnyOpset, unary(acosh_));
TONNX_KERNEL("Atanh", 9, kAnyOpset, unary(atanh_));
TONNX_KERNEL("Erf", 9, kAnyOpset, unary(erf_));
TONNX_KERNEL("Sign", 9, kAnyOpset, unary(sign));
TONNX_KERNEL("Not", 1, kAnyOpset, unary(not_));
TONNX_KERNEL("IsNaN", 9, kAnyOpset, unary(isnan_));
TONNX_KERNEL("Softsign", 1, kAnyOpset, unary(softsign));
TONNX_KERNEL("Softplus", 1, kAnyOpset, unary(softplus));

TONNX_KERNEL("Add", 1, kAnyOpset, binary(add));
TONNX_KERNEL("Sub", 1, kAnyOpset, binary(sub));
TONNX_KERNEL("Mul", 1, kAnyOpset, binary(mul));
TONNX_KERNEL("Div", 1, kAnyOpset, binary(div));
TONNX_KERNEL("Pow", 1, kAnyOpset, binary(pow_));
TONNX_KERNEL("And", 1, kAnyOpset, binary(and_, false));
TONNX_KERNEL("Or", 1, kAnyOpset, binary(or_, false));
TONNX_KERNEL("Xor", 1, kAnyOpset, binary(xor_, false));
// Opset 18's bitwise ops, on integer tensors (ONNX defines them for the integer types only).
at::Tensor bitwise_and(const at::Tensor& a, const at::Tensor& b) { return at::bitwise_and(a, b); }
at::Tensor bitwise_or(const at::Tensor& a, const at::Tensor& b) { return at::bitwise_or(a, b); }
at::Tensor bitwise_xor(const at::Tensor& a, const at::Tensor& b) { return at::bitwise_xor(a, b); }
at::Tensor bitwise_not(const at::Tensor& a) { return at::bitwise_not(a); }
TONNX_KERNEL("BitwiseAnd", 18, kAnyOpset, binary(bitwise_and));
TONNX_KERNEL("BitwiseOr", 18, kAnyOpset, binary(bitwise_or));
TONNX_KERNEL("BitwiseXor", 18, kAnyOpset, binary(bitwise_xor));
TONNX_KERNEL("BitwiseNot", 18, kAnyOpset, unary(bitwise_not));
// Mish (opset 18): x * tanh(softplus(x)), ATen's mish.
at::Tensor mish(const at::Tensor& x) { return at::mish(x); }
TONNX_KERNEL("Mish", 18, kAnyOpset, unary(mish));
// Equal compares string tensors too (string.cpp).
TONNX_KERNEL("Equal", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  Kernel numeric = binary(eq, false)(s);
  return [&n, numeric](const RunValues& in) -> RunValues {
    if (in.at(0).is_strings()) return {equal_strings(n, in[0], in.at(1))};
    return numeric(in, n);
  };
});
TONNX_KERNEL("Greater", 1, kAnyOpset, binary(gt, false));
TONNX_KERNEL("Less", 1, kAnyOpset, binary(lt, false));
TONNX_KERNEL("GreaterOrEqual", 12, kAnyOpset, binary(ge, false));
TONNX_KERNEL("LessOrEqual", 12, kAnyOpset, binary(le, false));

// Variadic Sum / Max / Min / Mean with broadcasting.
KernelFactory variadic(Binary f, bool mean) {
  return [f, mean](const KernelSpec&) -> Kernel {
    return [f, mean](const Tensors& in) -> Tensors {
      at::Tensor acc = in.at(0);
      for (size_t i = 1; i < in.size(); ++i) acc = f(acc, in[i]);
      if (mean) acc = acc / static_cast<double>(in.size());
      return {acc};
    };
  };
}
at::Tensor max_(const at::Tensor& a, const at::Tensor& b) { return at::maximum(a, b); }
at::Tensor min_(const at::Tensor& a, const at::Tensor& b) { return at::minimum(a, b); }
TONNX_KERNEL("Sum", 1, kAnyOpset, variadic(add, false));
TONNX_KERNEL("Mean", 1, kAnyOpset, variadic(add, true));
TONNX_KERNEL("Max", 1, kAnyOpset, variadic(max_, false));
TONNX_KERNEL("Min", 1, kAnyOpset, variadic(min_, false));

// Activations with attributes.
TONNX_KERNEL("LeakyRelu", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double alpha = s.node.attr_f("alpha", 0.01f);
  return [alpha](const Tensors& in) -> Tensors { return {at::leaky_relu(in.at(0), alpha)}; };
});
TONNX_KERNEL("Elu", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double alpha = s.node.attr_f("alpha", 1.0f);
  return [alpha](const Tensors& in) -> Tensors { return {at::elu(in.at(0), alpha)}; };
});
TONNX_KERNEL("Selu", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double alpha = s.node.attr_f("alpha", 1.67326319217681884765625f);
  double gamma = s.node.attr_f("gamma", 1.05070102214813232421875f);
  return [alpha, gamma](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    return {gamma * at::where(x > 0, x, alpha * (at::exp(x) - 1))};
  };
});
TONNX_KERNEL("HardSigmoid", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double alpha = s.node.attr_f("alpha", 0.2f), beta = s.node.attr_f("beta", 0.5f);
  return [alpha, beta](const Tensors& in) -> Tensors {
    return {at::clamp(in.at(0) * alpha + beta, 0, 1)};
  };
});
TONNX_KERNEL("HardSwish", 14, kAnyOpset,
             unary([](const at::Tensor& x) { return at::hardswish(x); }));
TONNX_KERNEL("PRelu", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  bool legacy = s.opset < 7;
  return [legacy](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    at::Tensor slope = in.at(1);
    // Before opset 7 a 1-D slope of C values is per channel (axis 1), not trailing-aligned.
    if (legacy && slope.dim() == 1 && x.dim() > 2 && slope.size(0) == x.size(1) &&
        slope.size(0) != 1) {
      std::vector<int64_t> shape(x.dim() - 1, 1);
      shape[0] = slope.size(0);
      slope = slope.reshape(shape);
    }
    return {at::where(x >= 0, x, x * slope)};
  };
});
TONNX_KERNEL("Clip", 1, 10, [](const KernelSpec& s) -> Kernel {
  double lo = s.node.attr_f("min", std::numeric_limits<float>::lowest());
  double hi = s.node.attr_f("max", std::numeric_limits<float>::max());
  return [lo, hi](const Tensors& in) -> Tensors { return {at::clamp(in.at(0), lo, hi)}; };
});
TONNX_KERNEL("Clip", 11, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const Tensors& in) -> Tensors {
    at::Tensor x = in.at(0);
    if (in.size() > 1 && in[1].defined()) x = at::maximum(x, in[1].to(x.scalar_type()));
    if (in.size() > 2 && in[2].defined()) x = at::minimum(x, in[2].to(x.scalar_type()));
    return {x};
  };
});

// Gelu (opset 20), and ai.tonnx::Gelu: GELU written out in ONNX ops, recognised at prepare
// (passes/fuse/gelu.cpp). X, approximate "none" or "tanh": one call of ATen's gelu.
Kernel gelu(const KernelSpec& s) {
  const ir::Node& n = s.node;
  if (n.inputs().size() != 1 || !n.input(0) || n.outputs().size() != 1)
    kernel_fail(n, "takes X and 1 output, got " + std::to_string(n.inputs().size()) +
                       " inputs and " + std::to_string(n.outputs().size()) + " outputs");
  std::string approximate = n.attr_s("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    kernel_fail(n, "approximate is '" + approximate + "', expected 'none' or 'tanh'");
  return [approximate, &n](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (!at::isFloatingType(x.scalar_type())) kernel_fail(n, "X must be a float tensor");
    return {at::gelu(x, approximate)};
  };
}
TONNX_KERNEL("Gelu", 20, kAnyOpset, gelu);
TONNX_KERNEL_DOMAIN("Gelu", passes::kFusedDomain, 1, kAnyOpset, gelu);

}  // namespace
}  // namespace tonnx::backend
