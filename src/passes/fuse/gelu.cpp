// GELU written out in ONNX ops (opset 17 has no Gelu) -> ai.tonnx::Gelu, one ATen call, served by
// backend/kernels/elementwise.cpp (its "Gelu" kernel).
// Both exporters write it as elementwise ops: 0.5 x (1 + erf(x / sqrt 2)), or for the tanh
// approximation 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), each factor in the order
// its exporter chose. BERT-base spent 11% of its time in those 12 Erf nodes (plus 4 passes over
// memory around each); ATen's gelu is what LibTorch ran for the model in the first place.
// Intermediate values something else reads stay computed: they are left to dead-code removal.
#include <ATen/ATen.h>

#include <cmath>
#include <unordered_set>

#include "passes/fuse.h"
#include "passes/passes.h"

namespace tonnx::passes {
namespace {

// The ai.onnx op `op` with one output (the patterns read each node's only output).
bool is_op1(const ir::Node* n, const char* op) { return is_op(n, op) && n->outputs().size() == 1; }

ir::Node* producer(const ir::Value* v) { return v ? v->producer() : nullptr; }

// v is a float scalar, an initializer or a Constant node's value, within 1e-6 (relative) of
// `want`.
bool scalar_near(const ir::Graph& g, const ir::Value* v, double want) {
  const at::Tensor* t = v ? g.initializer(v) : nullptr;
  const ir::Node* c = producer(v);
  if (!t && is_op1(c, "Constant") && c->has_attr("value") &&
      c->attr("value")->kind() == ir::AttrValue::Kind::Tensor)
    t = &c->attr("value")->t();
  // Rank 0 only: a [1, 1] constant would broadcast x to a higher rank, which Gelu(x) keeps.
  if (!t || !t->defined() || t->dim() != 0 || t->scalar_type() != at::kFloat) return false;
  return std::abs(t->item<double>() - want) <= 1e-6 * std::abs(want);
}

// For a two-input node, the input that is not `v` (nullptr if neither or both are).
ir::Value* other_input(const ir::Node* n, const ir::Value* v) {
  if (n->inputs().size() != 2) return nullptr;
  if (n->input(0) == v && n->input(1) != v) return n->input(1);
  if (n->input(1) == v && n->input(0) != v) return n->input(0);
  return nullptr;
}

// n = Op(a, c) or Op(c, a) with c a scalar near `want`: returns a.
ir::Value* with_scalar(const ir::Graph& g, const ir::Node* n, const char* op, double want) {
  if (!is_op1(n, op) || n->inputs().size() != 2) return nullptr;
  if (scalar_near(g, n->input(1), want)) return n->input(0);
  if (scalar_near(g, n->input(0), want)) return n->input(1);
  return nullptr;
}

// Erf's input is x / sqrt 2 (or x * 1 / sqrt 2): returns x.
ir::Value* erf_argument(const ir::Graph& g, const ir::Node* erf) {
  ir::Node* d = producer(erf->input(0));
  if (is_op1(d, "Div") && d->inputs().size() == 2 && scalar_near(g, d->input(1), std::sqrt(2.0)))
    return d->input(0);
  return with_scalar(g, d, "Mul", 1 / std::sqrt(2.0));
}

// x^3 as Mul(Mul(x, x), x), Mul(x, Mul(x, x)) or Pow(x, 3): true for that x.
bool is_cube(const ir::Graph& g, const ir::Node* n, const ir::Value* x) {
  if (is_op1(n, "Pow") && n->inputs().size() == 2 && n->input(0) == x)
    return scalar_near(g, n->input(1), 3.0);
  if (!is_op1(n, "Mul") || n->inputs().size() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    ir::Node* sq = producer(n->input(i));
    if (n->input(1 - i) == x && is_op1(sq, "Mul") && sq->inputs().size() == 2 &&
        sq->input(0) == x && sq->input(1) == x)
      return true;
  }
  return false;
}

// Tanh's input is sqrt(2 / pi) * (x + 0.044715 x^3): returns x.
ir::Value* tanh_argument(const ir::Graph& g, const ir::Node* tanh) {
  ir::Value* s = with_scalar(g, producer(tanh->input(0)), "Mul", std::sqrt(2.0 / M_PI));
  ir::Node* add = producer(s);
  if (!is_op1(add, "Add") || add->inputs().size() != 2) return nullptr;
  for (int i = 0; i < 2; ++i) {
    ir::Value* x = add->input(i);
    ir::Value* cube = with_scalar(g, producer(add->input(1 - i)), "Mul", 0.044715);
    if (cube && is_cube(g, producer(cube), x)) return x;
  }
  return nullptr;
}

// 0.5 * x * plus1 in any association: Mul(Mul(x, 0.5), plus1), Mul(Mul(x, plus1), 0.5) and
// their mirror images. Returns the node whose output is the GELU.
ir::Node* gelu_product(const ir::Graph& g, const ir::Value* plus1, const ir::Value* x) {
  for (ir::Node* m : plus1->uses()) {
    if (!is_op1(m, "Mul")) continue;
    ir::Value* other = other_input(m, plus1);
    if (!other) continue;
    if (other != x && with_scalar(g, producer(other), "Mul", 0.5) == x) return m;
    if (other == x)
      for (ir::Node* m2 : m->output()->uses())
        if (with_scalar(g, m2, "Mul", 0.5) == m->output()) return m2;
  }
  return nullptr;
}

}  // namespace

size_t fuse_gelu(ir::Graph& g) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::unordered_set<const ir::Node*> removed;
  size_t fused = 0;
  for (ir::Node* n : nodes) {
    if (removed.count(n)) continue;
    bool exact = is_op1(n, "Erf");
    if (!exact && !is_op1(n, "Tanh")) continue;
    ir::Value* x = exact ? erf_argument(g, n) : tanh_argument(g, n);
    if (!x) continue;
    for (ir::Node* add : n->output()->uses()) {
      ir::Value* plus1 = with_scalar(g, add, "Add", 1.0) == n->output() ? add->output() : nullptr;
      ir::Node* out = plus1 ? gelu_product(g, plus1, x) : nullptr;
      if (!out) continue;
      ir::Node* f =
          g.add_node("Gelu", {x}, {{"approximate", ir::AttrValue(exact ? "none" : "tanh")}}, 1,
                     kFusedDomain, out);
      f->set_name(out->name());
      f->set_scope(n->scope());
      g.replace_all_uses(out->output(), f->output());
      f->output()->set_type(out->output()->type());
      std::string name = out->output()->name();
      removed.insert(out);
      g.remove_node(out);
      f->output()->set_name(name);
      ++fused;
      break;
    }
  }
  if (fused) eliminate_dead_code(g);
  return fused;
}

}  // namespace tonnx::passes
