// Structural rewrites of tonnx's IR, shared by the exporter and the backend. They need nothing
// but the IR; the fusions are in fuse.h, constant folding (which evaluates nodes) is the
// backend's (tonnx/backend.h).
#pragma once

#include "tonnx/ir.h"

namespace tonnx::passes {

// Removes nodes whose outputs nobody uses, and initializers nobody reads.
size_t eliminate_dead_code(ir::Graph& g);

// Initializers with the same dtype, sizes and bytes (layers cloned from one, tied or shared
// weights) become one, as torch.onnx's deduplication does; graph inputs and outputs are left
// alone. Bitwise, so -0.0 and 0.0 or two NaN payloads stay apart. Returns the merged count.
size_t deduplicate_initializers(ir::Graph& g);

// Transpose of an initializer becomes an initializer that is a strided view of it: no copy of
// the weights at export (the writer makes each contiguous while it writes it, one at a time).
// Returns the transposes folded. Views reach only the writer: see materialize_initializers.
size_t fold_initializer_transposes(ir::Graph& g);
// Makes every initializer that is a view contiguous (for models handed to callers).
void materialize_initializers(ir::Graph& g);

// Names every unnamed value with a number (counting on from the named inputs and
// initializers, as torch.onnx does) and every node after its module path and op type.
void assign_names(ir::Graph& g);

// Module path of a scope: AlexNet/Sequential[features]/Conv2d[0] -> features.0
std::string module_path(const std::string& scope);

}  // namespace tonnx::passes
