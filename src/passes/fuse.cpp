// Every fusion (see fuse.h). The exporter's: Gemm(Transpose(W)) -> Gemm(W, transB=1).
// The backend's, at prepare (PrepareOptions::optimize) on the plan's private copy of the
// graph: each rewrite computes exactly what the unfused nodes compute (the same ATen calls,
// bit for bit), with fewer passes over memory and no allocations between the steps; fused
// nodes are internal ops of kFusedDomain, served by backend/kernels/nn.cpp:
//   Conv [+ BatchNormalization] [+ Add] [+ act]   -> ai.tonnx::FusedConv
//   ConvTranspose [+ BatchNormalization] [+ act]  -> ai.tonnx::FusedConv, transposed=1
//   BatchNormalization + act                      -> ai.tonnx::FusedBatchNorm
//   Concat + BatchNormalization [+ act]           -> ai.tonnx::ConcatBatchNorm
//   Gemm + act                                    -> ai.tonnx::FusedGemm
//   MatMul(A, B) + Add(bias of B's columns) [+ act] -> ai.tonnx::FusedGemm on A's rows
//   GELU written out (Erf or Tanh and their Mul/Add/Div) -> ai.tonnx::Gelu (fuse_gelu.cpp)
// where act is Relu, LeakyRelu, Sigmoid or Tanh, applied in place. The BatchNormalization
// runs inside FusedConv; with fold_batchnorm it is folded into W and B instead, as ONNX
// Runtime does: one pass less, but rounding differs (ResNet-50 on random weights moved
// 1.8e-3 relative from LibTorch), so it is opt-in.
#include "passes/fuse.h"

#include <ATen/ATen.h>

#include <optional>
#include <unordered_set>

#include "passes/passes.h"

