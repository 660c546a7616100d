// Converting a model between opsets of ai.onnx (tonnx convert --opset N): the adapters of ONNX's
// version converter for the ops whose inputs or attributes changed between opsets 9 and 23,
// applied one opset at a time, in subgraphs too. What an older or newer opset cannot express
// (an axes input computed at run time where the attribute needs constants, an op or a mode
// that does not exist at the target) fails, naming the node, the op and why: never a model
// that computes something else.
#pragma once

#include <stdexcept>
#include <string>

#include "tonnx/ir.h"

namespace tonnx {

// The opsets convert_opset goes between.
inline constexpr int kMinConvertOpset = 9;
inline constexpr int kMaxConvertOpset = 23;

class OpsetConversionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OpsetConversion {
  int from = 0, to = 0;
  size_t nodes_changed = 0;  // nodes an adapter rewrote (one node may count at several steps)
};

// Rewrites `m` (its default-domain nodes, in subgraphs too) from the ai.onnx opset it imports
// to `target`, and the import with it (and the IR version: at least what the target needs,
// at most 8 below opset 18). Throws std::invalid_argument for a target or a source opset
// outside kMinConvertOpset..kMaxConvertOpset, and OpsetConversionError naming the first node
// that cannot be converted; `m` is then unspecified (convert a copy to keep the original).
OpsetConversion convert_opset(ir::Model& m, int target);

}  // namespace tonnx
