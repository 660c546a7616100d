// Prepare-time fusions of the backend (see fuse.cpp).
#pragma once

#include <cstddef>

#include "tonnx/ir.h"

namespace tonnx::backend {

// The domain of the backend's internal fused ops; never written to a file.
inline constexpr const char* kFusedDomain = "ai.tonnx";

// Rewrites Conv/ConvTranspose [+BN] [+Add] [+activation], Gemm + activation and MatMul +
// bias [+activation] chains into fused nodes. Graphs with subgraphs are left alone (a body may read
// an intermediate by name). Returns the number of chains fused.
size_t fuse_for_cpu(ir::Graph& g, bool fold_batchnorm);

}  // namespace tonnx::backend