namespace tonnx::passes {

namespace {

// The node that alone reads v, when v is not a graph output.
ir::Node* sole_consumer(const ir::Value* v, const std::unordered_set<const ir::Value*>& outputs) {
  if (outputs.count(v) || v->uses().size() != 1) return nullptr;
  ir::Node* u = v->uses()[0];
  // A node may read v twice (Add(x, x)): that is not a chain we can fuse.
  size_t reads = 0;
  for (const ir::Value* in : u->inputs()) reads += in == v;
  return reads == 1 ? u : nullptr;
}

const at::Tensor* constant(const ir::Graph& g, const ir::Value* v) {
  return v ? g.initializer(v) : nullptr;
}

bool is_float(const at::Tensor* t) { return t && t->scalar_type() == at::kFloat; }

// An inference-mode BatchNormalization of opset 9+ (legacy attributes stay unfused).
bool plain_batchnorm(const ir::Node* bn) {
  return is_op(bn, "BatchNormalization") && bn->outputs().size() == 1 && bn->inputs().size() == 5 &&
         bn->attr_i("training_mode", 0) == 0 && !bn->has_attr("spatial") &&
         !bn->has_attr("is_test") && !bn->has_attr("consumed_inputs");
}

// An Add with numpy broadcasting: not a legacy one (opset < 7) whose broadcast=1 aligns B at
// `axis`, which the fused kernels (adding as ATen broadcasts) would not honour.
bool numpy_add(const ir::Node* add) {
  return is_op(add, "Add") && add->inputs().size() == 2 && add->attr_i("broadcast", 0) == 0;
}

// `n` reads `v` as its first input (X): a BatchNormalization that reads a convolution's output
// as its scale or statistics is not that convolution's BatchNormalization.
bool reads_as_x(const ir::Node* n, const ir::Value* v) {
  return n && !n->inputs().empty() && n->input(0) == v;
}

// Folds an inference BatchNormalization that alone reads a Conv's output into the Conv's
// weight and bias (computed in double, then rounded once). Returns the BN node when folded.
ir::Node* fold_batchnorm(ir::Graph& g, ir::Node* conv, ir::Node* bn, bool transposed,
                         int& counter) {
  if (!plain_batchnorm(bn) || !reads_as_x(bn, conv->output())) return nullptr;
  const at::Tensor* w = constant(g, conv->input(1));
  const at::Tensor* b = conv->inputs().size() > 2 ? constant(g, conv->input(2)) : nullptr;
  bool has_bias = conv->inputs().size() > 2 && conv->input(2);
  const at::Tensor *scale = constant(g, bn->input(1)), *shift = constant(g, bn->input(2)),
                   *mean = constant(g, bn->input(3)), *var = constant(g, bn->input(4));
  if (!is_float(w) || (has_bias && !is_float(b)) || !is_float(scale) || !is_float(shift) ||
      !is_float(mean) || !is_float(var))
    return nullptr;
  if (w->dim() < 3) return nullptr;
  // Conv's W is [C_out, C_in / group, k...]; ConvTranspose's [C_in, C_out / group, k...].
  int64_t group = conv->attr_i("group", 1);
  if (group < 1 || (transposed && w->size(0) % group != 0)) return nullptr;
  int64_t c = transposed ? w->size(1) * group : w->size(0);
  for (const at::Tensor* t : {scale, shift, mean, var})
    if (t->dim() != 1 || t->size(0) != c) return nullptr;
  if (has_bias && (b->dim() != 1 || b->size(0) != c)) return nullptr;
  double eps = bn->attr_f("epsilon", 1e-5f);
  at::Tensor k = scale->to(at::kDouble) / (var->to(at::kDouble) + eps).sqrt();
  at::Tensor w2;
  if (transposed) {
    // Output channel o = j * (C_out / group) + i scales W[j * C_in / group + ..., i, ...].
    std::vector<int64_t> wshape{group, w->size(0) / group, w->size(1)};
    std::vector<int64_t> kshape{group, 1, w->size(1)};
    for (int64_t i = 2; i < w->dim(); ++i) {
      wshape.push_back(w->size(i));
      kshape.push_back(1);
    }
    w2 = (w->to(at::kDouble).reshape(wshape) * k.reshape(kshape)).reshape(w->sizes());
  } else {
    std::vector<int64_t> bshape(w->dim(), 1);
    bshape[0] = c;
    w2 = w->to(at::kDouble) * k.reshape(bshape);
  }
  w2 = w2.to(at::kFloat).contiguous();
  at::Tensor b0 = has_bias ? b->to(at::kDouble) : at::zeros({c}, at::kDouble);
  at::Tensor b2 = ((b0 - mean->to(at::kDouble)) * k + shift->to(at::kDouble)).to(at::kFloat);
  std::string base = "tonnx_fused_" + std::to_string(counter++);
  ir::Value* wv = g.add_initializer(base + "_W", w2);
  ir::Value* bv = g.add_initializer(base + "_B", b2);
  conv->replace_input(1, wv);
  if (conv->inputs().size() > 2)
    conv->replace_input(2, bv);
  else
    conv->add_input(bv);
  return bn;
}

// The attributes that describe `n` as a fused activation, or nullopt.
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

// Replaces the chain `nodes` (first to last, each reading the previous one's only output)
// by `fused`, which computes the last node's output.
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

}  // namespace

size_t fuse_transpose_into_gemm(ir::Graph& g) {
  size_t fused = 0;
  for (const auto& node : g.nodes()) {
    ir::Node* n = node.get();
    if (!is_op(n, "Gemm")) continue;
    for (size_t i = 0; i < 2; ++i) {
      ir::Value* in = n->input(i);
      ir::Node* t = in ? in->producer() : nullptr;
      if (!is_op(t, "Transpose")) continue;
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

std::optional<FusedActivation> parse_fused_activation(const std::string& name) {
  if (name.empty()) return FusedActivation::None;
  if (name == "Relu") return FusedActivation::Relu;
  if (name == "LeakyRelu") return FusedActivation::LeakyRelu;
  if (name == "Sigmoid") return FusedActivation::Sigmoid;
  if (name == "Tanh") return FusedActivation::Tanh;
  return std::nullopt;
}

size_t fuse_for_cpu(ir::Graph& g, bool fold_bn) {
  if (ir::has_subgraphs(g)) return 0;
  size_t gelus = fuse_gelu(g);
  std::unordered_set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::unordered_set<const ir::Node*> removed;
  size_t fused = 0;
  int counter = 0;
  for (ir::Node* n : nodes) {
    if (removed.count(n)) continue;
    std::vector<ir::Node*> chain{n};
    auto next = [&] { return sole_consumer(chain.back()->output(), outputs); };
    bool transposed = is_op(n, "ConvTranspose");
    if ((is_op(n, "Conv") || transposed) && n->outputs().size() == 1) {
      ir::Value* z = nullptr;
      ir::Node* bn = nullptr;  // run inside the fused node
      if (ir::Node* folded = fold_bn ? fold_batchnorm(g, n, next(), transposed, counter) : nullptr)
        chain.push_back(folded);
      else if (plain_batchnorm(next()) && reads_as_x(next(), n->output()))
        chain.push_back(bn = next());
      ir::Node* add = next();
      if (!transposed && numpy_add(add)) {
        z = add->input(0) == chain.back()->output() ? add->input(1) : add->input(0);
        chain.push_back(add);
      }
      std::vector<ir::Attr> act;
      if (auto a = activation(next())) {
        chain.push_back(next());
        act = *a;
      }
      if (chain.size() == 1) continue;
      std::vector<ir::Value*> in{n->input(0), n->input(1),
                                 n->inputs().size() > 2 ? n->input(2) : nullptr, z};
      std::vector<ir::Attr> attrs = concat(n->attrs(), act);
      if (bn) {
        for (size_t i = 1; i < 5; ++i) in.push_back(bn->input(i));
        attrs.push_back({"bn_epsilon", ir::AttrValue(bn->attr_f("epsilon", 1e-5f))});
      }
      if (transposed) attrs.push_back({"transposed", ir::AttrValue(int64_t{1})});
      ir::Node* f = g.add_node("FusedConv", in, attrs, 1, kFusedDomain, chain.back());
      replace_chain(g, chain, f);
    } else if (plain_batchnorm(n)) {
      // One not fused into a convolution (DenseNet's BN -> Relu before each one).
      auto act = activation(next());
      if (!act) continue;
      chain.push_back(next());
      std::vector<ir::Attr> attrs = *act;
      attrs.push_back({"epsilon", ir::AttrValue(n->attr_f("epsilon", 1e-5f))});
      ir::Node* f = g.add_node("FusedBatchNorm", n->inputs(), attrs, 1, kFusedDomain, chain.back());
      replace_chain(g, chain, f);
    } else if (is_op(n, "Concat") && n->outputs().size() == 1 && !n->inputs().empty() &&
               plain_batchnorm(next())) {
      // DenseNet's concatenated features -> BN -> Relu: no concatenated tensor is written.
      int64_t axis = n->attr_i("axis", 1);
      ir::Node* bn = next();
      bool inputs = reads_as_x(bn, n->output());
      for (const ir::Value* v : n->inputs()) inputs = inputs && v;
      if ((axis != 1 && axis != -3) || !inputs) continue;
      chain.push_back(bn);
      std::vector<ir::Attr> attrs{{"axis", ir::AttrValue(axis)},
                                  {"epsilon", ir::AttrValue(bn->attr_f("epsilon", 1e-5f))}};
      if (auto act = activation(next())) {
        chain.push_back(next());
        attrs = concat(attrs, *act);
      }
      std::vector<ir::Value*> in(bn->inputs().begin() + 1, bn->inputs().end());
      in.insert(in.end(), n->inputs().begin(), n->inputs().end());
      ir::Node* f = g.add_node("ConcatBatchNorm", in, attrs, 1, kFusedDomain, chain.back());
      replace_chain(g, chain, f);
    } else if (is_op(n, "Gemm") && n->outputs().size() == 1) {
      auto act = activation(next());
      if (!act) continue;
      chain.push_back(next());
      ir::Node* f = g.add_node("FusedGemm", n->inputs(), concat(n->attrs(), *act), 1, kFusedDomain,
                               chain.back());
      replace_chain(g, chain, f);
    } else if (is_op(n, "MatMul")) {
      // MatMul(A, B) + bias where B is a constant matrix and bias a constant of B's columns.
      const at::Tensor* b = constant(g, n->input(1));
      ir::Node* add = next();
      if (!is_float(b) || b->dim() != 2 || !numpy_add(add)) continue;
      ir::Value* bias = add->input(0) == n->output() ? add->input(1) : add->input(0);
      const at::Tensor* bt = constant(g, bias);
      if (!is_float(bt) || bt->dim() != 1 || bt->size(0) != b->size(1)) continue;
      chain.push_back(add);
      std::vector<ir::Attr> attrs{{"batched", ir::AttrValue(int64_t{1})}};
      if (auto a = activation(next())) {
        chain.push_back(next());
        attrs = concat(attrs, *a);
      }
      ir::Node* f = g.add_node("FusedGemm", {n->input(0), n->input(1), bias}, attrs, 1,
                               kFusedDomain, chain.back());
      replace_chain(g, chain, f);
    } else {
      continue;
    }
    for (ir::Node* c : chain) removed.insert(c);
    ++fused;
  }
  // Initializers the folds replaced.
  std::unordered_set<const ir::Value*> inputs(g.inputs().begin(), g.inputs().end());
  std::vector<ir::Value*> dead;
  for (const auto& [v, t] : g.initializers())
    if (v->uses().empty() && !outputs.count(v) && !inputs.count(v)) dead.push_back(v);
  for (ir::Value* v : dead) g.remove_initializer(v);
  return fused + gelus;
}

}  // namespace tonnx::passes
