// Validation of a model before any kernel sees it, from ONNX's own operator schemas (libonnx's
// OpSchemaRegistry up to opset 17; for ai.onnx opsets 18 to 23 the table of schemas.h, taken
// from ONNX's specification): the opsets it imports, and for every node of an ONNX domain
// (subgraphs included) its input and output counts, required inputs, required attributes and
// attribute types; graph-level facts (named, unique inputs and outputs, one producer per value).
// Kernels then check only data-dependent facts (indices, counts, sizes against their tensors).
#include <onnx/defs/schema.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/schemas.h"
#include "backend/validate.h"

namespace tonnx::backend {
namespace {

// The opsets of ai.onnx the backend runs: all that this libonnx knows. Ops of old opsets
// whose semantics the kernels do not implement are refused by attribute (legacy_semantics).
constexpr int kMinDefaultOpset = 1;

// Attributes of opsets before 7 that change what a node computes and that tonnx's kernels
// (written for numpy-style broadcasting and inference) do not implement.
std::string legacy_semantics(const ir::Node& n) {
  // (broadcast=1 with axis, before opset 7, is implemented by the binary kernels.)
  if (n.op_type() == "BatchNormalization" && n.attr_i("spatial", 1) == 0)
    return "spatial=0 (statistics per element, not per channel)";
  if ((n.op_type() == "BatchNormalization" || n.op_type() == "Dropout") && n.has_attr("is_test") &&
      n.attr_i("is_test", 1) == 0)
    return "is_test=0 (training mode)";
  return "";
}

bool onnx_domain(const std::string& d) {
  return d.empty() || d == "ai.onnx.ml" || d == "ai.onnx.preview.training";
}

onnx::AttributeProto::AttributeType proto_type(ir::AttrValue::Kind k) {
  using K = ir::AttrValue::Kind;
  switch (k) {
    case K::Int:
      return onnx::AttributeProto::INT;
    case K::Float:
      return onnx::AttributeProto::FLOAT;
    case K::String:
      return onnx::AttributeProto::STRING;
    case K::Tensor:
      return onnx::AttributeProto::TENSOR;
    case K::Graph:
      return onnx::AttributeProto::GRAPH;
    case K::Ints:
      return onnx::AttributeProto::INTS;
    case K::Floats:
      return onnx::AttributeProto::FLOATS;
    case K::Strings:
      return onnx::AttributeProto::STRINGS;
  }
  return onnx::AttributeProto::UNDEFINED;
}

const char* type_name(onnx::AttributeProto::AttributeType t) {
  switch (t) {
    case onnx::AttributeProto::INT:
      return "an int";
    case onnx::AttributeProto::FLOAT:
      return "a float";
    case onnx::AttributeProto::STRING:
      return "a string";
    case onnx::AttributeProto::TENSOR:
      return "a tensor";
    case onnx::AttributeProto::GRAPH:
      return "a graph";
    case onnx::AttributeProto::INTS:
      return "a list of ints";
    case onnx::AttributeProto::FLOATS:
      return "a list of floats";
    case onnx::AttributeProto::STRINGS:
      return "a list of strings";
    default:
      return "another type";
  }
}

class Validator {
 public:
  explicit Validator(const std::vector<ir::OpsetImport>& opsets) : opsets_(opsets) {}

  void graph(const ir::Graph& g, bool top, int depth) {
    if (depth > 64) throw std::invalid_argument("the model nests subgraphs more than 64 deep");
    std::set<std::string> names;
    for (const ir::Value* v : g.inputs()) {
      if (v->name().empty()) throw std::invalid_argument("a graph input has an empty name");
      if (!names.insert(v->name()).second)
        throw std::invalid_argument("the graph has two inputs named '" + v->name() + "'");
    }
    if (top && g.outputs().empty())
      throw std::invalid_argument("the graph has no outputs: there is nothing to compute");
    std::set<std::string> outs;
    for (const ir::Value* v : g.outputs())
      if (!outs.insert(v->name()).second)
        throw std::invalid_argument("the graph has two outputs named '" + v->name() + "'");
    std::unordered_set<std::string> produced;
    for (const auto& node : g.nodes()) {
      const ir::Node& n = *node;
      for (const ir::Value* o : n.outputs())
        if (!o->name().empty() && (!produced.insert(o->name()).second || names.count(o->name())))
          throw BackendError(n, "output '" + o->name() +
                                    "' is also defined by another node or a graph input; every "
                                    "value must have one producer");
      node_schema(n);
      for (const ir::Attr& a : n.attrs())
        if (a.value.kind() == ir::AttrValue::Kind::Graph && a.value.g())
          graph(*a.value.g(), false, depth + 1);
    }
  }

