// The kernel registry, the Kernel call and the helpers every kernel shares.
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "backend/kernels/kernel.h"
#include "ir/schemas.h"

namespace tonnx::backend {
namespace {

struct Entry {
  int since, until;
  KernelFactory factory;
};
struct Registry {
  std::map<std::pair<std::string, std::string>, std::vector<Entry>> kernels;
  std::mutex mu;
};
Registry& registry() {
  static Registry r;
  return r;
}

// The ai.onnx ops whose kernels implement a version from 18 on although registered at an older
// one (one kernel serves them all): the newest version each implements. A kernel registered
// before 18 and not listed here implements the versions up to 17 only: a model whose op has
// a later version that changed its meaning (schemas.h: semantic_version) gets no kernel
// instead of the old meaning. Each kernel refuses, naming it, what of these versions it lacks.
const std::map<std::string, int>& implemented_through() {
  static const std::map<std::string, int> m = {
      // Axes as an input (ReduceSum already at 13).
      {"ReduceL1", 18},
      {"ReduceL2", 18},
      {"ReduceLogSum", 18},
      {"ReduceLogSumExp", 18},
      {"ReduceMax", 18},
      {"ReduceMean", 18},
      {"ReduceMin", 18},
      {"ReduceProd", 18},
      {"ReduceSumSquare", 18},
      {"Pad", 19},          // axes (18); mode "wrap" (19) is refused
      {"Split", 18},        // num_outputs
      {"AveragePool", 22},  // dilations other than 1 are refused; 22's end-pad windows with
      {"MaxPool", 22},      // ceil_mode on the padded path refused
      {"Resize", 19},       // antialias, keep_aspect_ratio_policy, half_pixel_symmetric refused
      {"ScatterElements", 18},
      {"ScatterND", 18},  // reduction max and min
      {"OptionalHasElement", 18},
      {"OptionalGetElement", 18},  // a tensor or sequence input, not only an optional
      {"DFT", 20},                 // axis as an input
      {"QuantizeLinear", 21},      // block_size other than 0 is refused; output_dtype
      {"DequantizeLinear", 21},    // block_size other than 0 is refused
  };
  return m;
}

}  // namespace

RunValues Kernel::operator()(const RunValues& inputs, const ir::Node& node) const {
  if (values_) return values_(inputs);
  Tensors args;
  args.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const RunValue& v = inputs[i];
    if (v.is_tensor())
      args.push_back(v.tensor());
    else if (v.is_none())
      args.emplace_back();
    else
      kernel_fail(node, "input " + std::to_string(i) + " ('" +
                            (node.input(i) ? node.input(i)->name() : std::string()) +
                            "') must be a tensor but is " + v.describe());
  }
  Tensors outs = tensors_(args);
  return RunValues(std::make_move_iterator(outs.begin()), std::make_move_iterator(outs.end()));
}

bool register_kernel(const std::string& op_type, const std::string& domain, int since, int until,
                     KernelFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& list = r.kernels[{domain, op_type}];
  for (const auto& k : list)
    if (since <= k.until && k.since <= until)
      throw std::logic_error("tonnx: two backend kernels for " +
                             (domain.empty() ? std::string() : domain + "::") + op_type +
                             " overlap at opsets " + std::to_string(std::max(since, k.since)) +
                             "-" + std::to_string(std::min(until, k.until)));
  list.push_back({since, until, std::move(factory)});
  return true;
}

const KernelFactory* find_kernel(const std::string& op_type, const std::string& domain, int opset) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kernels.find({domain, op_type});
  if (it == r.kernels.end())
    return domain == "org.pytorch.aten" ? aten_fallthrough_kernel() : nullptr;
  if (domain.empty() && opset > 17) {
    int version = ir::semantic_version(op_type, opset);
    if (version > 17) {
      int through = 0;
      auto listed = implemented_through().find(op_type);
      if (listed != implemented_through().end()) through = listed->second;
      for (const Entry& e : it->second)
        if (e.since <= opset && opset <= e.until) through = std::max(through, e.since);
      if (through < version) return nullptr;
    }
  }
  for (const Entry& e : it->second)
    if (opset >= e.since && opset <= e.until) return &e.factory;  // ranges never overlap
  return nullptr;
}

