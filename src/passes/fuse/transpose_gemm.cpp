// Gemm(Transpose(B)) -> Gemm(B, transB=1), and likewise for A: the exporter's one fusion (see
// fuse.h), valid ONNX in and out; served by the Gemm kernel of any runtime.
#include "passes/fuse.h"
#include "passes/passes.h"

namespace tonnx::passes {

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

}  // namespace tonnx::passes
