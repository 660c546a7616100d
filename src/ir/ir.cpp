#include "tonnx/ir.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace tonnx::ir {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float:
      return "Float";
    case DType::UInt8:
      return "Byte";
    case DType::Int8:
      return "Char";
    case DType::UInt16:
      return "UInt16";
    case DType::Int16:
      return "Short";
    case DType::Int32:
      return "Int";
    case DType::Int64:
      return "Long";
    case DType::String:
      return "String";
    case DType::Bool:
      return "Bool";
    case DType::Float16:
      return "Half";
    case DType::Double:
      return "Double";
    case DType::UInt32:
      return "UInt32";
    case DType::UInt64:
      return "UInt64";
    case DType::Complex64:
      return "ComplexFloat";
    case DType::Complex128:
      return "ComplexDouble";
    case DType::BFloat16:
      return "BFloat16";
    case DType::Undefined:
      break;
  }
  return "Undefined";
}

DType dtype_from_scalar_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::Float;
    case at::kByte:
      return DType::UInt8;
    case at::kChar:
      return DType::Int8;
    case at::kShort:
      return DType::Int16;
    case at::kInt:
      return DType::Int32;
    case at::kLong:
      return DType::Int64;
    case at::kBool:
      return DType::Bool;
    case at::kHalf:
      return DType::Float16;
    case at::kDouble:
      return DType::Double;
    case at::kBFloat16:
      return DType::BFloat16;
    case at::kComplexFloat:
      return DType::Complex64;
    case at::kComplexDouble:
      return DType::Complex128;
    default:
      break;
  }
  throw std::invalid_argument(std::string("ONNX has no tensor type for ATen dtype ") +
                              c10::toString(t));
}

at::ScalarType scalar_type_from_dtype(DType t) {
  switch (t) {
    case DType::Float:
      return at::kFloat;
    case DType::UInt8:
      return at::kByte;
    case DType::Int8:
      return at::kChar;
    case DType::Int16:
      return at::kShort;
    case DType::Int32:
      return at::kInt;
    case DType::Int64:
      return at::kLong;
    case DType::Bool:
      return at::kBool;
    case DType::Float16:
      return at::kHalf;
    case DType::Double:
      return at::kDouble;
    case DType::BFloat16:
      return at::kBFloat16;
    case DType::Complex64:
      return at::kComplexFloat;
    case DType::Complex128:
      return at::kComplexDouble;
    default:
      break;
  }
  throw std::invalid_argument(std::string("tensor element type ") + dtype_name(t) +
                              " (ONNX data_type " + std::to_string(static_cast<int>(t)) +
                              ") has no ATen equivalent");
}

TensorType TensorType::from_tensor(const at::Tensor& t) {
  TensorType tt;
  tt.dtype = dtype_from_scalar_type(t.scalar_type());
  std::vector<Dim> dims;
  for (int64_t s : t.sizes()) dims.push_back(Dim::known(s));
  tt.shape = std::move(dims);
  return tt;
}

std::string TensorType::str() const {
  std::ostringstream os;
  os << dtype_name(dtype);
  if (!shape) return os.str();
  os << "(";
  for (size_t i = 0; i < shape->size(); ++i) {
    if (i) os << ", ";
    const Dim& d = (*shape)[i];
    if (d.value)
      os << *d.value;
    else if (!d.symbol.empty())
      os << d.symbol;
    else
      os << "?";
  }
  os << ")";
  return os.str();
}

