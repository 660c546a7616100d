// Backend kernels: one per ONNX op and opset range, registered beside their code. A kernel
// factory parses the node's attributes once (at prepare time) and returns the function that
// runs it; run() does no attribute or graph work.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tonnx/backend.h"
#include "tonnx/ir.h"

namespace tonnx::backend {

using Tensors = std::vector<at::Tensor>;
// Inputs hold undefined tensors for omitted optional inputs.
using KernelFn = std::function<Tensors(const Tensors& inputs)>;

// What a factory may read: the node (attributes, input count) and the model's opset.
struct KernelSpec {
  const ir::Node& node;
  int opset;
  // Per input, its value when it is an initializer of the node's graph (known at prepare, never
  // overridden at run time), else undefined. Empty in constant folding.
  std::vector<at::Tensor> constant_inputs;
  // The model's opset imports (subgraphs are planned with them); null in constant folding.
  const std::vector<ir::OpsetImport>* opsets = nullptr;
  // PrepareOptions::onednn_conv: Conv may run on oneDNN (rounds differently from LibTorch).
  bool onednn_conv = false;
};
using KernelFactory = std::function<KernelFn(const KernelSpec&)>;

// Kernels over any run-time value (sequences, optionals, strings, control flow). The plan
// calls a value kernel with the node's inputs followed by the outer-scope values its
// subgraphs read (in the order of subgraph_captures(node)).
using ValueKernelFn = std::function<RunValues(const RunValues& inputs)>;
using ValueKernelFactory = std::function<ValueKernelFn(const KernelSpec&)>;
bool register_value_kernel(const std::string& op_type, const std::string& domain, int since,
                           int until, ValueKernelFactory factory);
const ValueKernelFactory* find_value_kernel(const std::string& op_type, const std::string& domain,
                                            int opset);

// Subgraphs (If/Loop/Scan bodies). Names a node's subgraphs read from enclosing graphs.
std::vector<std::string> subgraph_captures(const ir::Node& n);
struct SubPlan;
// Plans `g`; `captures` are the outer names it may read, passed to run_subplan in order.
std::shared_ptr<const SubPlan> plan_subgraph(const ir::Graph& g, const KernelSpec& parent,
                                             const std::vector<std::string>& captures);
RunValues run_subplan(const SubPlan& p, const RunValues& inputs, const RunValues& captures);
size_t subplan_num_inputs(const SubPlan& p);

constexpr int kAnyOpset = std::numeric_limits<int>::max();

bool register_kernel(const std::string& op_type, const std::string& domain, int since, int until,
                     KernelFactory factory);
// The factory for op_type in domain at opset, or nullptr.
const KernelFactory* find_kernel(const std::string& op_type, const std::string& domain, int opset);

struct KernelInfo {
  std::string op_type, domain;
  int since, until;
};
std::vector<KernelInfo> registered_kernels();

// Serves org.pytorch.aten nodes named after their aten op (ONNX_FALLTHROUGH exports).
const KernelFactory* aten_fallthrough_kernel();

// The ATen type that holds an ONNX element type. Types ATen lacks are widened: uint16 to
// int32, uint32 and uint64 to int64 (uint64 keeps its bits). Throws for strings.
at::ScalarType storage_type(ir::DType t);

// Error helpers: messages name the node, the value and what was expected.
[[noreturn]] void kernel_fail(const ir::Node& n, const std::string& what);
std::string node_label(const ir::Node& n);

// Normalizes a possibly negative axis against rank; fails naming the node when out of range.
int64_t norm_axis(const ir::Node& n, int64_t axis, int64_t rank);
// Reads a 1-D int64 tensor (shape, axes, pads inputs) as a vector.
std::vector<int64_t> to_int_vector(const at::Tensor& t);

}  // namespace tonnx::backend

#define TONNX_KERNEL(op_type, since, until, ...)                                  \
  static const bool TONNX_KCONCAT(tonnx_kernel_reg_, __LINE__) [[maybe_unused]] = \
      ::tonnx::backend::register_kernel(op_type, "", since, until, __VA_ARGS__)
#define TONNX_KERNEL_DOMAIN(op_type, domain, since, until, ...)                   \
  static const bool TONNX_KCONCAT(tonnx_kernel_reg_, __LINE__) [[maybe_unused]] = \
      ::tonnx::backend::register_kernel(op_type, domain, since, until, __VA_ARGS__)
#define TONNX_VALUE_KERNEL(op_type, since, until, ...)                            \
  static const bool TONNX_KCONCAT(tonnx_kernel_reg_, __LINE__) [[maybe_unused]] = \
      ::tonnx::backend::register_value_kernel(op_type, "", since, until, __VA_ARGS__)
#define TONNX_KCONCAT_INNER(a, b) a##b
#define TONNX_KCONCAT(a, b) TONNX_KCONCAT_INNER(a, b)
