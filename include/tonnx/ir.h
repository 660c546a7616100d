// tonnx's ONNX IR: one in-memory form of an ONNX model that the exporter produces, the
// passes rewrite and the backend consumes. Tensor data is held as at::Tensor (no copies
// of weights); reading and writing onnx::ModelProto lives in ir/proto.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace tonnx::ir {

class Graph;
class Node;

// ONNX TensorProto.DataType values.
enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

const char* dtype_name(DType t);  // "Float", "Long", ... as the seed prints them
DType dtype_from_scalar_type(at::ScalarType t);
at::ScalarType scalar_type_from_dtype(DType t);  // throws for types ATen lacks

// A dimension is a known size, a named symbol (dynamic axis) or unknown.
struct Dim {
  std::optional<int64_t> value;
  std::string symbol;
  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim named(std::string s) { return Dim{std::nullopt, std::move(s)}; }
  bool is_known() const { return value.has_value(); }
};

struct TensorType {
  DType dtype = DType::Undefined;
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown
  static TensorType from_tensor(const at::Tensor& t);
  std::string str() const;  // Float(10, 3, 224, 224)
};

// The first `limit` elements of `t` in row-major order, "{1, 2, 3}", elided past the limit:
// "{0.5, 1, ... (60 in all)}". For printing constants and run outputs.
std::string values_str(const at::Tensor& t, size_t limit = 8);

class Value {
 public:
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  Node* producer() const { return producer_; }
  const std::optional<TensorType>& type() const { return type_; }
  void set_type(std::optional<TensorType> t) { type_ = std::move(t); }
  // A value that is an ONNX sequence of tensors (a list built at run time) has the type of
  // its elements here, and no type(): code that reads tensor types sees an unknown value.
  const std::optional<TensorType>& sequence_elem() const { return sequence_elem_; }
  void set_sequence_elem(std::optional<TensorType> t) { sequence_elem_ = std::move(t); }
  bool is_sequence() const { return sequence_elem_.has_value(); }
  // Consumers, counted once per input slot.
  const std::vector<Node*>& uses() const { return uses_; }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  Node* producer_ = nullptr;
  std::optional<TensorType> type_;
  std::optional<TensorType> sequence_elem_;
  std::vector<Node*> uses_;
};

using Floats = std::vector<float>;
using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

// A typed attribute value. Ints and floats are told apart by the C++ type: no suffixes.
class AttrValue {
 public:
  enum class Kind { Int, Float, String, Tensor, Graph, Ints, Floats, Strings };
  AttrValue(int v) : v_(int64_t{v}) {}
  AttrValue(int64_t v) : v_(v) {}
  AttrValue(bool v) : v_(int64_t{v}) {}
  AttrValue(float v) : v_(v) {}
  AttrValue(double v) : v_(static_cast<float>(v)) {}
  AttrValue(const char* v) : v_(std::string(v)) {}
  AttrValue(std::string v) : v_(std::move(v)) {}
  AttrValue(at::Tensor v) : v_(std::move(v)) {}
  AttrValue(std::shared_ptr<Graph> g) : v_(std::move(g)) {}
  AttrValue(Ints v) : v_(std::move(v)) {}
  AttrValue(std::initializer_list<int64_t> v) : v_(Ints(v)) {}
  AttrValue(Floats v) : v_(std::move(v)) {}
  AttrValue(Strings v) : v_(std::move(v)) {}

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  int64_t i() const;
  float f() const;
  const std::string& s() const;
  const at::Tensor& t() const;
  const std::shared_ptr<Graph>& g() const;
  const Ints& ints() const;
  const Floats& floats() const;
  const Strings& strings() const;

 private:
  std::variant<int64_t, float, std::string, at::Tensor, std::shared_ptr<Graph>, Ints, Floats,
               Strings>
      v_;
};

struct Attr {
  std::string name;
  AttrValue value;
};

class Node {
 public:
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  // Module scope the node was recorded in: AlexNet/Sequential[features]/Conv2d[0].
  const std::string& scope() const { return scope_; }
  void set_scope(std::string s) { scope_ = std::move(s); }
  const std::string& doc() const { return doc_; }
  void set_doc(std::string s) { doc_ = std::move(s); }
  // The aten op whose symbolic function emitted the node (for error messages; not written).
  const std::string& source() const { return source_; }
  void set_source(std::string s) { source_ = std::move(s); }

