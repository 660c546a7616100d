// Gemm + act -> ai.tonnx::FusedGemm (act: Relu, LeakyRelu, Sigmoid or Tanh). Served by
// backend/kernels/gemm.cpp ("FusedGemm").
#include "passes/fuse/walk.h"

namespace tonnx::passes::fuse {

std::vector<ir::Node*> fuse_gemm_activation(Walk& w, ir::Node* n) {
  if (!is_op(n, "Gemm") || n->outputs().size() != 1) return {};
  ir::Node* next = w.sole_consumer(n->output());
  auto act = activation(next);
  if (!act) return {};
  std::vector<ir::Node*> chain{n, next};
  ir::Node* f =
      w.g.add_node("FusedGemm", n->inputs(), concat(n->attrs(), *act), 1, kFusedDomain, next);
  replace_chain(w.g, chain, f);
  return chain;
}

}  // namespace tonnx::passes::fuse