 private:
  int opset(const std::string& domain) const {
    for (const auto& o : opsets_)
      if (o.domain == domain) return static_cast<int>(o.version);
    return -1;
  }

  void node_schema(const ir::Node& n) {
    if (!onnx_domain(n.domain())) return;  // custom domains: their kernels check
    int version = opset(n.domain());
    if (version < 0)
      throw BackendError(n, "the model imports no opset for domain '" +
                                (n.domain().empty() ? std::string("ai.onnx") : n.domain()) + "'");
    std::optional<ir::SchemaView> s = ir::schema_of(n.op_type(), version, n.domain());
    if (!s)
      throw BackendError(n, "'" + n.op_type() + "' is not an operator of " +
                                (n.domain().empty() ? std::string("ai.onnx") : n.domain()) +
                                " at opset " + std::to_string(version));
    if (s->deprecated)
      throw BackendError(n, "'" + n.op_type() + "' is deprecated at opset " +
                                std::to_string(version) + "; use the operator that replaced it");
    std::string name = n.op_type() + "-" + std::to_string(s->since);
    int n_in = static_cast<int>(n.inputs().size());
    if (n_in < s->min_in || n_in > s->max_in)
      throw BackendError(n, "has " + std::to_string(n_in) + " input(s); " + name + " takes " +
                                range(s->min_in, s->max_in));
    for (int i = 0; i < n_in && i < static_cast<int>(s->inputs.size()); ++i) {
      if (n.input(i)) continue;
      if (!s->inputs[i].second)
        throw BackendError(n, "input " + std::to_string(i) + " ('" + s->inputs[i].first +
                                  "') is required but empty");
    }
    int n_out = static_cast<int>(n.outputs().size());
    if (n_out < s->min_out || n_out > s->max_out)
      throw BackendError(n, "has " + std::to_string(n_out) + " output(s); " + name + " makes " +
                                range(s->min_out, s->max_out));
    for (const ir::Attr& a : n.attrs()) {
      auto it = s->attrs.find(a.name);
      if (it == s->attrs.end())
        throw BackendError(n,
                           "has an attribute '" + a.name + "' that " + name + " does not define");
      onnx::AttributeProto::AttributeType want = it->second.first;
      if (proto_type(a.value.kind()) != want)
        throw BackendError(n, "attribute '" + a.name + "' must be " + type_name(want) + ", got " +
                                  type_name(proto_type(a.value.kind())));
    }
    for (const auto& [attr_name, attr] : s->attrs)
      if (attr.second && !n.has_attr(attr_name))
        throw BackendError(n, "the required attribute '" + attr_name + "' is missing");
    if (n.domain().empty()) {
      std::string legacy = legacy_semantics(n);
      if (!legacy.empty())
        throw BackendError(n, "uses " + legacy +
                                  ", which tonnx's backend does not implement; "
                                  "convert the model to a newer opset");
    }
  }

  static std::string range(int lo, int hi) {
    if (lo == hi) return std::to_string(lo);
    if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo);
    return std::to_string(lo) + " to " + std::to_string(hi);
  }

  const std::vector<ir::OpsetImport>& opsets_;
};

}  // namespace

void validate_model(const ir::Model& m) {
  if (!m.graph) throw std::invalid_argument("the model has no graph");
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  bool has_default = false;
  std::set<std::string> domains;
  for (const auto& o : m.opsets) {
    if (!domains.insert(o.domain).second)
      throw std::invalid_argument("the model imports domain '" + o.domain + "' twice");
    if (!onnx_domain(o.domain)) continue;
    std::string shown = o.domain.empty() ? "ai.onnx" : o.domain;
    auto r = ranges.find(o.domain);
    int lo = o.domain.empty() ? kMinDefaultOpset : (r == ranges.end() ? 1 : r->second.first);
    int hi = o.domain.empty() ? ir::kMaxDefaultOpset : (r == ranges.end() ? lo : r->second.second);
    if (o.version < lo || o.version > hi)
      throw std::invalid_argument("the model imports " + shown + " opset " +
                                  std::to_string(o.version) + "; tonnx's backend runs opsets " +
                                  std::to_string(lo) + " to " + std::to_string(hi));
    has_default = has_default || o.domain.empty();
  }
  if (!has_default && !m.graph->nodes().empty()) {
    bool uses_default = false;
    for (const auto& n : m.graph->nodes()) uses_default = uses_default || n->domain().empty();
    if (uses_default) throw std::invalid_argument("the model imports no ai.onnx opset");
  }
  Validator(m.opsets).graph(*m.graph, true, 0);
}

void validate(const ir::Model& m) { validate_model(m); }

}  // namespace tonnx::backend
