// Graph rewrites on tonnx's IR, shared by the exporter and the backend.
#pragma once

#include "tonnx/ir.h"

namespace tonnx::passes {

// Gemm(Transpose(B)) -> Gemm(B, transB=1) (and likewise for A): the weight of a Linear stays
// the parameter itself instead of a transposed copy.
size_t fuse_transpose_into_gemm(ir::Graph& g);

// Evaluates nodes whose inputs are all known (initializers, Constant outputs) with the
// backend's own kernels and replaces their outputs with initializers. With fold_shapes,
// Shape of a value whose shape is fully static folds too. Returns the nodes folded.
size_t fold_constants(ir::Graph& g, int opset, bool fold_shapes);

// Removes nodes whose outputs nobody uses, and initializers nobody reads.
size_t eliminate_dead_code(ir::Graph& g);

// Names every unnamed value with a number (counting on from the named inputs and
// initializers, as torch.onnx does) and every node after its module path and op type.
void assign_names(ir::Graph& g);

// Module path of a scope: AlexNet/Sequential[features]/Conv2d[0] -> features.0
std::string module_path(const std::string& scope);

}  // namespace tonnx::passes
