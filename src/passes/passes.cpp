// Structural rewrites shared by the exporter and the backend: dead code, names.
#include "passes/passes.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_set>

namespace tonnx::passes {

size_t eliminate_dead_code(ir::Graph& g) {
  std::unordered_set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());
  size_t removed = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    std::vector<ir::Node*> dead;
    for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
      ir::Node* n = it->get();
      bool used = false;
      for (ir::Value* o : n->outputs()) used = used || !o->uses().empty() || outputs.count(o);
      if (!used) dead.push_back(n);
    }
    for (ir::Node* n : dead) {
      g.remove_node(n);
      ++removed;
      changed = true;
    }
  }
  std::vector<ir::Value*> unused;
  for (const auto& [v, t] : g.initializers())
    if (v->uses().empty() && !outputs.count(v)) unused.push_back(v);
  for (ir::Value* v : unused) {
    g.remove_initializer(v);
    g.remove_input(v);
  }
  return removed;
}

size_t deduplicate_initializers(ir::Graph& g) {
  std::unordered_set<const ir::Value*> io(g.inputs().begin(), g.inputs().end());
  io.insert(g.outputs().begin(), g.outputs().end());
  std::map<std::pair<int, std::vector<int64_t>>, std::vector<ir::Value*>> groups;
  std::vector<std::pair<ir::Value*, ir::Value*>> merge;  // (duplicate, kept)
  for (const auto& [v, t] : g.initializers()) {
    if (io.count(v) || t.numel() == 0 || !t.is_contiguous()) continue;
    auto& group = groups[{static_cast<int>(t.scalar_type()), t.sizes().vec()}];
    const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
    ir::Value* same = nullptr;
    for (ir::Value* u : group) {
      const at::Tensor& o = *g.initializer(u);
      if (o.data_ptr() == t.data_ptr() || std::memcmp(o.data_ptr(), t.data_ptr(), bytes) == 0) {
        same = u;
        break;
      }
    }
    if (same)
      merge.emplace_back(v, same);
    else
      group.push_back(v);
  }
  for (auto [dup, kept] : merge) g.replace_all_uses(dup, kept);
  if (!merge.empty()) eliminate_dead_code(g);
  return merge.size();
}

size_t fold_initializer_transposes(ir::Graph& g) {
  std::unordered_set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());
  std::vector<ir::Node*> todo;
  for (const auto& n : g.nodes())
    if (n->op_type() == "Transpose" && n->domain().empty() && n->inputs().size() == 1 &&
        n->input(0) && g.is_initializer(n->input(0)) && !outputs.count(n->output(0)))
      todo.push_back(n.get());
  size_t folded = 0;
  std::map<std::pair<ir::Value*, std::vector<int64_t>>, ir::Value*> made;  // one view per perm
  for (ir::Node* n : todo) {
    const at::Tensor& t = *g.initializer(n->input(0));
    std::vector<int64_t> perm = n->attr_ints("perm");
    if (perm.empty())
      for (int64_t i = t.dim() - 1; i >= 0; --i) perm.push_back(i);
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool valid = static_cast<int64_t>(perm.size()) == t.dim();
    for (size_t i = 0; valid && i < sorted.size(); ++i)
      valid = sorted[i] == static_cast<int64_t>(i);
    if (!valid) continue;  // constant folding or the checker reports it
    ir::Value*& init = made[{n->input(0), perm}];
    if (!init) {
      init = g.add_initializer("__transposed_" + std::to_string(folded), t.permute(perm));
      init->set_name({});
    }
    g.replace_all_uses(n->output(0), init);
    ++folded;
  }
  if (folded) eliminate_dead_code(g);
  return folded;
}

void materialize_initializers(ir::Graph& g) {
  // at::Tensor's in-place methods are const: the tensor the graph holds takes the copy.
  for (const auto& [v, t] : g.initializers())
    if (!t.is_contiguous()) t.set_(t.contiguous());
}

std::string module_path(const std::string& scope) {
  std::string path;
  size_t pos = 0;
  while ((pos = scope.find('[', pos)) != std::string::npos) {
    size_t end = scope.find(']', pos);
    if (end == std::string::npos) break;
    if (!path.empty()) path += ".";
    path += scope.substr(pos + 1, end - pos - 1);
    pos = end + 1;
  }
  return path;
}

void assign_names(ir::Graph& g) {
  std::unordered_set<std::string> taken;
  for (ir::Value* v : g.values())
    if (!v->name().empty()) taken.insert(v->name());
  size_t counter = g.inputs().size();
  for (const auto& [v, t] : g.initializers())
    if (std::find(g.inputs().begin(), g.inputs().end(), v) == g.inputs().end()) ++counter;
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
    taken.insert(name);
    return name;
  };
  for (const auto& [v, t] : g.initializers())
    if (v->name().empty()) v->set_name(fresh(std::to_string(counter++)));
  std::unordered_set<std::string> node_names;
  for (const auto& node : g.nodes()) {
    for (ir::Value* o : node->outputs())
      if (o->name().empty() && (!o->uses().empty() || o->producer()))
        o->set_name(fresh(std::to_string(counter++)));
    if (!node->name().empty()) continue;
    std::string path = module_path(node->scope());
    std::string prefix;
    if (!path.empty()) {
      std::string acc;
      size_t start = 0;
      while (true) {
        size_t dot = path.find('.', start);
        acc = path.substr(0, dot);
        prefix += "/" + acc;
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
    }
    std::string base = prefix + "/" + node->op_type();
    std::string name = base;
    for (int k = 1; node_names.count(name); ++k) name = base + "_" + std::to_string(k);
    node_names.insert(name);
    node->set_name(name);
  }
}

}  // namespace tonnx::passes
