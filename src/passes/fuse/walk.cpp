// What the CPU fusions share: see walk.h.
#include "passes/fuse/walk.h"

#include <string>

namespace tonnx::passes::fuse {

ir::Node* Walk::sole_consumer(const ir::Value* v) const {
  if (outputs.count(v) || v->uses().size() != 1) return nullptr;
  ir::Node* u = v->uses()[0];
  // A node may read v twice (Add(x, x)): that is not a chain we can fuse.
  size_t reads = 0;
  for (const ir::Value* in : u->inputs()) reads += in == v;
  return reads == 1 ? u : nullptr;
}

const at::Tensor* Walk::constant(const ir::Value* v) const {
  return v ? g.initializer(v) : nullptr;
}

bool is_float(const at::Tensor* t) { return t && t->scalar_type() == at::kFloat; }

bool plain_batchnorm(const ir::Node* bn) {
  return is_op(bn, "BatchNormalization") && bn->outputs().size() == 1 && bn->inputs().size() == 5 &&
         bn->attr_i("training_mode", 0) == 0 && !bn->has_attr("spatial") &&
         !bn->has_attr("is_test") && !bn->has_attr("consumed_inputs");
}

// (Legacy, opset < 7: broadcast=1 aligns B at `axis`, which the fused kernels, adding as ATen
// broadcasts, would not honour.)
bool numpy_add(const ir::Node* add) {
  return is_op(add, "Add") && add->inputs().size() == 2 && add->attr_i("broadcast", 0) == 0;
}

// A BatchNormalization that reads a convolution's output as its scale or statistics is not that
// convolution's BatchNormalization.
bool reads_as_x(const ir::Node* n, const ir::Value* v) {
  return n && !n->inputs().empty() && n->input(0) == v;
}

std::optional<std::vector<ir::Attr>> activation(const ir::Node* n) {
  if (is_op(n, "Relu") || is_op(n, "Sigmoid") || is_op(n, "Tanh"))
    return std::vector<ir::Attr>{{"activation", ir::AttrValue(n->op_type())}};
  if (is_op(n, "LeakyRelu"))
    return std::vector<ir::Attr>{{"activation", ir::AttrValue("LeakyRelu")},
                                 {"activation_alpha", ir::AttrValue(n->attr_f("alpha", 0.01f))}};
  return std::nullopt;
}

std::vector<ir::Attr> concat(std::vector<ir::Attr> a, const std::vector<ir::Attr>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void replace_chain(ir::Graph& g, const std::vector<ir::Node*>& chain, ir::Node* fused) {
  ir::Node* last = chain.back();
  fused->set_name(last->name());
  fused->set_scope(chain.front()->scope());
  g.replace_all_uses(last->output(), fused->output());
  fused->output()->set_type(last->output()->type());
  std::string name = last->output()->name();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) g.remove_node(*it);
  fused->output()->set_name(name);
}

}  // namespace tonnx::passes::fuse