std::string values_str(const at::Tensor& t, size_t limit) {
  std::ostringstream os;
  os << "{";
  if (!t.defined()) return "{}";
  const int64_t n = t.numel();
  const int64_t shown = std::min<int64_t>(n, static_cast<int64_t>(limit));
  at::Tensor flat = t.reshape({-1}).slice(0, 0, shown);
  if (flat.is_complex()) flat = at::view_as_real(flat.resolve_conj()).reshape({-1});
  flat = flat.to(at::kDouble);
  const double* p = flat.data_ptr<double>();
  for (int64_t i = 0; i < flat.numel(); ++i) {
    if (i) os << ", ";
    if (t.is_complex() && i % 2) os << "i";  // (re, i im) pairs
    if (t.scalar_type() == at::kBool)
      os << (p[i] != 0 ? "true" : "false");
    else
      os << p[i];
  }
  if (n > shown) os << ", ... (" << n << " in all)";
  os << "}";
  return os.str();
}

namespace {
[[noreturn]] void wrong_kind(const char* want) {
  throw std::logic_error(std::string("attribute is not of kind ") + want);
}
}  // namespace

int64_t AttrValue::i() const {
  if (auto* p = std::get_if<int64_t>(&v_)) return *p;
  wrong_kind("INT");
}
float AttrValue::f() const {
  if (auto* p = std::get_if<float>(&v_)) return *p;
  wrong_kind("FLOAT");
}
const std::string& AttrValue::s() const {
  if (auto* p = std::get_if<std::string>(&v_)) return *p;
  wrong_kind("STRING");
}
const at::Tensor& AttrValue::t() const {
  if (auto* p = std::get_if<at::Tensor>(&v_)) return *p;
  wrong_kind("TENSOR");
}
const std::shared_ptr<Graph>& AttrValue::g() const {
  if (auto* p = std::get_if<std::shared_ptr<Graph>>(&v_)) return *p;
  wrong_kind("GRAPH");
}
const Ints& AttrValue::ints() const {
  if (auto* p = std::get_if<Ints>(&v_)) return *p;
  wrong_kind("INTS");
}
const Floats& AttrValue::floats() const {
  if (auto* p = std::get_if<Floats>(&v_)) return *p;
  wrong_kind("FLOATS");
}
const Strings& AttrValue::strings() const {
  if (auto* p = std::get_if<Strings>(&v_)) return *p;
  wrong_kind("STRINGS");
}

void Node::replace_input(size_t i, Value* v) {
  Value* old = inputs_.at(i);
  if (old) {
    auto it = std::find(old->uses_.begin(), old->uses_.end(), this);
    if (it != old->uses_.end()) old->uses_.erase(it);
  }
  inputs_[i] = v;
  if (v) v->uses_.push_back(this);
}

void Node::add_input(Value* v) {
  inputs_.push_back(v);
  if (v) v->uses_.push_back(this);
}

void Node::drop_trailing_empty_inputs() {
  while (!inputs_.empty() && !inputs_.back()) inputs_.pop_back();
}

const AttrValue* Node::attr(const std::string& name) const {
  for (const Attr& a : attrs_)
    if (a.name == name) return &a.value;
  return nullptr;
}

void Node::set_attr(const std::string& name, AttrValue v) {
  for (Attr& a : attrs_)
    if (a.name == name) {
      a.value = std::move(v);
      return;
    }
  attrs_.push_back({name, std::move(v)});
}

void Node::remove_attr(const std::string& name) {
  attrs_.erase(
      std::remove_if(attrs_.begin(), attrs_.end(), [&](const Attr& a) { return a.name == name; }),
      attrs_.end());
}

int64_t Node::attr_i(const std::string& name, int64_t dflt) const {
  const AttrValue* a = attr(name);
  return a ? a->i() : dflt;
}
float Node::attr_f(const std::string& name, float dflt) const {
  const AttrValue* a = attr(name);
  return a ? a->f() : dflt;
}
std::string Node::attr_s(const std::string& name, const std::string& dflt) const {
  const AttrValue* a = attr(name);
  return a ? a->s() : dflt;
}
Ints Node::attr_ints(const std::string& name, const Ints& dflt) const {
  const AttrValue* a = attr(name);
  return a ? a->ints() : dflt;
}
Floats Node::attr_floats(const std::string& name, const Floats& dflt) const {
  const AttrValue* a = attr(name);
  return a ? a->floats() : dflt;
}

