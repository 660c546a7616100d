// Structural rewrites of tonnx's IR, shared by the exporter and the backend. They need nothing
// but the IR; the fusions are in fuse.h, constant folding (which evaluates nodes) is the
// backend's (tonnx/backend.h).
#pragma once

#include "tonnx/ir.h"

namespace tonnx::passes {

// Removes nodes whose outputs nobody uses, and initializers nobody reads.
size_t eliminate_dead_code(ir::Graph& g);

// Names every unnamed value with a number (counting on from the named inputs and
// initializers, as torch.onnx does) and every node after its module path and op type.
void assign_names(ir::Graph& g);

// Module path of a scope: AlexNet/Sequential[features]/Conv2d[0] -> features.0
std::string module_path(const std::string& scope);

}  // namespace tonnx::passes
