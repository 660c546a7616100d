// Meta kernels (sizes, strides and dtype, no values) for the aten ops that the zoo's models
// reach and that LibTorch 1.13's C++ library has none for: Python registers its own at import
// (torch._meta_registrations), C++ does not. They serve the shapes-only trace (trace.cpp).
//
// Each kernel handles only the plain case the CPU kernel handles the same way (dense float or
// double with the default contiguous strides) and throws on anything else, which sends the export
// back to a trace on real values: a meta kernel that guessed would give the graph wrong sizes
// without a word. tests/shape_trace_test.cpp checks each against the CPU kernel.
#include "export/trace.h"

#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/strides.h>
#include <torch/library.h>

namespace tonnx::detail {
namespace {

at::Tensor meta_like(at::IntArrayRef sizes, const at::Tensor& like) {
  return at::empty(sizes, like.options().device(at::kMeta));
}

// Contiguous with the default strides, also on dims of size 1: is_contiguous() ignores their
// strides, but the CPU kernels read a channels-last layout from them (a grayscale NHWC image
// permuted to NCHW convolves into a channels-last result).
void check_plain(const at::Tensor& t, const char* op, const char* what) {
  TORCH_CHECK(t.is_meta() && t.layout() == at::kStrided &&
                  t.strides().equals(c10::contiguous_strides(t.sizes())) &&
                  t.suggest_memory_format() == at::MemoryFormat::Contiguous &&
                  (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble),
              "tonnx's meta kernel for ", op, " takes only contiguous float or double tensors; ",
              what, " is not (the export traces on real values instead)");
}

// Output sizes as ATen's convolution computes them; _convolution has checked the shapes.
at::Tensor convolution_meta(const at::Tensor& input, const at::Tensor& weight,
                            const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                            at::IntArrayRef output_padding, int64_t groups) {
  const char* op = "convolution";
  check_plain(input, op, "the input");
  check_plain(weight, op, "the weight");
  if (bias && bias->defined()) check_plain(*bias, op, "the bias");
  const int64_t dim = input.dim(), spatial = dim - 2;
  TORCH_CHECK(dim >= 3 && dim <= 5 && weight.dim() == dim && groups >= 1 &&
                  input.scalar_type() == weight.scalar_type(),
              "tonnx's meta kernel for convolution: unexpected ranks, groups or dtypes");
  auto fits = [&](at::IntArrayRef v) { return static_cast<int64_t>(v.size()) == spatial; };
  TORCH_CHECK(
      fits(stride) && fits(padding) && fits(dilation) && (!transposed || fits(output_padding)),
      "tonnx's meta kernel for convolution: parameters do not match the rank");
  std::vector<int64_t> out{input.size(0), transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t k = 0; k < spatial; ++k) {
    const int64_t in = input.size(k + 2), kernel = weight.size(k + 2);
    const int64_t extent = dilation[k] * (kernel - 1) + 1;
    int64_t size = transposed ? (in - 1) * stride[k] - 2 * padding[k] + extent + output_padding[k]
                              : (in + 2 * padding[k] - extent) / stride[k] + 1;
    TORCH_CHECK(stride[k] > 0 && size > 0,
                "tonnx's meta kernel for convolution: the output would be empty");
    out.push_back(size);
  }
  return meta_like(out, input);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_meta(
    const at::Tensor& input, const c10::optional<at::Tensor>& weight,
    const c10::optional<at::Tensor>& bias, const c10::optional<at::Tensor>& running_mean,
    const c10::optional<at::Tensor>& running_var, bool training, double /*momentum*/,
    double /*eps*/) {
  const char* op = "batch_norm";
  check_plain(input, op, "the input");
  TORCH_CHECK(input.dim() >= 2, "tonnx's meta kernel for batch_norm: input of rank < 2");
  const int64_t channels = input.size(1);
  for (const auto* t : {&weight, &bias, &running_mean, &running_var}) {
    if (!*t || !(*t)->defined()) {
      TORCH_CHECK(training || (t != &running_mean && t != &running_var),
                  "tonnx's meta kernel for batch_norm: no running statistics in eval mode");
      continue;
    }
    check_plain(**t, op, "a parameter");
    TORCH_CHECK(
        (*t)->dim() == 1 && (*t)->size(0) == channels && (*t)->scalar_type() == input.scalar_type(),
        "tonnx's meta kernel for batch_norm: a parameter's size or dtype differs");
  }
  const int64_t stats = training ? channels : 0;
  return {meta_like(input.sizes(), input), meta_like({stats}, input), meta_like({stats}, input)};
}

at::Tensor adaptive_avg_pool2d_meta(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  const char* op = "adaptive_avg_pool2d";
  check_plain(self, op, "the input");
  TORCH_CHECK(output_size.size() == 2 && (self.dim() == 3 || self.dim() == 4),
              "tonnx's meta kernel for adaptive_avg_pool2d: unexpected ranks");
  for (int64_t k = 1; k < self.dim(); ++k)
    TORCH_CHECK(self.size(k) > 0, "tonnx's meta kernel for adaptive_avg_pool2d: empty input");
  std::vector<int64_t> out(self.sizes().begin(), self.sizes().end() - 2);
  for (const c10::SymInt& s : output_size) {
    TORCH_CHECK(!s.is_symbolic() && s.as_int_unchecked() >= 0,
                "tonnx's meta kernel for adaptive_avg_pool2d: unexpected output size");
    out.push_back(s.as_int_unchecked());
  }
  return meta_like(out, self);
}

at::Tensor index_select_meta(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  TORCH_CHECK(self.is_meta() && self.layout() == at::kStrided && self.dim() >= 1,
              "tonnx's meta kernel for index_select: the input must be a dense tensor of rank >= "
              "1");
  TORCH_CHECK(
      index.dim() == 1 && (index.scalar_type() == at::kLong || index.scalar_type() == at::kInt),
      "tonnx's meta kernel for index_select: the index must be a 1-D int or long tensor");
  TORCH_CHECK(dim >= -self.dim() && dim < self.dim(),
              "tonnx's meta kernel for index_select: dim out of range");
  if (dim < 0) dim += self.dim();
  std::vector<int64_t> out(self.sizes().begin(), self.sizes().end());
  out[static_cast<size_t>(dim)] = index.numel();
  return at::empty(out, self.options().device(at::kMeta));
}

// Elementwise ops: TensorIterator sizes and lays out the result as it does for the CPU kernel.
at::Tensor relu_meta(const at::Tensor& self) {
  TORCH_CHECK(self.is_meta() && self.scalar_type() != at::kBool && !self.is_complex(),
              "tonnx's meta kernel for relu: a bool or complex input");
  at::Tensor out;
  return at::TensorIteratorConfig().add_output(out).add_input(self).build().output();
}

at::Tensor where_meta(const at::Tensor& condition, const at::Tensor& self,
                      const at::Tensor& other) {
  // Type promotion between self and other, and uint8 conditions, stay with the CPU kernel.
  TORCH_CHECK(condition.scalar_type() == at::kBool && self.scalar_type() == other.scalar_type(),
              "tonnx's meta kernel for where: the condition must be bool, and self and other "
              "of one dtype");
  // As the CPU kernel: an empty result of the dtype, which the iterator resizes and lays out.
  at::Tensor out = at::empty({0}, self.options().device(at::kMeta));
  return at::TensorIteratorConfig()
      .check_all_same_dtype(false)
      .add_output(out)
      .add_input(condition)
      .add_input(self)
      .add_input(other)
      .build()
      .output();
}

// name: "aten::op" or "aten::op.overload".
bool has_meta_kernel(const std::string& name) {
  size_t dot = name.find('.');
  auto op = c10::Dispatcher::singleton().findSchema(
      {name.substr(0, dot), dot == std::string::npos ? "" : name.substr(dot + 1)});
  return !op || op->hasKernelForDispatchKey(c10::DispatchKey::Meta);
}

}  // namespace

void register_meta_kernels() {
  // Kept for the life of the process (the registrations end with the Library object), and
  // reachable from this static for leak checkers.
  static const torch::Library* const lib = [] {
    auto* l = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::Meta, __FILE__,
                                 __LINE__);
    // Only where LibTorch (or the application) has none, so that a real one always wins.
    if (!has_meta_kernel("aten::convolution_overrideable"))
      l->impl("convolution_overrideable", TORCH_FN(convolution_meta));
    if (!has_meta_kernel("aten::native_batch_norm"))
      l->impl("native_batch_norm", TORCH_FN(batch_norm_meta));
    if (!has_meta_kernel("aten::_adaptive_avg_pool2d"))
      l->impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d_meta));
    if (!has_meta_kernel("aten::index_select"))
      l->impl("index_select", TORCH_FN(index_select_meta));
    if (!has_meta_kernel("aten::relu")) l->impl("relu", TORCH_FN(relu_meta));
    if (!has_meta_kernel("aten::where.self")) l->impl("where.self", TORCH_FN(where_meta));
    return l;
  }();
  (void)lib;
}

}  // namespace tonnx::detail