Value* Graph::add_value(std::string name) {
  values_.push_back(std::make_unique<Value>());
  values_.back()->name_ = std::move(name);
  return values_.back().get();
}

Value* Graph::add_input(std::string name, std::optional<TensorType> type) {
  Value* v = add_value(std::move(name));
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

void Graph::remove_input(Value* v) {
  inputs_.erase(std::remove(inputs_.begin(), inputs_.end(), v), inputs_.end());
}

Node* Graph::add_node(std::string op_type, std::vector<Value*> inputs, std::vector<Attr> attrs,
                      size_t n_outputs, std::string domain, Node* before) {
  auto node = std::make_unique<Node>();
  node->op_type_ = std::move(op_type);
  node->domain_ = std::move(domain);
  node->attrs_ = std::move(attrs);
  node->graph_ = this;
  for (Value* v : inputs) node->add_input(v);
  for (size_t i = 0; i < n_outputs; ++i) {
    Value* out = add_value();
    out->producer_ = node.get();
    node->outputs_.push_back(out);
  }
  Node* raw = node.get();
  if (before) {
    auto it = std::find_if(nodes_.begin(), nodes_.end(),
                           [&](const std::unique_ptr<Node>& n) { return n.get() == before; });
    nodes_.insert(it, std::move(node));
  } else {
    nodes_.push_back(std::move(node));
  }
  return raw;
}

void Graph::remove_node(Node* n) {
  for (size_t i = 0; i < n->inputs_.size(); ++i) n->replace_input(i, nullptr);
  for (Value* out : n->outputs_) {
    if (!out->uses_.empty())
      throw std::logic_error("removing node " + n->op_type_ + " whose output " + out->name_ +
                             " is still used");
    out->producer_ = nullptr;
  }
  nodes_.remove_if([&](const std::unique_ptr<Node>& p) { return p.get() == n; });
}

void Graph::replace_all_uses(Value* from, Value* to) {
  std::vector<Node*> users = from->uses_;
  for (Node* u : users)
    for (size_t i = 0; i < u->inputs_.size(); ++i)
      if (u->inputs_[i] == from) u->replace_input(i, to);
  for (Value*& o : outputs_)
    if (o == from) o = to;
}

Value* Graph::add_initializer(std::string name, at::Tensor data) {
  Value* v = add_value(std::move(name));
  v->type_ = TensorType::from_tensor(data);
  init_index_[v] = inits_.size();
  inits_.emplace_back(v, std::move(data));
  return v;
}

const at::Tensor* Graph::initializer(const Value* v) const {
  auto it = init_index_.find(v);
  return it == init_index_.end() ? nullptr : &inits_[it->second].second;
}

void Graph::remove_initializer(Value* v) {
  inits_.erase(std::remove_if(inits_.begin(), inits_.end(),
                              [&](const std::pair<Value*, at::Tensor>& p) { return p.first == v; }),
               inits_.end());
  init_index_.clear();
  for (size_t i = 0; i < inits_.size(); ++i) init_index_[inits_[i].first] = i;
}

Value* Graph::find_value(const std::string& name) const {
  for (const auto& v : values_)
    if (v->name_ == name) return v.get();
  return nullptr;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  for (const auto& v : values_) out.push_back(v.get());
  return out;
}

int64_t opset_version(const std::vector<OpsetImport>& opsets, const std::string& domain) {
  for (const OpsetImport& o : opsets)
    if (o.domain == domain) return o.version;
  return -1;
}

bool Node::has_subgraphs() const {
  for (const Attr& a : attrs_)
    if (a.value.kind() == AttrValue::Kind::Graph) return true;
  return false;
}

bool has_subgraphs(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n->has_subgraphs()) return true;
  return false;
}

std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) return std::nullopt;
  return a;
}

std::optional<int64_t> product_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

}  // namespace tonnx::ir
