// Concat (over channels) + BatchNormalization [+ act] -> ai.tonnx::ConcatBatchNorm: DenseNet's
// concatenated features -> BN -> Relu, with no concatenated tensor written. Served by
// backend/kernels/batchnorm.cpp ("ConcatBatchNorm").
#include "passes/fuse/walk.h"

namespace tonnx::passes::fuse {

std::vector<ir::Node*> fuse_concat_batchnorm(Walk& w, ir::Node* n) {
  if (!is_op(n, "Concat") || n->outputs().size() != 1 || n->inputs().empty()) return {};
  ir::Node* bn = w.sole_consumer(n->output());
  if (!plain_batchnorm(bn)) return {};
  int64_t axis = n->attr_i("axis", 1);
  bool inputs = reads_as_x(bn, n->output());
  for (const ir::Value* v : n->inputs()) inputs = inputs && v;
  if ((axis != 1 && axis != -3) || !inputs) return {};
  std::vector<ir::Node*> chain{n, bn};
  std::vector<ir::Attr> attrs{{"axis", ir::AttrValue(axis)},
                              {"epsilon", ir::AttrValue(bn->attr_f("epsilon", 1e-5f))}};
  if (auto act = activation_after(w, bn->output())) {
    chain.insert(chain.end(), act->nodes.begin(), act->nodes.end());
    attrs = concat(attrs, act->attrs);
  }
  std::vector<ir::Value*> in(bn->inputs().begin() + 1, bn->inputs().end());
  in.insert(in.end(), n->inputs().begin(), n->inputs().end());
  ir::Node* f = w.g.add_node("ConcatBatchNorm", in, attrs, 1, kFusedDomain, chain.back());
  replace_chain(w.g, chain, f);
  return chain;
}

}  // namespace tonnx::passes::fuse
