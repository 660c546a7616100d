// The random ops (Bernoulli, RandomUniform(Like), RandomNormal(Like), Multinomial), which draw
// from LibTorch's generator.
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

TONNX_KERNEL("Bernoulli", 15, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  int64_t dtype = s.node.attr_i("dtype", 0);
  return [dtype](const Tensors& in) -> Tensors {
    at::Tensor y = at::bernoulli(in.at(0).to(at::kDouble));
    return {y.to(dtype ? ir::scalar_type_from_dtype(static_cast<ir::DType>(dtype))
                       : in[0].scalar_type())};
  };
});

TONNX_KERNEL("RandomUniformLike", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double lo = s.node.attr_f("low", 0.0f), hi = s.node.attr_f("high", 1.0f);
  int64_t dtype = s.node.attr_i("dtype", 0);
  return [lo, hi, dtype](const Tensors& in) -> Tensors {
    at::ScalarType st =
        dtype ? ir::scalar_type_from_dtype(static_cast<ir::DType>(dtype)) : in.at(0).scalar_type();
    return {at::empty(in.at(0).sizes(), st).uniform_(lo, hi)};
  };
});

// The dtype attribute of a random op (0: `fallback`), which must be a floating type.
at::ScalarType random_dtype(const ir::Node& n, int64_t dtype, at::ScalarType fallback) {
  if (dtype == 0) return fallback;
  at::ScalarType st = ir::scalar_type_from_dtype(static_cast<ir::DType>(dtype));
  if (!at::isFloatingType(st))
    kernel_fail(n, "dtype " + std::to_string(dtype) + " is not a floating-point type");
  return st;
}

// RandomUniform / RandomNormal: the shape attribute, checked, drawn from LibTorch's generator.
Kernel random_of_shape(const KernelSpec& s, bool normal) {
  const ir::Node& n = s.node;
  if (!n.attr("shape")) kernel_fail(n, "the shape attribute is required");
  std::vector<int64_t> shape = n.attr_ints("shape");
  checked_numel(n, shape, "shape");
  at::ScalarType st = random_dtype(n, n.attr_i("dtype", 1), at::kFloat);
  double a = n.attr_f(normal ? "mean" : "low", 0.0f);
  double b = n.attr_f(normal ? "scale" : "high", 1.0f);
  return [shape, st, a, b, normal](const Tensors&) -> Tensors {
    at::Tensor y = at::empty(shape, st);
    return {normal ? y.normal_(a, b) : y.uniform_(a, b)};
  };
}
TONNX_KERNEL("RandomUniform", 1, kAnyOpset,
             [](const KernelSpec& s) { return random_of_shape(s, false); });
TONNX_KERNEL("RandomNormal", 1, kAnyOpset,
             [](const KernelSpec& s) { return random_of_shape(s, true); });
TONNX_KERNEL("RandomNormalLike", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  double mean = s.node.attr_f("mean", 0.0f), scale = s.node.attr_f("scale", 1.0f);
  int64_t dtype = s.node.attr_i("dtype", 0);
  const ir::Node& n = s.node;
  return [&n, mean, scale, dtype](const Tensors& in) -> Tensors {
    at::ScalarType st = random_dtype(n, dtype, in.at(0).scalar_type());
    return {at::empty(in.at(0).sizes(), st).normal_(mean, scale)};
  };
});

// Multinomial(input [batch, classes] of unnormalized log-probabilities): sample_size draws
// per row, with replacement.
TONNX_KERNEL("Multinomial", 7, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t samples = n.attr_i("sample_size", 1);
  int64_t dtype = n.attr_i("dtype", 6);
  if (samples < 0) kernel_fail(n, "sample_size must be >= 0, got " + std::to_string(samples));
  if (dtype != 6 && dtype != 7)
    kernel_fail(n, "dtype must be 6 (int32) or 7 (int64), got " + std::to_string(dtype));
  return [&n, samples, dtype](const Tensors& in) -> Tensors {
    const at::Tensor& x = in.at(0);
    if (x.dim() != 2 || !at::isFloatingType(x.scalar_type()))
      kernel_fail(n, "input must be a 2-D floating-point tensor [batch, classes]");
    at::ScalarType out = dtype == 6 ? at::kInt : at::kLong;
    if (x.size(0) == 0 || samples == 0) return {at::empty({x.size(0), samples}, out)};
    if (x.size(1) == 0) kernel_fail(n, "input has no classes to draw from");
    // Softmax turns log-probabilities into probabilities; a row without any finite weight
    // fails in LibTorch with its own message.
    at::Tensor p = at::softmax(x.to(at::kDouble), 1);
    return {at::multinomial(p, samples, /*replacement=*/true).to(out)};
  };
});

}  // namespace
}  // namespace tonnx::backend
