// What the CPU fusions share: see walk.h.
#include "passes/fuse/walk.h"

#include <limits>
#include <string>
#include <utility>

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
  if (!v) return nullptr;
  if (const at::Tensor* t = g.initializer(v)) return t;
  const ir::Node* p = v->producer();
  if (!is_op(p, "Constant") || !p->has_attr("value")) return nullptr;
  const ir::AttrValue* a = p->attr("value");
  return a && a->kind() == ir::AttrValue::Kind::Tensor ? &a->t() : nullptr;
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

namespace {

// A float scalar constant (0-d or one element), or nullopt.
std::optional<float> float_scalar(const Walk& w, const ir::Value* v) {
  const at::Tensor* t = w.constant(v);
  if (!is_float(t) || t->numel() != 1) return std::nullopt;
  return t->item<float>();
}

// Clip's bounds as attributes: from opset 11 optional inputs (absent: no bound); before,
// attributes whose defaults are the float range (which clamps inf to it).
std::optional<std::vector<ir::Attr>> clip_bounds(const Walk& w, const ir::Node* n) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (w.opset < 11) {
    if (n->inputs().size() != 1) return std::nullopt;
    lo = n->attr_f("min", std::numeric_limits<float>::lowest());
    hi = n->attr_f("max", std::numeric_limits<float>::max());
  } else {
    if (n->inputs().size() > 3) return std::nullopt;
    for (size_t i = 1; i < n->inputs().size(); ++i) {
      if (!n->input(i)) continue;
      std::optional<float> b = float_scalar(w, n->input(i));
      if (!b) return std::nullopt;
      (i == 1 ? lo : hi) = *b;
    }
  }
  return std::vector<ir::Attr>{{"activation", ir::AttrValue("Clip")},
                               {"activation_min", ir::AttrValue(lo)},
                               {"activation_max", ir::AttrValue(hi)}};
}

// One activation node that reads `x` as its only input.
std::optional<std::vector<ir::Attr>> one_node_activation(const Walk& w, const ir::Node* n) {
  if (n->inputs().empty() || n->outputs().size() != 1) return std::nullopt;
  auto named = [&] { return std::vector<ir::Attr>{{"activation", ir::AttrValue(n->op_type())}}; };
  if (is_op(n, "Relu") || is_op(n, "Sigmoid") || is_op(n, "Tanh") || is_op(n, "HardSwish"))
    return n->inputs().size() == 1 ? std::optional(named()) : std::nullopt;
  if (is_op(n, "LeakyRelu") && n->inputs().size() == 1)
    return std::vector<ir::Attr>{{"activation", ir::AttrValue("LeakyRelu")},
                                 {"activation_alpha", ir::AttrValue(n->attr_f("alpha", 0.01f))}};
  if (is_op(n, "HardSigmoid") && n->inputs().size() == 1)
    return std::vector<ir::Attr>{{"activation", ir::AttrValue("HardSigmoid")},
                                 {"activation_alpha", ir::AttrValue(n->attr_f("alpha", 0.2f))},
                                 {"activation_beta", ir::AttrValue(n->attr_f("beta", 0.5f))}};
  if (is_op(n, "Clip")) return clip_bounds(w, n);
  return std::nullopt;
}

}  // namespace

std::optional<Activation> activation_after(const Walk& w, const ir::Value* x) {
  if (!x || w.outputs.count(x)) return std::nullopt;
  if (ir::Node* n = w.sole_consumer(x)) {
    if (!reads_as_x(n, x)) return std::nullopt;
    if (auto attrs = one_node_activation(w, n)) return Activation{*attrs, {n}};
    return std::nullopt;
  }
  // x * Sigmoid(x): x read by the Sigmoid and the Mul alone, the Sigmoid by the Mul alone.
  if (x->uses().size() != 2) return std::nullopt;
  ir::Node *sig = x->uses()[0], *mul = x->uses()[1];
  if (!is_op(sig, "Sigmoid")) std::swap(sig, mul);
  if (!is_op(sig, "Sigmoid") || !is_op(mul, "Mul") || sig->inputs().size() != 1 ||
      sig->outputs().size() != 1 || mul->inputs().size() != 2 || mul->outputs().size() != 1 ||
      mul->attr_i("broadcast", 0) != 0)
    return std::nullopt;
  if (w.sole_consumer(sig->output()) != mul) return std::nullopt;
  bool reads = (mul->input(0) == x && mul->input(1) == sig->output()) ||
               (mul->input(1) == x && mul->input(0) == sig->output());
  if (!reads) return std::nullopt;
  return Activation{{{"activation", ir::AttrValue("Swish")}}, {sig, mul}};
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
