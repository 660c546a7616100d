// The plan's choice of blocked activations: see blocked_plan.h.
#include "backend/blocked_plan.h"

#include <algorithm>
#include <map>
#include <utility>

#include "backend/kernels/kernel.h"
#include "passes/fuse.h"

namespace tonnx::backend {

BlockedReader blocked_reader(const ir::Node& n, const ir::Graph& g) {
  const std::string& op = n.op_type();
  auto constant_4d_weight = [&] {
    const at::Tensor* w = n.inputs().size() > 1 && n.input(1) ? g.initializer(n.input(1)) : nullptr;
    return w && w->dim() == 4;
  };
  if (n.outputs().empty()) return {};
  if (n.domain().empty()) {
    if (op == "Conv" && n.inputs().size() <= 3 && constant_4d_weight()) return {{0}, true};
    if (op == "Relu" && n.inputs().size() == 1) return {{0}, false};
    if (op == "Add" && n.inputs().size() == 2) return {{0, 1}, false};
    if (op == "Concat" && !n.inputs().empty()) {
      int64_t axis = n.attr_i("axis", 1);
      if (axis != 1 && axis != -3) return {};
      std::vector<size_t> all(n.inputs().size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      return {all, false};
    }
    if ((op == "MaxPool" || op == "AveragePool") && n.outputs().size() == 1 &&
        n.attr_ints("kernel_shape").size() == 2)
      return {{0}, false};
    if (op == "BatchNormalization" && n.outputs().size() == 1 && n.attr_i("training_mode", 0) == 0)
      return {{0}, false};
    return {};
  }
  if (n.domain() == passes::kFusedDomain) {
    if (op == "FusedConv" && n.outputs().size() == 1 && n.attr_i("transposed", 0) == 0 &&
        constant_4d_weight())
      return {{0, 3}, true};
    if (op == "FusedBatchNorm" && n.outputs().size() == 1) return {{0}, false};
    if (op == "ConcatBatchNorm" && n.outputs().size() == 1 && n.inputs().size() > 4) {
      int64_t axis = n.attr_i("axis", 1);
      if (axis != 1 && axis != -3) return {};
      std::vector<size_t> xs;
      for (size_t i = 4; i < n.inputs().size(); ++i) xs.push_back(i);
      return {xs, false};
    }
  }
  return {};
}

std::set<std::string> blocked_values(const ir::Graph& g) {
  // Every read of a value by name: (node, input index), or index npos for a subgraph's read.
  constexpr size_t kSubgraph = static_cast<size_t>(-1);
  std::map<std::string, std::vector<std::pair<const ir::Node*, size_t>>> reads;
  std::map<std::string, int> producers;
  for (const auto& node : g.nodes()) {
    const ir::Node& n = *node;
    for (size_t i = 0; i < n.inputs().size(); ++i)
      if (n.input(i)) reads[n.input(i)->name()].push_back({&n, i});
    for (const std::string& c : subgraph_captures(n)) reads[c].push_back({&n, kSubgraph});
    for (const ir::Value* o : n.outputs())
      if (o) ++producers[o->name()];
  }
  std::set<std::string> outputs;
  for (const ir::Value* v : g.outputs()) outputs.insert(v->name());
  std::map<const ir::Node*, BlockedReader> readers;
  for (const auto& node : g.nodes()) readers[node.get()] = blocked_reader(*node, g);
  auto reads_blocked = [&](const ir::Node* m, size_t i) {
    const std::vector<size_t>& in = readers[m].inputs;
    return i != kSubgraph && std::find(in.begin(), in.end(), i) != in.end();
  };
  std::set<std::string> blocked;
  for (const auto& node : g.nodes()) {  // in order: a chain's start comes first
    const ir::Node& n = *node;
    const BlockedReader& r = readers[&n];
    if (r.inputs.empty() || !n.output(0) || n.output(0)->name().empty()) continue;
    const std::string& v = n.output(0)->name();
    if (outputs.count(v) || producers[v] != 1 || g.is_initializer(n.output(0))) continue;
    auto it = reads.find(v);
    if (it == reads.end()) continue;
    bool all = true;
    for (const auto& [m, i] : it->second) all = all && reads_blocked(m, i);
    if (!all) continue;
    bool rooted = r.root;
    // A FusedConv's Z broadcasts into its output and may raise the rank (Z of rank 5): that
    // output is 4-D, so it may be held blocked, only when Z is itself a blocked value.
    if (rooted && n.op_type() == "FusedConv" && n.inputs().size() > 3 && n.input(3))
      rooted = blocked.count(n.input(3)->name()) > 0;
    if (!rooted) {
      rooted = true;
      for (size_t i : r.inputs)
        if (i < n.inputs().size() && n.input(i))
          rooted = rooted && blocked.count(n.input(i)->name());
    }
    if (rooted) blocked.insert(v);
  }
  return blocked;
}

}  // namespace tonnx::backend
