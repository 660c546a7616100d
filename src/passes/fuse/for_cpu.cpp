// The backend's fusions, applied at prepare (PrepareOptions::optimize) on the plan's private
// copy of the graph, in the order listed here. Each rewrite computes exactly what the unfused
// nodes compute (the same ATen calls, bit for bit), with fewer passes over memory and no
// allocations between the steps; the fused nodes are internal ops of kFusedDomain, each served
// by the kernel its file names:
//   gelu.cpp                  GELU written out in ONNX ops         -> ai.tonnx::Gelu
//   conv.cpp                  Conv/ConvTranspose [+BN] [+Add] [+act] -> ai.tonnx::FusedConv
//   batchnorm_activation.cpp  BN + act                             -> ai.tonnx::FusedBatchNorm
//   concat_batchnorm.cpp      Concat + BN [+ act]                  -> ai.tonnx::ConcatBatchNorm
//   gemm_activation.cpp       Gemm + act                           -> ai.tonnx::FusedGemm
//   matmul_bias.cpp           MatMul + Add(bias) [+ act]           -> ai.tonnx::FusedGemm
// where act is Relu, LeakyRelu, Sigmoid, Tanh, Clip (constant bounds), HardSigmoid, HardSwish or
// x * Sigmoid(x) (walk.h's activation_after), applied in place. (The exporter's one fusion,
// Gemm(Transpose), is transpose_gemm.cpp.)
#include <string>

#include "passes/fuse/walk.h"

namespace tonnx::passes {

std::optional<FusedActivation> parse_fused_activation(const std::string& name) {
  if (name.empty()) return FusedActivation::None;
  if (name == "Relu") return FusedActivation::Relu;
  if (name == "LeakyRelu") return FusedActivation::LeakyRelu;
  if (name == "Sigmoid") return FusedActivation::Sigmoid;
  if (name == "Tanh") return FusedActivation::Tanh;
  if (name == "Clip") return FusedActivation::Clip;
  if (name == "HardSigmoid") return FusedActivation::HardSigmoid;
  if (name == "HardSwish") return FusedActivation::HardSwish;
  if (name == "Swish") return FusedActivation::Swish;
  return std::nullopt;
}

size_t fuse_for_cpu(ir::Graph& g, int opset, bool fold_bn) {
  if (ir::has_subgraphs(g)) return 0;
  size_t gelus = fuse_gelu(g);
  // Tried in this order on each node; each starts at a different op, so at most one matches.
  static constexpr fuse::Fusion kChains[] = {fuse::fuse_conv, fuse::fuse_batchnorm_activation,
                                             fuse::fuse_concat_batchnorm,
                                             fuse::fuse_gemm_activation, fuse::fuse_matmul_bias};
  fuse::Walk w{g, fold_bn, opset, {g.outputs().begin(), g.outputs().end()}};
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  std::unordered_set<const ir::Node*> removed;
  size_t fused = 0;
  for (ir::Node* n : nodes) {
    if (removed.count(n)) continue;
    for (fuse::Fusion f : kChains) {
      std::vector<ir::Node*> chain = f(w, n);
      if (chain.empty()) continue;
      removed.insert(chain.begin(), chain.end());
      ++fused;
      break;
    }
  }
  // Constant nodes the fused activations read (Clip's bounds), and initializers the folds
  // replaced.
  std::vector<ir::Node*> unread;
  for (const auto& n : g.nodes())
    if (is_op(n.get(), "Constant") && n->outputs().size() == 1 && n->output()->uses().empty() &&
        !w.outputs.count(n->output()))
      unread.push_back(n.get());
  for (ir::Node* n : unread) g.remove_node(n);
  std::unordered_set<const ir::Value*> inputs(g.inputs().begin(), g.inputs().end());
  std::vector<ir::Value*> dead;
  for (const auto& [v, t] : g.initializers())
    if (v->uses().empty() && !w.outputs.count(v) && !inputs.count(v)) dead.push_back(v);
  for (ir::Value* v : dead) g.remove_initializer(v);
  return fused + gelus;
}

}  // namespace tonnx::passes
