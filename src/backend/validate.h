// Checks a model against ONNX's operator schemas before the backend plans it (validate.cpp).
#pragma once

#include "tonnx/backend.h"
#include "tonnx/ir.h"

namespace tonnx::backend {

// Throws std::invalid_argument for a problem of the model as a whole (opsets, graph inputs and
// outputs) and BackendError naming the node for a node its schema rejects.
void validate_model(const ir::Model& m);

}  // namespace tonnx::backend