std::vector<KernelInfo> kernels_as_registered();

std::vector<KernelInfo> registered_kernels() {
  std::vector<KernelInfo> out = kernels_as_registered();
  for (KernelInfo& k : out) {
    if (!k.domain.empty()) {
      k.runs_until = k.until;
      continue;
    }
    const KernelFactory* mine = find_kernel(k.op_type, "", k.since);
    for (int v = k.since; v <= std::min(k.until, ir::kMaxDefaultOpset); ++v)
      if (find_kernel(k.op_type, "", v) == mine) k.runs_until = v;
  }
  return out;
}

std::vector<KernelInfo> kernels_as_registered() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<KernelInfo> out;
  for (const auto& [key, entries] : r.kernels)
    for (const Entry& e : entries) out.push_back({key.second, key.first, e.since, e.until, 0});
  std::sort(out.begin(), out.end(), [](const KernelInfo& a, const KernelInfo& b) {
    return std::tie(a.domain, a.op_type, a.since) < std::tie(b.domain, b.op_type, b.since);
  });
  return out;
}

at::ScalarType storage_type(ir::DType t) {
  switch (t) {
    case ir::DType::UInt16:
      return at::kInt;
    case ir::DType::UInt32:
    case ir::DType::UInt64:
      return at::kLong;
    default:
      return ir::scalar_type_from_dtype(t);
  }
}

AutoPad parse_auto_pad(const ir::Node& n) {
  std::string s = n.attr_s("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  kernel_fail(n, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID; got '" + s + "'");
}

void kernel_fail(const ir::Node& n, const std::string& what) { throw BackendError(n, what); }

int64_t norm_axis(const ir::Node& n, int64_t axis, int64_t rank) {
  if (auto a = ir::normalize_axis(axis, rank)) return *a;
  if (rank == 0 && axis == 0) return 0;  // a scalar's only axis
  kernel_fail(n, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                     std::to_string(rank) + " (expected " + std::to_string(-rank) + " to " +
                     std::to_string(rank - 1) + ")");
}

int64_t checked_mul(const ir::Node& n, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    kernel_fail(n, std::string(what) + " overflows int64 (" + std::to_string(a) + " * " +
                       std::to_string(b) + ")");
  return r;
}
int64_t checked_add(const ir::Node& n, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    kernel_fail(n, std::string(what) + " overflows int64 (" + std::to_string(a) + " + " +
                       std::to_string(b) + ")");
  return r;
}
int64_t checked_numel(const ir::Node& n, const std::vector<int64_t>& sizes, const char* what) {
  for (int64_t v : sizes)
    if (v < 0) kernel_fail(n, std::string(what) + " has a negative size: " + c10::str(sizes));
  std::optional<int64_t> r = ir::product_of(sizes);
  if (!r)
    kernel_fail(n, std::string(what) + " overflows int64 (the product of " + c10::str(sizes) + ")");
  return *r;
}

void check_split_sizes(const ir::Node& n, const std::vector<int64_t>& sizes, int64_t axis,
                       int64_t dim_size) {
  int64_t total = 0;
  for (int64_t v : sizes) {
    if (v < 0 || v > dim_size - total)
      kernel_fail(n, "split sizes " + c10::str(c10::IntArrayRef(sizes)) +
                         " do not add up to axis " + std::to_string(axis) + "'s size " +
                         std::to_string(dim_size));
    total += v;
  }
  if (total != dim_size)
    kernel_fail(n, "split sizes sum to " + std::to_string(total) + " but axis " +
                       std::to_string(axis) + " has " + std::to_string(dim_size));
}

std::vector<int64_t> to_int_vector(const at::Tensor& t) {
  // Shapes, axes, pads and counts are integers in ONNX: a float tensor here is a malformed
  // model (and NaN or 1e30 have no int64 value).
  if (!t.defined() || !at::isIntegralType(t.scalar_type(), /*includeBool=*/true))
    throw std::invalid_argument(
        "an input that holds shapes, axes, sizes, pads or counts must be an integer tensor, "
        "not " +
        std::string(t.defined() ? c10::toString(t.scalar_type()) : "an omitted input"));
  at::Tensor c = t.to(at::kLong).contiguous().reshape({-1});
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace tonnx::backend
