// Which schema of an ai.onnx op a model uses: see schemas.h.
#include "ir/schemas.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <optional>

namespace tonnx::ir {
namespace {

// The table's versions of each op, oldest first.
const std::map<std::string, std::vector<const OpSchemaData*>>& by_op() {
  static const auto* m = [] {
    auto* r = new std::map<std::string, std::vector<const OpSchemaData*>>();
    for (const OpSchemaData& s : schemas_18_23()) (*r)[s.op].push_back(&s);
    for (auto& [op, v] : *r)
      std::sort(v.begin(), v.end(),
                [](const OpSchemaData* a, const OpSchemaData* b) { return a->since < b->since; });
    return r;
  }();
  return *m;
}

// libonnx's version of `op` at `opset` (at most what it knows), or -1.
int libonnx_version(const std::string& op, int opset) {
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op, std::min(opset, 17), "");
  return s ? s->SinceVersion() : -1;
}

onnx::AttributeProto::AttributeType proto_type(OpSchemaData::AttrType t) {
  using A = OpSchemaData::AttrType;
  switch (t) {
    case A::Int:
      return onnx::AttributeProto::INT;
    case A::Float:
      return onnx::AttributeProto::FLOAT;
    case A::String:
      return onnx::AttributeProto::STRING;
    case A::Tensor:
      return onnx::AttributeProto::TENSOR;
    case A::Graph:
      return onnx::AttributeProto::GRAPH;
    case A::Ints:
      return onnx::AttributeProto::INTS;
    case A::Floats:
      return onnx::AttributeProto::FLOATS;
    case A::Strings:
      return onnx::AttributeProto::STRINGS;
    case A::SparseTensor:
      return onnx::AttributeProto::SPARSE_TENSOR;
    case A::TypeProto:
      return onnx::AttributeProto::TYPE_PROTO;
    case A::Graphs:
      return onnx::AttributeProto::GRAPHS;
    case A::Tensors:
      return onnx::AttributeProto::TENSORS;
  }
  return onnx::AttributeProto::UNDEFINED;
}

std::optional<SchemaView> view_of(const OpSchemaData* d) {
  if (!d) return std::nullopt;
  SchemaView v{
      d->since, d->deprecated, d->min_inputs, d->max_inputs, d->min_outputs, d->max_outputs, {},
      {}};
  for (const auto& f : d->inputs) v.inputs.push_back({f.name, f.optional});
  for (const auto& a : d->attrs) v.attrs[a.name] = {proto_type(a.type), a.required};
  return v;
}

std::optional<SchemaView> view_of(const onnx::OpSchema* s) {
  if (!s) return std::nullopt;
  SchemaView v{s->SinceVersion(),
               s->Deprecated(),
               s->min_input(),
               s->max_input(),
               s->min_output(),
               s->max_output(),
               {},
               {}};
  for (const auto& f : s->inputs())
    v.inputs.push_back({f.GetName(), f.GetOption() == onnx::OpSchema::Optional});
  for (const auto& [name, a] : s->attributes()) v.attrs[name] = {a.type, a.required};
  return v;
}

}  // namespace

std::optional<SchemaView> schema_of(const std::string& op, int version, const std::string& domain) {
  if (domain.empty() && version > 17) {
    if (auto v = view_of(schema_18_23(op, version))) return v;
    version = 17;
  }
  return view_of(onnx::OpSchemaRegistry::Schema(op, version, domain));
}

const OpSchemaData* schema_18_23(const std::string& op, int opset) {
  auto it = by_op().find(op);
  if (it == by_op().end()) return nullptr;
  const OpSchemaData* found = nullptr;
  for (const OpSchemaData* s : it->second)
    if (s->since <= opset) found = s;
  return found;
}

int schema_version(const std::string& op, int opset) {
  if (const OpSchemaData* s = schema_18_23(op, opset)) return s->since;
  return libonnx_version(op, opset);
}

int semantic_version(const std::string& op, int opset) {
  auto it = by_op().find(op);
  if (it != by_op().end())
    for (auto s = it->second.rbegin(); s != it->second.rend(); ++s)
      if ((*s)->since <= opset && !(*s)->types_only) return (*s)->since;
  return libonnx_version(op, opset);
}

}  // namespace tonnx::ir
