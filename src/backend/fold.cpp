// Constant folding: the backend's kernels evaluate what is known before run time. The exporter
// calls it (so that export and run agree on semantics), and so does prepare.
#include <ATen/ATen.h>

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "backend/kernels/kernel.h"
#include "passes/passes.h"

namespace tonnx::backend {

namespace {

bool nondeterministic(const std::string& op) {
  static const std::set<std::string> ops = {"RandomNormal",     "RandomUniform",
                                            "RandomNormalLike", "RandomUniformLike",
                                            "Multinomial",      "Bernoulli"};
  return ops.count(op) > 0;
}

// An op whose output is an optional even where its kernel hands on a plain tensor: an
// initializer cannot stand for it.
bool makes_optional(const std::string& op) { return op == "Optional"; }

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

size_t fold_constants(ir::Graph& g, int opset, bool fold_shapes, bool keep_dequantize) {
  std::unordered_map<const ir::Value*, at::Tensor> known;
  for (const auto& [v, t] : g.initializers()) known[v] = t;
  std::unordered_set<const ir::Value*> graph_outputs(g.outputs().begin(), g.outputs().end());
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  size_t folded = 0;
  int counter = 0;
  for (ir::Node* n : nodes) {
    if (!n->domain().empty() || nondeterministic(n->op_type()) || makes_optional(n->op_type()) ||
        n->has_subgraphs() || (keep_dequantize && n->op_type() == "DequantizeLinear"))
      continue;
    if (n->op_type() == "Constant") {
      if (n->has_attr("value")) known[n->output()] = n->attr("value")->t();
      continue;
    }
    bool is_shape = n->op_type() == "Shape" && fold_shapes && static_shape(n->input(0)).has_value();
    bool all_known = true;
    RunValues inputs;
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
    const KernelFactory* factory = find_kernel(n->op_type(), "", opset);
    if (!factory) continue;
    RunValues outs;
    try {
      KernelSpec spec{*n, opset, {}};
      outs = (*factory)(spec)(inputs, *n);
    } catch (const std::exception&) {
      continue;  // left for the runtime, which reports the error with its inputs
    }
    int64_t out_bytes = 0;
    bool all_tensors = true;
    for (const auto& v : outs) {
      all_tensors = all_tensors && v.is_tensor();
      if (v.is_tensor() && v.tensor().defined())
        out_bytes += v.tensor().numel() * v.tensor().element_size();
    }
    if (!all_tensors) continue;  // sequences and optionals stay ops
    // Do not blow up the file: a small input expanded into a large constant stays an op.
    if (out_bytes > (1 << 20) && out_bytes > 2 * in_bytes) continue;
    if (outs.size() < n->outputs().size()) continue;
    for (size_t k = 0; k < n->outputs().size(); ++k) {
      ir::Value* out = n->output(k);
      if (out->uses().empty()) continue;
      at::Tensor t = outs[k].tensor().contiguous();
      ir::Value* init = g.add_initializer("__folded_" + std::to_string(counter++), t);
      init->set_name({});
      g.replace_all_uses(out, init);
      known[init] = t;
    }
    ++folded;
  }
  passes::eliminate_dead_code(g);
  return folded;
}

}  // namespace tonnx::backend
