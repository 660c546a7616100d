// The operator schemas the backend validates against and picks kernels by: libonnx's for the
// opsets it knows (Debian 12's libonnx 1.12: up to 17), and for ai.onnx opsets 18 to 23 tonnx's
// own table (schemas_18_23.cpp), generated from ONNX's specification (docs/Changelog.md of the
// ONNX repository) by scripts/gen_schemas.py.
#pragma once

#include <string>
#include <vector>

namespace tonnx::backend {

// The newest ai.onnx opset tonnx's backend runs.
inline constexpr int kMaxDefaultOpset = 23;

// One op-version of ai.onnx from opset 18 on, as ONNX's specification states it.
struct OpSchemaData {
  enum class AttrType {
    Int,
    Float,
    String,
    Tensor,
    Graph,
    Ints,
    Floats,
    Strings,
    SparseTensor,
    TypeProto,
    Graphs,
    Tensors
  };
  struct Formal {
    const char* name;
    bool optional, variadic;
  };
  struct Attr {
    const char* name;
    AttrType type;
    bool required;
  };
  const char* op;
  int since;
  // Only the element types it accepts changed from the version before (float8, int4, float4,
  // bfloat16, strings): a kernel of that version runs it for the types it knows.
  bool types_only;
  bool deprecated;
  int min_inputs, max_inputs;
  std::vector<Formal> inputs;
  int min_outputs, max_outputs;
  std::vector<Formal> outputs;
  std::vector<Attr> attrs;
};

// Every op-version of ai.onnx with a since-version from 18 to 23 (schemas_18_23.cpp).
const std::vector<OpSchemaData>& schemas_18_23();

// The version of ai.onnx's `op` a model importing `opset` uses, from the table (opset >= 18)
// or libonnx; -1 when the op does not exist at that opset.
int schema_version(const std::string& op, int opset);
// The table's entry for `op` at `opset` when its version is 18 or later, else nullptr.
const OpSchemaData* schema_18_23(const std::string& op, int opset);
// The version whose semantics a kernel must implement to run `op` at `opset`: the newest
// version up to `opset` that changed more than the accepted types; -1 for an unknown op.
int semantic_version(const std::string& op, int opset);

}  // namespace tonnx::backend
