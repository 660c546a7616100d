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
  bool fold_batchnorm;  // fuse_for_cpu's argument
  std::unordered_set<const ir::Value*> outputs;
  int counter = 0;  // names the initializers a fold writes
  // The node that alone reads v, when v is not a graph output (nullptr otherwise).
  ir::Node* sole_consumer(const ir::Value* v) const;
  // The initializer v names, or nullptr.
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
// The attributes that describe `n` as a fused activation, or nullopt.
std::optional<std::vector<ir::Attr>> activation(const ir::Node* n);
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
