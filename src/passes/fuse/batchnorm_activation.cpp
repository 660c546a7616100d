// BatchNormalization + act -> ai.tonnx::FusedBatchNorm, for one not fused into a convolution
// (DenseNet's BN -> Relu before each one); act is one of walk.h's activation_after. Served by
// backend/kernels/batchnorm.cpp ("FusedBatchNorm").
#include "passes/fuse/walk.h"

namespace tonnx::passes::fuse {

std::vector<ir::Node*> fuse_batchnorm_activation(Walk& w, ir::Node* n) {
  if (!plain_batchnorm(n)) return {};
  auto act = activation_after(w, n->output());
  if (!act) return {};
  std::vector<ir::Node*> chain{n};
  chain.insert(chain.end(), act->nodes.begin(), act->nodes.end());
  std::vector<ir::Attr> attrs = act->attrs;
  attrs.push_back({"epsilon", ir::AttrValue(n->attr_f("epsilon", 1e-5f))});
  ir::Node* f = w.g.add_node("FusedBatchNorm", n->inputs(), attrs, 1, kFusedDomain, chain.back());
  replace_chain(w.g, chain, f);
  return chain;
}

}  // namespace tonnx::passes::fuse
