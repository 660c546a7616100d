// Conv [+ BatchNormalization] [+ Add] [+ act] -> ai.tonnx::FusedConv, and ConvTranspose
// [+ BatchNormalization] [+ act] -> ai.tonnx::FusedConv with transposed=1; act is one of
// walk.h's activation_after. Served by backend/kernels/conv/conv.cpp ("FusedConv"). The
// BatchNormalization runs inside FusedConv; with fold_batchnorm it is folded into W and B
// instead, as ONNX Runtime does: one pass less, but rounding differs (ResNet-50 on random
// weights moved 1.8e-3 relative from LibTorch), so it is opt-in.
#include <string>

#include "passes/fuse/walk.h"

namespace tonnx::passes::fuse {
namespace {

// Folds an inference BatchNormalization that alone reads a Conv's output into the Conv's
// weight and bias (computed in double, then rounded once). Returns the BN node when folded.
ir::Node* fold_batchnorm(Walk& walk, ir::Node* conv, ir::Node* bn, bool transposed) {
  if (!plain_batchnorm(bn) || !reads_as_x(bn, conv->output())) return nullptr;
  ir::Graph& g = walk.g;
  auto constant = [&](ir::Graph&, const ir::Value* v) { return walk.constant(v); };
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
  std::string base = "tonnx_fused_" + std::to_string(walk.counter++);
  ir::Value* wv = g.add_initializer(base + "_W", w2);
  ir::Value* bv = g.add_initializer(base + "_B", b2);
  conv->replace_input(1, wv);
  if (conv->inputs().size() > 2)
    conv->replace_input(2, bv);
  else
    conv->add_input(bv);
  return bn;
}

}  // namespace

std::vector<ir::Node*> fuse_conv(Walk& w, ir::Node* n) {
  bool transposed = is_op(n, "ConvTranspose");
  if (!(is_op(n, "Conv") || transposed) || n->outputs().size() != 1) return {};
  std::vector<ir::Node*> chain{n};
  auto next = [&] { return w.sole_consumer(chain.back()->output()); };
  ir::Value* z = nullptr;
  ir::Node* bn = nullptr;  // run inside the fused node
  if (ir::Node* folded = w.fold_batchnorm ? fold_batchnorm(w, n, next(), transposed) : nullptr)
    chain.push_back(folded);
  else if (plain_batchnorm(next()) && reads_as_x(next(), n->output()))
    chain.push_back(bn = next());
  ir::Node* add = next();
  if (!transposed && numpy_add(add)) {
    z = add->input(0) == chain.back()->output() ? add->input(1) : add->input(0);
    chain.push_back(add);
  }
  std::vector<ir::Attr> act;
  if (auto a = activation_after(w, chain.back()->output())) {
    chain.insert(chain.end(), a->nodes.begin(), a->nodes.end());
    act = a->attrs;
  }
  if (chain.size() == 1) return {};
  std::vector<ir::Value*> in{n->input(0), n->input(1),
                             n->inputs().size() > 2 ? n->input(2) : nullptr, z};
  std::vector<ir::Attr> attrs = concat(n->attrs(), act);
  if (bn) {
    for (size_t i = 1; i < 5; ++i) in.push_back(bn->input(i));
    attrs.push_back({"bn_epsilon", ir::AttrValue(bn->attr_f("epsilon", 1e-5f))});
  }
  if (transposed) attrs.push_back({"transposed", ir::AttrValue(int64_t{1})});
  ir::Node* f = w.g.add_node("FusedConv", in, attrs, 1, kFusedDomain, chain.back());
  replace_chain(w.g, chain, f);
  return chain;
}

}  // namespace tonnx::passes::fuse
