// MatMul(A, B) + Add(bias of B's columns) [+ act] -> ai.tonnx::FusedGemm with batched=1, on A's
// rows, where B is a constant float matrix and the bias a constant of B's columns. Served by
// backend/kernels/gemm.cpp ("FusedGemm").
#include "passes/fuse/walk.h"

namespace tonnx::passes::fuse {

std::vector<ir::Node*> fuse_matmul_bias(Walk& w, ir::Node* n) {
  if (!is_op(n, "MatMul")) return {};
  const at::Tensor* b = w.constant(n->input(1));
  ir::Node* add = w.sole_consumer(n->output());
  if (!is_float(b) || b->dim() != 2 || !numpy_add(add)) return {};
  ir::Value* bias = add->input(0) == n->output() ? add->input(1) : add->input(0);
  const at::Tensor* bt = w.constant(bias);
  if (!is_float(bt) || bt->dim() != 1 || bt->size(0) != b->size(1)) return {};
  std::vector<ir::Node*> chain{n, add};
  std::vector<ir::Attr> attrs{{"batched", ir::AttrValue(int64_t{1})}};
  if (auto a = activation_after(w, add->output())) {
    chain.insert(chain.end(), a->nodes.begin(), a->nodes.end());
    attrs = concat(attrs, a->attrs);
  }
  ir::Node* f = w.g.add_node("FusedGemm", {n->input(0), n->input(1), bias}, attrs, 1, kFusedDomain,
                             chain.back());
  replace_chain(w.g, chain, f);
  return chain;
}

}  // namespace tonnx::passes::fuse
