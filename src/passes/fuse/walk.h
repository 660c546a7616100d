// What the CPU fusions share (private to passes/fuse/): the walk over the graph, the tests of
// a chain's links, and the rewrite of a matched chain into one fused node of kFusedDomain.
// Each fusion is one function in its own file, listed in order by for_cpu.cpp.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <unordered_set>
#include <vector>

#include "passes/fuse.h"

namespace tonnx::passes::fuse {

// One walk of fuse_for_cpu over a graph.
struct Walk {
  ir::Graph& g;
  bool fold_batchnorm;  // fuse_for_cpu's arguments
  int opset;            // of the default domain
  std::unordered_set<const ir::Value*> outputs;
  int counter = 0;  // names the initializers a fold writes
  // The node that alone reads v, when v is not a graph output (nullptr otherwise).
  ir::Node* sole_consumer(const ir::Value* v) const;
  // The initializer v names, or the tensor of the Constant node that makes v, or nullptr.
  const at::Tensor* constant(const ir::Value* v) const;
};

// A fusion: rewrites the chain that starts at `n` into one fused node and returns the nodes
// it replaced (first to last), or returns nothing where `n` starts no chain it fuses.
using Fusion = std::vector<ir::Node*> (*)(Walk& w, ir::Node* n);

bool is_float(const at::Tensor* t);
// An inference-mode BatchNormalization of opset 9+ (legacy attributes stay unfused).
bool plain_batchnorm(const ir::Node* bn);
// An Add with numpy broadcasting (not a legacy one whose broadcast=1 aligns B at `axis`).
bool numpy_add(const ir::Node* add);
// `n` reads `v` as its first input (X).
bool reads_as_x(const ir::Node* n, const ir::Value* v);
// An activation a fused node applies in place (passes::FusedActivation): its attributes and
// the nodes it replaces.
struct Activation {
  std::vector<ir::Attr> attrs;
  std::vector<ir::Node*> nodes;  // one, or Sigmoid then Mul for x * Sigmoid(x)
};
// The activation that alone reads `x` (a chain's last output), or nullopt: Relu, LeakyRelu,
// Sigmoid, Tanh, HardSigmoid, HardSwish, Clip whose bounds are float constants, or
// Mul(x, Sigmoid(x)) (SiLU as torch.onnx writes it), where x is read by those two alone.
std::optional<Activation> activation_after(const Walk& w, const ir::Value* x);
std::vector<ir::Attr> concat(std::vector<ir::Attr> a, const std::vector<ir::Attr>& b);
// Replaces the chain (first to last, each reading the previous one's only output) by `fused`,
// which computes the last node's output under its name.
void replace_chain(ir::Graph& g, const std::vector<ir::Node*>& chain, ir::Node* fused);

// The fusions, in the order fuse_for_cpu tries them on each node.
std::vector<ir::Node*> fuse_conv(Walk& w, ir::Node* n);                  // conv.cpp
std::vector<ir::Node*> fuse_batchnorm_activation(Walk& w, ir::Node* n);  // batchnorm_activation.cpp
std::vector<ir::Node*> fuse_concat_batchnorm(Walk& w, ir::Node* n);      // concat_batchnorm.cpp
std::vector<ir::Node*> fuse_gemm_activation(Walk& w, ir::Node* n);       // gemm_activation.cpp
std::vector<ir::Node*> fuse_matmul_bias(Walk& w, ir::Node* n);           // matmul_bias.cpp

}  // namespace tonnx::passes::fuse
