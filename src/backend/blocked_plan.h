// Which activations the plan keeps in oneDNN's blocked layout (kernels/blocked_layout.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tonnx/ir.h"

namespace tonnx::backend {

// The inputs of `n` that its kernel can read in the blocked layout (empty: none), and whether
// it starts a blocked chain itself (a 2-D convolution with a constant weight).
struct BlockedReader {
  std::vector<size_t> inputs;
  bool root = false;
};
BlockedReader blocked_reader(const ir::Node& n, const ir::Graph& g);

// The names of `g`'s values that may be held blocked: the output 0 of a node that can write
// it (a convolution, or a reader whose blocked inputs are all such values), read only by
// nodes that can read it there, and neither a graph output nor read by a subgraph. So a chain
// of them always starts at a 2-D convolution, and no other kernel ever sees the layout.
std::set<std::string> blocked_values(const ir::Graph& g);

}  // namespace tonnx::backend
