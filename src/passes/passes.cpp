// Structural rewrites shared by the exporter and the backend: dead code, names.
#include "passes/passes.h"

#include <algorithm>
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
