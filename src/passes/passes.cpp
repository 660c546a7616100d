#include "passes/passes.h"

#include <ATen/ATen.h>

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "backend/kernel.h"

namespace tonnx::passes {

size_t fuse_transpose_into_gemm(ir::Graph& g) {
  size_t fused = 0;
  for (const auto& node : g.nodes()) {
    ir::Node* n = node.get();
    if (n->op_type() != "Gemm" || !n->domain().empty()) continue;
    for (size_t i = 0; i < 2; ++i) {
      ir::Value* in = n->input(i);
      ir::Node* t = in ? in->producer() : nullptr;
      if (!t || t->op_type() != "Transpose" || !t->domain().empty()) continue;
      ir::Ints perm = t->attr_ints("perm");
      if (!(perm.empty() || perm == ir::Ints{1, 0})) continue;
      const char* attr = i == 0 ? "transA" : "transB";
      n->set_attr(attr, int64_t{n->attr_i(attr, 0) ? 0 : 1});
      n->replace_input(i, t->input(0));
      ++fused;
    }
  }
  if (fused) eliminate_dead_code(g);
  return fused;
}

namespace {

bool nondeterministic(const std::string& op) {
  static const std::set<std::string> ops = {"RandomNormal",     "RandomUniform",
                                            "RandomNormalLike", "RandomUniformLike",
                                            "Multinomial",      "Bernoulli"};
  return ops.count(op) > 0;
}

bool has_subgraph(const ir::Node& n) {
  for (const auto& a : n.attrs())
    if (a.value.kind() == ir::AttrValue::Kind::Graph) return true;
  return false;
}

std::optional<std::vector<int64_t>> static_shape(const ir::Value* v) {
  if (!v->type() || !v->type()->shape) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::Dim& d : *v->type()->shape) {
    if (!d.value) return std::nullopt;
    out.push_back(*d.value);
  }
  return out;
}

}  // namespace

size_t fold_constants(ir::Graph& g, int opset, bool fold_shapes) {
  std::unordered_map<const ir::Value*, at::Tensor> known;
  for (const auto& [v, t] : g.initializers()) known[v] = t;
  std::unordered_set<const ir::Value*> graph_outputs(g.outputs().begin(), g.outputs().end());
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  size_t folded = 0;
  int counter = 0;
  for (ir::Node* n : nodes) {
    if (!n->domain().empty() || nondeterministic(n->op_type()) || has_subgraph(*n)) continue;
    if (n->op_type() == "Constant") {
      if (n->has_attr("value")) known[n->output()] = n->attr("value")->t();
      continue;
    }
    bool is_shape = n->op_type() == "Shape" && fold_shapes && static_shape(n->input(0)).has_value();
    bool all_known = true;
    backend::Tensors inputs;
    int64_t in_bytes = 0;
    for (ir::Value* in : n->inputs()) {
      if (!in) {
        inputs.emplace_back();
        continue;
      }
      auto it = known.find(in);
      if (it == known.end()) {
        if (is_shape) {
          inputs.push_back(
              at::zeros({}, at::kFloat).expand(*static_shape(in)));  // only its shape is read
          continue;
        }
        all_known = false;
        break;
      }
      inputs.push_back(it->second);
      in_bytes += it->second.numel() * it->second.element_size();
    }
    if (!all_known || n->inputs().empty()) continue;
    bool feeds_output = false;
    for (ir::Value* o : n->outputs()) feeds_output = feeds_output || graph_outputs.count(o);
    if (feeds_output) continue;
    const backend::KernelFactory* factory = backend::find_kernel(n->op_type(), "", opset);
    if (!factory) continue;
    backend::Tensors outs;
    try {
      backend::KernelSpec spec{*n, opset, {}};
      outs = (*factory)(spec)(inputs);
    } catch (const std::exception&) {
      continue;  // left for the runtime, which reports the error with its inputs
    }
    int64_t out_bytes = 0;
    for (const auto& t : outs) out_bytes += t.defined() ? t.numel() * t.element_size() : 0;
    // Do not blow up the file: a small input expanded into a large constant stays an op.
    if (out_bytes > (1 << 20) && out_bytes > 2 * in_bytes) continue;
    if (outs.size() < n->outputs().size()) continue;
    for (size_t k = 0; k < n->outputs().size(); ++k) {
      ir::Value* out = n->output(k);
      if (out->uses().empty()) continue;
      at::Tensor t = outs[k].contiguous();
      ir::Value* init = g.add_initializer("__folded_" + std::to_string(counter++), t);
      init->set_name({});
      g.replace_all_uses(out, init);
      known[init] = t;
    }
    ++folded;
  }
  eliminate_dead_code(g);
  return folded;
}

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
