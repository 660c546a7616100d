// Backend kernels: one per ONNX op and opset range, registered beside their code. A kernel
// factory parses the node's attributes once (at prepare time) and returns the Kernel that
// runs it; running does no attribute or graph work.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tonnx/backend.h"
#include "tonnx/ir.h"

namespace tonnx::backend {

using Tensors = std::vector<at::Tensor>;

// The function that runs one node. Most kernels compute over tensors (the common case: each
// input arrives as a tensor, undefined for an omitted optional input); kernels of sequences,
// optionals, strings and control flow take any run-time value. Both are a Kernel, built from
// a lambda of either form, and called the same way.
class Kernel {
 public:
  using OverTensors = std::function<Tensors(const Tensors&)>;
  using OverValues = std::function<RunValues(const RunValues&)>;

  Kernel() = default;
  template <typename F, std::enable_if_t<!std::is_same_v<std::decay_t<F>, Kernel> &&
                                             std::is_invocable_r_v<Tensors, F&, const Tensors&>,
                                         int> = 0>
  Kernel(F f) : tensors_(std::move(f)) {}
  template <typename F, std::enable_if_t<!std::is_same_v<std::decay_t<F>, Kernel> &&
                                             !std::is_invocable_r_v<Tensors, F&, const Tensors&> &&
                                             std::is_invocable_r_v<RunValues, F&, const RunValues&>,
                                         int> = 0>
  Kernel(F f) : values_(std::move(f)) {}

  // Runs the kernel. A tensor kernel fails (BackendError naming `node`) when an input is not
  // a tensor or an empty optional.
  RunValues operator()(const RunValues& inputs, const ir::Node& node) const;

  // Which of its paths the kernel chose at prepare and why, where it has several (the
  // convolutions: conv/choose.h); shown by the profile (NodeProfile::kernel). Empty elsewhere.
  void set_note(std::string note) { note_ = std::move(note); }
  const std::string& note() const { return note_; }

 private:
  OverTensors tensors_;
  OverValues values_;
  std::string note_;
};

// What a factory may read: the node (attributes, input count) and the model's opset.
struct KernelChoices {
  bool onednn_conv = false;  // Conv may run on oneDNN (rounds differently from LibTorch)
  bool onednn_gemm = false;  // MatMul/Gemm with a constant B may too (docs/backend.md)
  bool blocked_layout =
      false;              // activations may stay in oneDNN's nChw16c (kernels/blocked_layout.h)
  bool exact = false;     // LibTorch's kernels where a faster one rounds differently
  bool winograd = false;  // 3x3 stride-1 Conv may run Winograd (rounds differently)
};

struct KernelSpec {
  const ir::Node& node;
  int opset;
  // Per input, its value when it is an initializer of the node's graph (known at prepare, never
  // overridden at run time), else undefined. Empty in constant folding.
  std::vector<at::Tensor> constant_inputs;
  // The model's opset imports (subgraphs are planned with them); null in constant folding.
  const std::vector<ir::OpsetImport>* opsets = nullptr;
  // PrepareOptions' choices of kernels, the same for every node (subgraphs' too).
  KernelChoices choices{};
  // Which inputs, and whether output 0, the plan keeps in the blocked layout where it can
  // (kernels/blocked_layout.h): set only for the nodes blocked_plan.cpp names; empty elsewhere.
  std::vector<bool> blocked_in{};
  bool blocked_out = false;
  bool blocked_input(size_t i) const { return i < blocked_in.size() && blocked_in[i]; }
};
using KernelFactory = std::function<Kernel(const KernelSpec&)>;

constexpr int kAnyOpset = std::numeric_limits<int>::max();

// Registers a kernel for op_type in domain ("" is ai.onnx) at opsets since..until. Two kernels
// whose ranges overlap for one op are refused: the choice would depend on link order.
bool register_kernel(const std::string& op_type, const std::string& domain, int since, int until,
                     KernelFactory factory);
// The factory for op_type in domain at opset, or nullptr.
const KernelFactory* find_kernel(const std::string& op_type, const std::string& domain, int opset);

// Serves org.pytorch.aten nodes named after their aten op (ONNX_FALLTHROUGH exports).
const KernelFactory* aten_fallthrough_kernel();

// Subgraphs (If/Loop/Scan bodies). Names a node's subgraphs read from enclosing graphs; the
// plan passes their values to the node's kernel after its own inputs, in this order.
std::vector<std::string> subgraph_captures(const ir::Node& n);
struct SubPlan;
// Plans `g`; `captures` are the outer names it may read, passed to run_subplan in order.
std::shared_ptr<const SubPlan> plan_subgraph(const ir::Graph& g, const KernelSpec& parent,
                                             const std::vector<std::string>& captures);
RunValues run_subplan(const SubPlan& p, const RunValues& inputs, const RunValues& captures);

// The ATen type that holds an ONNX element type. Types ATen lacks are widened: uint16 to
// int32, uint32 and uint64 to int64 (uint64 keeps its bits). Throws for strings.
at::ScalarType storage_type(ir::DType t);

// auto_pad of the convolutions and pools, parsed once ("" reads as NOTSET); fails naming the
// node for any other value.
enum class AutoPad { NotSet, SameUpper, SameLower, Valid };
AutoPad parse_auto_pad(const ir::Node& n);
// The group attribute of Conv, ConvTranspose and the quantized convolutions: 1 to 2^31.
int64_t conv_group(const ir::Node& n);

// Equal of two string tensors (kernels/string.cpp).
at::Tensor equal_strings(const ir::Node& n, const RunValue& a, const RunValue& b);

// Throws RunCancelled when the current run (on this thread) passed its RunOptions limits:
// called before every node and by Loop and Scan before every iteration.
void check_run_limits(const ir::Node& n);

// Throws BackendError(n, what): the message names the node, the value and what was expected.
[[noreturn]] void kernel_fail(const ir::Node& n, const std::string& what);

// Normalizes a possibly negative axis against rank; fails naming the node when out of range.
int64_t norm_axis(const ir::Node& n, int64_t axis, int64_t rank);
// a * b, a + b and the product of sizes, failing (naming the node and `what`) where int64
// would overflow.
int64_t checked_mul(const ir::Node& n, int64_t a, int64_t b, const char* what);
int64_t checked_add(const ir::Node& n, int64_t a, int64_t b, const char* what);
int64_t checked_numel(const ir::Node& n, const std::vector<int64_t>& sizes, const char* what);
// Split sizes must be non-negative and add up to the axis' size; fails naming the node.
void check_split_sizes(const ir::Node& n, const std::vector<int64_t>& sizes, int64_t axis,
                       int64_t dim_size);
// Reads a 1-D int64 tensor (shape, axes, pads inputs) as a vector.
std::vector<int64_t> to_int_vector(const at::Tensor& t);

}  // namespace tonnx::backend

#define TONNX_KERNEL(op_type, since, until, ...)                                     \
  static const bool TONNX_KCONCAT(tonnx_kernel_reg_, __COUNTER__) [[maybe_unused]] = \
      ::tonnx::backend::register_kernel(op_type, "", since, until, __VA_ARGS__)
#define TONNX_KERNEL_DOMAIN(op_type, domain, since, until, ...)                      \
  static const bool TONNX_KCONCAT(tonnx_kernel_reg_, __COUNTER__) [[maybe_unused]] = \
      ::tonnx::backend::register_kernel(op_type, domain, since, until, __VA_ARGS__)
#define TONNX_KCONCAT_INNER(a, b) a##b
#define TONNX_KCONCAT(a, b) TONNX_KCONCAT_INNER(a, b)
