// BatchNormalization + act -> ai.tonnx::FusedBatchNorm, for one not fused into a convolution
// (DenseNet's BN -> Relu before each one); act is Relu, LeakyRelu, Sigmoid or Tanh. Served by
// backend/kernels/batchnorm.cpp ("FusedBatchNorm").
#include "passes/fuse/walk.h"

namespace tonnx::passes::fuse {

std::vector<ir::Node*> fuse_batchnorm_activation(Walk& w, ir::Node* n) {
  if (!plain_batchnorm(n)) return {};
  ir::Node* next = w.sole_consumer(n->output());
  auto act = activation(next);
  if (!act) return {};
  std::vector<ir::Node*> chain{n, next};
  std::vector<ir::Attr> attrs = *act;
  attrs.push_back({"epsilon", ir::AttrValue(n->attr_f("epsilon", 1e-5f))});
  ir::Node* f = w.g.add_node("FusedBatchNorm", n->inputs(), attrs, 1, kFusedDomain, next);
  replace_chain(w.g, chain, f);
  return chain;
}

}  // namespace tonnx::passes::fuse
