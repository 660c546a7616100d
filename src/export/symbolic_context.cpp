// SymbolicContext: what a symbolic function sees of the converter and of its aten node.
#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>

#include "export/converter.h"
#include "export/emitted.h"
#include "tonnx/symbolic.h"

namespace tonnx {
namespace jit = torch::jit;

namespace detail {
// A constant argument: prim::Constant, or a list built from constants.
std::optional<c10::IValue> constant_ivalue(const jit::Value* v) {
  if (auto iv = jit::toIValue(v)) return iv;
  const jit::Node* p = v->node();
  // x.dim() of a tensor whose rank the types know (scripted code: recorded over the probe runs,
  // none where it varies) is that rank.
  if (p->kind() == c10::aten::dim && p->inputs().size() == 1)
    if (auto tt = p->input(0)->type()->cast<c10::TensorType>(); tt && tt->dim())
      return c10::IValue(static_cast<int64_t>(*tt->dim()));
  if (p->kind() != c10::prim::ListConstruct) return std::nullopt;
  auto elem = v->type()->cast<c10::ListType>();
  if (!elem) return std::nullopt;
  c10::impl::GenericList list(elem->getElementType());
  for (const jit::Value* e : p->inputs()) {
    auto ev = jit::toIValue(e);
    if (!ev) return std::nullopt;
    list.push_back(*ev);
  }
  return c10::IValue(list);
}

// A typed function takes the schema's first N arguments (all of them, or a prefix).
void check_arity(SymbolicContext& g, size_t expected) {
  if (g.num_inputs() < expected)
    g.fail("the symbolic function takes " + std::to_string(expected) +
           " argument(s) but this overload of the op has only " + std::to_string(g.num_inputs()) +
           "; register one that reads its inputs with g.input(i)");
}
}  // namespace detail

ir::Value* SymbolicContext::op(const std::string& op_type, std::vector<ir::Value*> inputs,
                               std::vector<ir::Attr> attrs) {
  detail::record_emitted(kind(), opset(), op_type);
  return c_.emit(op_type, std::move(inputs), std::move(attrs), 1, "")->output();
}

std::vector<ir::Value*> SymbolicContext::op_n(const std::string& op_type,
                                              std::vector<ir::Value*> inputs,
                                              std::vector<ir::Attr> attrs, size_t n_outputs,
                                              const std::string& domain) {
  ir::Node* n = c_.emit(op_type, std::move(inputs), std::move(attrs), n_outputs, domain);
  detail::record_emitted(kind(), opset(), op_type);
  return {n->outputs().begin(), n->outputs().end()};
}

ir::Value* SymbolicContext::constant(const at::Tensor& t) {
  ir::Value* v = c_.constant(t);
  v->set_type(ir::TensorType::from_tensor(t));
  return v;
}

ir::Value* SymbolicContext::constant_ints(const std::vector<int64_t>& v) {
  return constant(at::tensor(v, at::kLong));
}

ir::Value* SymbolicContext::constant_scalar(double v, at::ScalarType dtype) {
  return constant(at::scalar_tensor(v, at::TensorOptions().dtype(dtype)));
}

ir::Value* SymbolicContext::cast(ir::Value* v, at::ScalarType dtype) {
  ir::DType want = ir::dtype_from_scalar_type(dtype);
  if (v->type() && v->type()->dtype == want) return v;
  ir::Value* out = op("Cast", {v}, {{"to", static_cast<int64_t>(want)}});
  if (v->type()) {
    ir::TensorType t = *v->type();
    t.dtype = want;
    out->set_type(t);
  }
  return out;
}

int SymbolicContext::opset() const { return c_.opset(); }
bool SymbolicContext::dynamic_shapes() const { return c_.dynamic(); }

std::string SymbolicContext::kind() const { return node_->kind().toQualString(); }
std::string SymbolicContext::scope() const {
  auto* n = const_cast<jit::Node*>(node_);
  return n->scope() ? n->scope()->namesFromRoot() : "";
}
size_t SymbolicContext::num_inputs() const { return node_->inputs().size(); }
size_t SymbolicContext::num_outputs() const { return node_->outputs().size(); }

namespace {
const jit::Value* arg(const jit::Node* n, size_t i, const SymbolicContext& g) {
  if (i >= n->inputs().size())
    g.fail("asked for input " + std::to_string(i) + " of an op with " +
           std::to_string(n->inputs().size()) + " inputs");
  return n->input(i);
}
}  // namespace

bool SymbolicContext::is_none(size_t i) const {
  return arg(node_, i, *this)->type()->kind() == c10::TypeKind::NoneType;
}

bool SymbolicContext::is_constant(size_t i) const {
  return detail::constant_ivalue(arg(node_, i, *this)).has_value();
}

ir::Value* SymbolicContext::input(size_t i) {
  ir::Value* v = c_.tensor_of(arg(node_, i, *this));
  return v;
}

std::vector<ir::Value*> SymbolicContext::inputs_list(size_t i) {
  return c_.tensor_list_of(arg(node_, i, *this));
}

bool SymbolicContext::is_sequence(size_t i) const { return c_.is_sequence(arg(node_, i, *this)); }

ir::Value* SymbolicContext::sequence(size_t i) { return c_.sequence_of(arg(node_, i, *this)); }

ir::Value* SymbolicContext::sequence_op(const std::string& op_type, std::vector<ir::Value*> inputs,
                                        std::vector<ir::Attr> attrs) {
  if (node_->outputs().empty() || !detail::is_tensor_list_type(node_->output(0)->type()))
    fail("internal: sequence_op for an op whose output 0 is not a list of tensors");
  ir::Value* v = op(op_type, std::move(inputs), std::move(attrs));
  return c_.mark_sequence(v, node_->output(0));
}

std::string SymbolicContext::arg_name(size_t i) const {
  if (auto* schema = node_->maybeSchema())
    if (i < schema->arguments().size()) return schema->arguments()[i].name();
  return "arg" + std::to_string(i);
}

std::string SymbolicContext::arg_type(size_t i) const {
  return arg(node_, i, *this)->type()->annotation_str();
}

namespace {
c10::IValue constant_arg(const SymbolicContext& g, const jit::Node* n, size_t i, const char* want) {
  auto iv = detail::constant_ivalue(arg(n, i, g));
  if (!iv)
    g.fail("input " + std::to_string(i) + " (" + g.arg_name(i) + ") must be a constant " + want +
           " but is computed at run time");
  return *iv;
}
}  // namespace

int64_t SymbolicContext::i(size_t idx) const {
  c10::IValue v = constant_arg(*this, node_, idx, "int");
  if (v.isInt()) return v.toInt();
  if (v.isBool()) return v.toBool();
  if (v.isTensor() && v.toTensor().numel() == 1) return v.toTensor().item<int64_t>();
  fail("input " + std::to_string(idx) + " (" + arg_name(idx) + ") must be an int, got " +
       v.tagKind());
}

double SymbolicContext::f(size_t idx) const {
  c10::IValue v = constant_arg(*this, node_, idx, "number");
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool();
  if (v.isTensor() && v.toTensor().numel() == 1) return v.toTensor().item<double>();
  fail("input " + std::to_string(idx) + " (" + arg_name(idx) + ") must be a number, got " +
       v.tagKind());
}

bool SymbolicContext::b(size_t idx) const {
  c10::IValue v = constant_arg(*this, node_, idx, "bool");
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  fail("input " + std::to_string(idx) + " (" + arg_name(idx) + ") must be a bool, got " +
       v.tagKind());
}

std::string SymbolicContext::s(size_t idx) const {
  c10::IValue v = constant_arg(*this, node_, idx, "string");
  if (v.isString()) return v.toStringRef();
  fail("input " + std::to_string(idx) + " (" + arg_name(idx) + ") must be a string, got " +
       v.tagKind());
}

std::vector<int64_t> SymbolicContext::ints(size_t idx) const {
  c10::IValue v = constant_arg(*this, node_, idx, "int[]");
  if (v.isIntList()) return v.toIntVector();
  if (v.isInt()) return {v.toInt()};
  if (v.isTensor() && v.toTensor().dim() <= 1) {
    at::Tensor t = v.toTensor().to(at::kLong).contiguous();
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  }
  fail("input " + std::to_string(idx) + " (" + arg_name(idx) + ") must be an int[], got " +
       v.tagKind());
}

std::vector<double> SymbolicContext::floats(size_t idx) const {
  c10::IValue v = constant_arg(*this, node_, idx, "float[]");
  if (v.isDoubleList()) return v.toDoubleVector();
  if (v.isDouble()) return {v.toDouble()};
  if (v.isIntList()) {
    std::vector<double> out;
    for (int64_t x : v.toIntVector()) out.push_back(static_cast<double>(x));
    return out;
  }
  fail("input " + std::to_string(idx) + " (" + arg_name(idx) + ") must be a float[], got " +
       v.tagKind());
}

std::optional<at::Tensor> SymbolicContext::constant_tensor(size_t idx) const {
  auto iv = jit::toIValue(arg(node_, idx, *this));
  if (iv && iv->isTensor()) return iv->toTensor();
  return std::nullopt;
}

// A value whose rank is known only at run time (after a squeeze of a dim whose size varies)
// has no shape here, whatever the trace recorded: symbolics must not use the traced rank.
std::optional<ir::TensorType> SymbolicContext::type(size_t idx) const {
  const jit::Value* v = arg(node_, idx, *this);
  auto t = detail::jit_type(v);
  if (t && c_.rank_varies(v)) t->shape.reset();
  return t;
}

std::optional<ir::TensorType> SymbolicContext::output_type(size_t k) const {
  if (k >= node_->outputs().size()) return std::nullopt;
  auto t = detail::jit_type(node_->output(k));
  for (const jit::Value* in : node_->inputs())
    if (t && c_.rank_varies(in)) t->shape.reset();
  return t;
}

at::ScalarType SymbolicContext::scalar_type(size_t idx) const {
  auto t = type(idx);
  if (!t || t->dtype == ir::DType::Undefined)
    fail("the element type of input " + std::to_string(idx) + " (" + arg_name(idx) +
         ") is not known from the trace");
  return ir::scalar_type_from_dtype(t->dtype);
}

at::ScalarType SymbolicContext::output_scalar_type(size_t k) const {
  auto t = output_type(k);
  if (!t || t->dtype == ir::DType::Undefined)
    fail("the element type of output " + std::to_string(k) + " is not known from the trace");
  return ir::scalar_type_from_dtype(t->dtype);
}

int64_t SymbolicContext::rank(size_t idx) const {
  auto t = type(idx);
  if (!t || !t->shape)
    fail("the rank of input " + std::to_string(idx) + " (" + arg_name(idx) +
         ") is not known from the trace");
  return static_cast<int64_t>(t->shape->size());
}

std::vector<int64_t> SymbolicContext::sizes(size_t idx) const {
  auto t = type(idx);
  std::vector<int64_t> out;
  if (t && t->shape)
    for (const ir::Dim& d : *t->shape)
      if (d.value) out.push_back(*d.value);
  if (!t || !t->shape || out.size() != t->shape->size())
    fail("the sizes of input " + std::to_string(idx) + " (" + arg_name(idx) +
         ") are not known from the trace");
  return out;
}

bool SymbolicContext::is_quantized(size_t i) const { return c_.is_quantized(arg(node_, i, *this)); }

ir::Value* SymbolicContext::dequantize(size_t i) { return dequantize_value(input(i)); }

ir::Value* SymbolicContext::dequantize_value(ir::Value* v) {
  if (c_.qparams(v)) detail::record_emitted(kind(), opset(), "DequantizeLinear");
  return c_.dequantized(v);
}

ir::Value* SymbolicContext::quantize(ir::Value* x, ir::Value* scale, ir::Value* zero_point) {
  if (!zero_point->type()) fail("internal: the zero point given to quantize() has no known type");
  detail::Converter::QParams q;
  switch (zero_point->type()->dtype) {
    case ir::DType::UInt8:
      q.qtype = at::kQUInt8;
      break;
    case ir::DType::Int8:
      q.qtype = at::kQInt8;
      break;
    default:
      fail("a zero point of type " + std::string(ir::dtype_name(zero_point->type()->dtype)) +
           " (QuantizeLinear takes uint8 or int8)");
  }
  q.scale = cast(scale, at::kFloat);
  q.zero_point = zero_point;
  detail::record_emitted(kind(), opset(), "QuantizeLinear");
  return c_.quantized(x, q);
}

ir::Value* SymbolicContext::quantize(ir::Value* x, double scale, int64_t zero_point,
                                     at::ScalarType qtype) {
  if (!(scale > 0)) fail("the scale " + std::to_string(scale) + " is not > 0");
  if (!c10::isQIntType(qtype) || qtype == at::kQInt32)
    fail(std::string("quantizing to ") + c10::toString(qtype) +
         " (QuantizeLinear makes quint8 or qint8)");
  at::ScalarType storage = c10::toUnderlying(qtype);
  int64_t lo = storage == at::kByte ? 0 : -128, hi = storage == at::kByte ? 255 : 127;
  if (zero_point < lo || zero_point > hi)
    fail("the zero point " + std::to_string(zero_point) + " is outside " + c10::toString(qtype) +
         "'s range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return quantize(x, constant_scalar(scale, at::kFloat), constant_scalar(zero_point, storage));
}

ir::Value* SymbolicContext::dequantize_constant(const at::Tensor& q) {
  if (!q.is_quantized()) return constant(q);
  detail::record_emitted(kind(), opset(), "DequantizeLinear");
  return c_.dequantized_constant(q);
}

void SymbolicContext::fail(const std::string& what) const { c_.fail(node_, what); }

void SymbolicContext::unsupported_below(int opset_needed, const std::string& what) const {
  c_.fail(node_, what + " needs opset " + std::to_string(opset_needed) +
                     " or newer; export with opset_version=" + std::to_string(opset_needed));
}

}  // namespace tonnx
