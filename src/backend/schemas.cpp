// Which schema of an ai.onnx op a model uses: see schemas.h.
#include "backend/schemas.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>

namespace tonnx::backend {
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

}  // namespace

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

}  // namespace tonnx::backend
