#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "backend/kernel.h"

namespace tonnx::backend {
namespace {

struct Entry {
  int since, until;
  KernelFactory factory;
};
struct ValueEntry {
  int since, until;
  ValueKernelFactory factory;
};
struct Registry {
  std::map<std::pair<std::string, std::string>, std::vector<Entry>> kernels;
  std::map<std::pair<std::string, std::string>, std::vector<ValueEntry>> value_kernels;
  std::mutex mu;
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool register_kernel(const std::string& op_type, const std::string& domain, int since, int until,
                     KernelFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& list = r.kernels[{domain, op_type}];
  // Two kernels for one op and opset would make the choice depend on link order.
  for (const auto& k : list)
    if (since <= k.until && k.since <= until)
      throw std::logic_error("tonnx: two backend kernels for " +
                             (domain.empty() ? std::string() : domain + "::") + op_type +
                             " overlap at opsets " + std::to_string(std::max(since, k.since)) +
                             "-" + std::to_string(std::min(until, k.until)));
  list.push_back({since, until, std::move(factory)});
  return true;
}

bool register_value_kernel(const std::string& op_type, const std::string& domain, int since,
                           int until, ValueKernelFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.value_kernels[{domain, op_type}].push_back({since, until, std::move(factory)});
  return true;
}

const ValueKernelFactory* find_value_kernel(const std::string& op_type, const std::string& domain,
                                            int opset) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = r.value_kernels.find({d, op_type});
  if (it == r.value_kernels.end()) return nullptr;
  const ValueEntry* best = nullptr;
  for (const ValueEntry& e : it->second)
    if (opset >= e.since && opset <= e.until && (!best || e.since > best->since)) best = &e;
  return best ? &best->factory : nullptr;
}

const KernelFactory* find_kernel(const std::string& op_type, const std::string& domain, int opset) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = r.kernels.find({d, op_type});
  if (it == r.kernels.end()) return d == "org.pytorch.aten" ? aten_fallthrough_kernel() : nullptr;
  const Entry* best = nullptr;
  for (const Entry& e : it->second)
    if (opset >= e.since && opset <= e.until && (!best || e.since > best->since)) best = &e;
  return best ? &best->factory : nullptr;
}

std::vector<KernelInfo> registered_kernels() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<KernelInfo> out;
  for (const auto& [key, entries] : r.kernels)
    for (const Entry& e : entries) out.push_back({key.second, key.first, e.since, e.until});
  for (const auto& [key, entries] : r.value_kernels)
    for (const ValueEntry& e : entries) out.push_back({key.second, key.first, e.since, e.until});
  std::sort(out.begin(), out.end(), [](const KernelInfo& a, const KernelInfo& b) {
    return std::tie(a.domain, a.op_type, a.since) < std::tie(b.domain, b.op_type, b.since);
  });
  return out;
}

std::string node_label(const ir::Node& n) {
  std::string s = n.op_type();
  if (!n.domain().empty()) s = n.domain() + "::" + s;
  if (!n.name().empty())
    s += " node '" + n.name() + "'";
  else
    s += " node";
  return s;
}

void kernel_fail(const ir::Node& n, const std::string& what) {
  throw std::runtime_error(node_label(n) + ": " + what);
}

int64_t norm_axis(const ir::Node& n, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    kernel_fail(n, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                       std::to_string(rank) + " (expected " + std::to_string(-rank) + " to " +
                       std::to_string(rank - 1) + ")");
  return a;
}

std::vector<int64_t> to_int_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kLong).contiguous().reshape({-1});
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace tonnx::backend
