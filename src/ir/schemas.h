// The operator schemas of ai.onnx that the backend validates against and picks kernels by, and
// that the opset converter checks its steps with: libonnx's for the opsets it knows (Debian
// 12's libonnx 1.12: up to 17), and for opsets 18 to 23 tonnx's own table (schemas_18_23.cpp),
// generated from ONNX's specification (docs/Changelog.md of the ONNX repository) by
// scripts/gen_schemas.py.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tonnx::ir {

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

// What validation and the opset converter read of one op-version's schema, from libonnx or
// from the 18-23 table.
struct SchemaView {
  int since = 0;
  bool deprecated = false;
  int min_in = 0, max_in = 0, min_out = 0, max_out = 0;
  std::vector<std::pair<std::string, bool>> inputs;  // name, optional
  std::map<std::string, std::pair<onnx::AttributeProto::AttributeType, bool>> attrs;  // required
};
// The schema of `op` at `version` of `domain`: the 18-23 table's for ai.onnx from opset 18,
// else libonnx's (at most its newest, 17); nullopt for an op that does not exist there.
std::optional<SchemaView> schema_of(const std::string& op, int version, const std::string& domain);

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

}  // namespace tonnx::ir