  // Inputs may hold nullptr for an omitted optional input.
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  void replace_input(size_t i, Value* v);
  void add_input(Value* v);
  // Drops the omitted (nullptr) inputs at the end.
  void drop_trailing_empty_inputs();
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* output(size_t i = 0) const { return outputs_.at(i); }

  const std::vector<Attr>& attrs() const { return attrs_; }
  const AttrValue* attr(const std::string& name) const;
  bool has_attr(const std::string& name) const { return attr(name) != nullptr; }
  void set_attr(const std::string& name, AttrValue v);
  void remove_attr(const std::string& name);
  int64_t attr_i(const std::string& name, int64_t dflt) const;
  float attr_f(const std::string& name, float dflt) const;
  std::string attr_s(const std::string& name, const std::string& dflt) const;
  Ints attr_ints(const std::string& name, const Ints& dflt = {}) const;
  Floats attr_floats(const std::string& name, const Floats& dflt = {}) const;

  Graph* owner() const { return graph_; }
  // True when an attribute holds a graph (If, Loop, Scan bodies).
  bool has_subgraphs() const;

 private:
  friend class Graph;
  std::string op_type_, domain_, name_, scope_, doc_, source_;
  std::vector<Value*> inputs_, outputs_;
  std::vector<Attr> attrs_;
  Graph* graph_ = nullptr;
};

// A graph owns its nodes and values. Nodes are kept in topological order.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name = "tonnx";
  std::string doc;

  Value* add_value(std::string name = {});
  Value* add_input(std::string name, std::optional<TensorType> type = std::nullopt);
  void add_output(Value* v) { outputs_.push_back(v); }
  void set_output(size_t i, Value* v) { outputs_.at(i) = v; }
  void remove_input(Value* v);

  // Appends a node (or inserts it before `before`). Outputs are created fresh.
  Node* add_node(std::string op_type, std::vector<Value*> inputs, std::vector<Attr> attrs = {},
                 size_t n_outputs = 1, std::string domain = {}, Node* before = nullptr);
  // Removes a node; its outputs must have no uses left.
  void remove_node(Node* n);
  // Redirects every use of `from` (and graph outputs) to `to`.
  void replace_all_uses(Value* from, Value* to);

  const std::list<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }

  // Initializers: named constant tensors; each is bound to a Value of the same name.
  Value* add_initializer(std::string name, at::Tensor data);
  const at::Tensor* initializer(const Value* v) const;
  bool is_initializer(const Value* v) const { return initializer(v) != nullptr; }
  void remove_initializer(Value* v);
  // In insertion order.
  const std::vector<std::pair<Value*, at::Tensor>>& initializers() const { return inits_; }

  Value* find_value(const std::string& name) const;
  size_t num_values() const { return values_.size(); }
  // Values that hold a name (inputs, initializers, node outputs), in creation order.
  std::vector<Value*> values() const;

 private:
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_, outputs_;
  std::vector<std::pair<Value*, at::Tensor>> inits_;
  std::unordered_map<const Value*, size_t> init_index_;
};

// The default domain is always "" in the IR: the reader maps "ai.onnx" to "".
struct OpsetImport {
  std::string domain;
  int64_t version;
};
// The version `opsets` import for `domain`, or -1 when it is not imported.
int64_t opset_version(const std::vector<OpsetImport>& opsets, const std::string& domain);

// True when any node of `g` (not looking inside subgraphs) has a subgraph.
bool has_subgraphs(const Graph& g);

// `axis` in [-rank, rank) as an index in [0, rank); nullopt when out of range. Callers say
// what the axis belongs to in their own error.
std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank);

// The product of `dims` (a tensor's element count); nullopt when a dim is negative or the
// product overflows int64. Callers say what the dims belong to in their own error.
std::optional<int64_t> product_of(const std::vector<int64_t>& dims);

struct Model {
  int64_t ir_version = 8;
  std::vector<OpsetImport> opsets;
  std::string producer_name = "tonnx";
  std::string producer_version;
  std::string doc;
  std::map<std::string, std::string> metadata;
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
};

}  // namespace tonnx::ir
