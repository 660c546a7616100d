// Gemm + act -> ai.tonnx::FusedGemm (act: walk.h's activation_after). Served by
// backend/kernels/gemm.cpp ("FusedGemm").
#include "passes/fuse/walk.h"

namespace tonnx::passes::fuse {

std::vector<ir::Node*> fuse_gemm_activation(Walk& w, ir::Node* n) {
  if (!is_op(n, "Gemm") || n->outputs().size() != 1) return {};
  auto act = activation_after(w, n->output());
  if (!act) return {};
  std::vector<ir::Node*> chain{n};
  chain.insert(chain.end(), act->nodes.begin(), act->nodes.end());
  ir::Node* f = w.g.add_node("FusedGemm", n->inputs(), concat(n->attrs(), act->attrs), 1,
                             kFusedDomain, chain.back());
  replace_chain(w.g, chain, f);
  return chain;
}

}  // namespace tonnx::passes::fuse
