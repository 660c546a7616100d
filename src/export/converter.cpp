// The converter (converter.h): TorchScript nodes to ONNX through the symbolic registry.
#include "export/converter.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "symbolic/complex.h"

namespace tonnx::detail {
namespace jit = torch::jit;

std::optional<ir::TensorType> jit_type(const jit::Value* v) {
  auto tt = v->type()->cast<c10::TensorType>();
  if (!tt) {
    // Scalars from the trace become 0-d tensors.
    if (v->type()->kind() == c10::TypeKind::IntType)
      return ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{}};
    if (v->type()->kind() == c10::TypeKind::FloatType)
      return ir::TensorType{ir::DType::Float, std::vector<ir::Dim>{}};
    if (v->type()->kind() == c10::TypeKind::BoolType)
      return ir::TensorType{ir::DType::Bool, std::vector<ir::Dim>{}};
    return std::nullopt;
  }
  ir::TensorType t;
  // A quantized tensor reads as the floats it stands for: symbolics see their inputs
  // dequantized (converter_quant.cpp); its integer values are typed where they are made.
  // A complex tensor reads as the real tensor it is exported as: a trailing dim of 2
  // (converter_complex.cpp).
  bool complex = tt->scalarType() && c10::isComplexType(*tt->scalarType());
  if (auto st = tt->scalarType())
    t.dtype = c10::isQIntType(*st) ? ir::DType::Float
              : complex            ? ir::dtype_from_scalar_type(c10::toRealValueType(*st))
                                   : ir::dtype_from_scalar_type(*st);
  // Dims known on their own: Float(*, 2, 48) keeps 2 and 48.
  if (auto sizes = tt->sizes().sizes()) {
    std::vector<ir::Dim> dims;
    for (const auto& s : *sizes) dims.push_back(s ? ir::Dim::known(*s) : ir::Dim{});
    t.shape = std::move(dims);
  } else if (auto rank = tt->dim()) {
    t.shape = std::vector<ir::Dim>(*rank);
  }
  if (complex && t.shape) t.shape->push_back(ir::Dim::known(2));
  return t;
}

namespace {

std::string type_str(const jit::Value* v) {
  if (auto tt = v->type()->cast<c10::TensorType>();
      tt && tt->scalarType() && c10::isComplexType(*tt->scalarType())) {  // not its pairs
    std::string s = c10::toString(*tt->scalarType());
    if (auto sizes = tt->sizes().concrete_sizes()) {
      s += "(";
      for (size_t i = 0; i < sizes->size(); ++i) s += (i ? ", " : "") + std::to_string((*sizes)[i]);
      s += ")";
    }
    return s;
  }
  if (auto t = jit_type(v); t && v->type()->cast<c10::TensorType>()) return t->str();
  return v->type()->annotation_str();
}

}  // namespace

// jit::Node::scope() is not const-qualified.
std::string scope_of(const jit::Node* n) {
  auto* m = const_cast<jit::Node*>(n);
  return m->scope() ? m->scope()->namesFromRoot() : "";
}

Converter::Converter(std::shared_ptr<jit::Graph> graph, ConvertConfig config)
    : jg_(std::move(graph)), cfg_(std::move(config)) {}

std::string Converter::describe(const jit::Node* n) const {
  std::ostringstream os;
  os << n->kind().toQualString();
  std::string scope = scope_of(n);
  std::vector<std::string> parts;
  if (!scope.empty()) parts.push_back("scope " + scope);
  std::string ins;
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    const jit::Value* v = n->input(i);
    if (v->type()->cast<c10::TensorType>()) {
      if (!ins.empty()) ins += ", ";
      ins += type_str(v);
    }
  }
  if (!ins.empty()) parts.push_back("inputs " + ins);
  if (!parts.empty()) {
    os << " (";
    for (size_t i = 0; i < parts.size(); ++i) os << (i ? ", " : "") << parts[i];
    os << ")";
  }
  return os.str();
}

void Converter::fail(const jit::Node* n, const std::string& what) const {
  throw ExportError("ONNX export failed at " + (n ? describe(n) : std::string("the graph")) +
                    " with opset " + std::to_string(cfg_.opset) + ": " + what);
}

bool Converter::structural(const jit::Node* n) const {
  switch (n->kind()) {
    case c10::prim::Constant:
    case c10::prim::ListConstruct:
    case c10::prim::TupleConstruct:
    case c10::prim::ListUnpack:
    case c10::prim::TupleUnpack:
    case c10::prim::If:
    case c10::prim::Loop:
    case c10::prim::Uninitialized:
      return true;
    default:
      return false;
  }
}

const SymbolicFn* Converter::lookup(const jit::Node* n) const {
  return find_symbolic(serving_symbolic_name(n->kind().toQualString(), cfg_.opset), cfg_.opset);
}

ir::Value* Converter::find_env(const jit::Value* v) const {
  for (auto scope = env_.rbegin(); scope != env_.rend(); ++scope) {
    auto it = scope->find(v);
    if (it != scope->end()) return it->second;
  }
  return nullptr;
}

ir::Node* Converter::emit(const std::string& op_type, std::vector<ir::Value*> inputs,
                          std::vector<ir::Attr> attrs, size_t n_outputs,
                          const std::string& domain) {
  ir::Node* node =
      graph().add_node(op_type, std::move(inputs), std::move(attrs), n_outputs, domain);
  if (current_) {
    node->set_scope(scope_of(current_));
    node->set_source(current_->kind().toQualString());
  }
  return node;
}

ir::Value* Converter::constant(const at::Tensor& t) {
  if (t.is_complex()) return mark_complex(constant(at::view_as_real(t.detach().resolve_conj())));
  ir::Value* v = emit("Constant", {}, {{"value", t.detach().clone()}}, 1, "")->output();
  v->set_type(ir::TensorType::from_tensor(t));  // symbolics read constants' dtypes (masks)
  return v;
}

namespace {
at::Tensor ivalue_to_tensor(const c10::IValue& iv) {
  if (iv.isTensor()) return iv.toTensor();
  if (iv.isInt()) return at::scalar_tensor(iv.toInt(), at::kLong);
  if (iv.isDouble()) return at::scalar_tensor(iv.toDouble(), at::kFloat);
  if (iv.isBool()) return at::scalar_tensor(iv.toBool(), at::kBool);
  if (iv.isComplexDouble()) return at::scalar_tensor(iv.toComplexDouble(), at::kComplexFloat);
  if (iv.isIntList()) {
    auto v = iv.toIntVector();
    return at::tensor(v, at::kLong);
  }
  if (iv.isDoubleList()) {
    auto v = iv.toDoubleVector();
    return at::tensor(v, at::kDouble).to(at::kFloat);
  }
  if (iv.isBoolList()) {
    auto v = iv.toBoolList();
    std::vector<int64_t> ints;
    for (bool b : v) ints.push_back(b);
    return at::tensor(ints, at::kLong).to(at::kBool);
  }
  return {};
}
}  // namespace

ir::Value* Converter::tensor_of(const jit::Value* v) {
  if (ir::Value* known = find_env(v)) return known;
  const jit::Node* p = v->node();
  ir::Value* out = nullptr;
  if (p->kind() == c10::prim::Constant) {
    if (v->type()->kind() == c10::TypeKind::NoneType) return nullptr;
    auto iv = jit::toIValue(v);
    at::Tensor t = iv ? ivalue_to_tensor(*iv) : at::Tensor();
    if (!t.defined())
      fail(current_,
           "cannot turn the constant of type " + v->type()->annotation_str() + " into a tensor");
    out = t.is_quantized() ? quantized_constant(t) : constant(t);
  } else if (p->kind() == c10::prim::ListConstruct) {
    // A list of tensors is values (or a sequence), never one tensor: a symbolic that reads it
    // with input() instead of inputs_list() would otherwise concatenate its elements.
    if (is_tensor_list_type(v->type()))
      fail(current_, std::string("list %") + v->debugName() +
                         " of tensors is used where one tensor is expected");
    // An int[] whose elements are computed (sizes under dynamic axes): Concat of 1-D pieces.
    if (auto iv = constant_ivalue(v)) {
      out = constant(ivalue_to_tensor(*iv));
    } else {
      // Each element reshaped to [1]: an int is 0-d, but a graph input that stands for an
      // int may come as a tensor of one element ([1]), as torch.onnx passes it.
      std::vector<ir::Value*> parts;
      auto one = constant(at::tensor(std::vector<int64_t>{1}, at::kLong));
      for (const jit::Value* e : p->inputs()) {
        ir::Value* t = tensor_of(e);
        if (!t) fail(current_, "a list element is None");
        parts.push_back(emit("Reshape", {t, one}, {}, 1, "")->output());
      }
      out = emit("Concat", parts, {{"axis", int64_t{0}}}, 1, "")->output();
    }
  } else if (p->kind() == c10::prim::Uninitialized) {
    out = placeholder(v, nullptr);
  } else {
    fail(current_, std::string("value %") + v->debugName() + " produced by " +
                       p->kind().toQualString() + " has no ONNX equivalent");
  }
  bind(v, out);
  return out;
}

std::vector<ir::Value*> Converter::tensor_list_of(const jit::Value* v) {
  for (auto scope = lists_.rbegin(); scope != lists_.rend(); ++scope) {
    auto lit = scope->find(v);
    if (lit != scope->end()) return lit->second;
  }
  if (is_sequence(v))
    fail(current_, std::string("list %") + v->debugName() +
                       " changes at run time (in a loop or a branch), so it is an ONNX sequence "
                       "whose length is known only at run time, and this op needs its elements "
                       "one by one; stack or cat the list, or index it, instead");
  const jit::Node* p = v->node();
  if (p->kind() == c10::prim::Uninitialized) return {};  // no path that runs reads it
  if (p->kind() == c10::prim::ListConstruct || p->kind() == c10::prim::TupleConstruct) {
    std::vector<ir::Value*> out;
    for (const jit::Value* e : p->inputs()) out.push_back(tensor_of(e));
    return out;
  }
  if (p->kind() == c10::prim::Constant) {
    auto iv = jit::toIValue(v);
    std::vector<ir::Value*> out;
    if (iv && iv->isTensorList()) {
      for (const at::Tensor& t : iv->toTensorVector()) out.push_back(constant(t));
      return out;
    }
    // A folded Tensor?[] (x[mask] with a constant mask): None entries stay null.
    if (iv && iv->isList()) {
      for (const c10::IValue& e : iv->toListRef()) {
        if (e.isNone()) {
          out.push_back(nullptr);
        } else if (e.isTensor()) {
          out.push_back(constant(e.toTensor()));
        } else {
          fail(current_, std::string("constant list %") + v->debugName() + " holds a " +
                             e.tagKind() + " where a tensor or None was expected");
        }
      }
      return out;
    }
  }
  fail(current_, std::string("expected a list of tensors for %") + v->debugName() + " (of type " +
                     v->type()->annotation_str() + ", made by " + p->kind().toQualString() + ")");
}

void Converter::bind_outputs(const jit::Node* n, const Outputs& outs) {
  const auto& vals = outs.values;
  if (n->outputs().size() == 1 && n->output()->type()->kind() == c10::TypeKind::ListType) {
    // A list of tensors maps to its elements; an int[] / float[] is one 1-D tensor.
    auto elem = n->output()->type()->cast<c10::ListType>()->getElementType();
    if (elem->kind() != c10::TypeKind::TensorType && vals.size() == 1) {
      if (!vals[0]->type()) vals[0]->set_type(number_list_type(n->output()->type()));
      env_.back()[n->output()] = vals[0];
      return;
    }
    if (vals.size() == 1 && vals[0] && vals[0]->is_sequence()) {
      bind(n->output(), vals[0]);
      return;
    }
    lists_.back()[n->output()] = vals;
    return;
  }
  for (size_t k = 0; k < n->outputs().size(); ++k) {
    const jit::Value* jo = n->output(k);
    ir::Value* v = k < vals.size() ? vals[k] : nullptr;
    if (!v) {
      if (jo->hasUses())
        fail(n, "the symbolic function returned " + std::to_string(vals.size()) +
                    " outputs, but output " + std::to_string(k) + " is used");
      continue;
    }
    if (!v->type()) v->set_type(jit_type(jo));
    bind(jo, v);
  }
}

void Converter::convert_node(const jit::Node* n) {
  convert_node_kind(n);
  if (!rank_varies_.empty()) propagate_varying_rank(n);
}

void Converter::convert_node_kind(const jit::Node* n) {
  current_ = n;
  switch (n->kind()) {
    case c10::prim::Constant:
    case c10::prim::ListConstruct:
    case c10::prim::TupleConstruct:
    case c10::prim::Uninitialized:
      return;  // materialized where used
    case c10::prim::If:
      return convert_if(n);  // quantized results: quantized_if_outputs
    case c10::prim::Loop:
      // A loop does not carry a quantized value's scale and zero point.
      for (const auto& values : {n->inputs(), n->outputs()})
        for (const jit::Value* v : values)
          if (is_quantized(v))
            fail(n,
                 "a quantized tensor is carried into or out of a loop; tonnx follows quantized "
                 "tensors through loops only as floats (dequantize() it before the loop)");
      return convert_loop(n);
    case c10::prim::ListUnpack:
    case c10::prim::TupleUnpack: {
      // An int[] computed at run time (h, w = x.shape[2:]): one 1-D tensor, gathered per element.
      auto lt = n->input()->type()->cast<c10::ListType>();
      if (lt && lt->getElementType()->kind() != c10::TypeKind::TensorType &&
          n->input()->node()->kind() != c10::prim::ListConstruct) {
        ir::Value* list = tensor_of(n->input());
        for (size_t k = 0; k < n->outputs().size(); ++k) {
          ir::Value* idx = constant(at::scalar_tensor(static_cast<int64_t>(k), at::kLong));
          ir::Value* e = emit("Gather", {list, idx}, {{"axis", int64_t{0}}}, 1, "")->output();
          e->set_type(jit_type(n->output(k)));
          bind(n->output(k), e);
        }
        return;
      }
      if (is_sequence(n->input())) {  // a list built at run time: its elements by position
        ir::Value* seq = find_env(n->input());
        for (size_t k = 0; k < n->outputs().size(); ++k) {
          ir::Value* idx = constant(at::scalar_tensor(static_cast<int64_t>(k), at::kLong));
          ir::Value* e = emit("SequenceAt", {seq, idx}, {}, 1, "")->output();
          e->set_type(jit_type(n->output(k)));
          bind(n->output(k), e);
        }
        return;
      }
      std::vector<ir::Value*> elems = tensor_list_of(n->input());
      if (elems.size() != n->outputs().size())
        fail(n, "unpacks " + std::to_string(n->outputs().size()) + " values from a list of " +
                    std::to_string(elems.size()));
      for (size_t k = 0; k < elems.size(); ++k) bind(n->output(k), elems[k]);
      return;
    }
    default:
      break;
  }
  // List concatenation (TorchScript's + on lists): tensors stay a list of values, ints a 1-D
  // tensor.
  if ((n->kind() == c10::aten::add || n->kind() == c10::aten::add_) && n->inputs().size() == 2) {
    if (auto lt = n->output()->type()->cast<c10::ListType>()) {
      if (lt->getElementType()->kind() == c10::TypeKind::TensorType &&
          (is_sequence(n->input(0)) || is_sequence(n->input(1)))) {
        if (is_sequence(n->input(1)))
          fail(n,
               "concatenating lists that both change at run time (ONNX sequences) is not "
               "supported; append the elements in a loop instead");
        ir::Value* seq = sequence_of(n->input(0));
        for (ir::Value* item : tensor_list_of(n->input(1))) {
          seq = emit("SequenceInsert", {seq, item}, {}, 1, "")->output();
          seq->set_sequence_elem(list_elem_type(n->output()));
        }
        bind(n->output(), seq);
        return;
      }
      if (lt->getElementType()->kind() == c10::TypeKind::TensorType) {
        std::vector<ir::Value*> all = tensor_list_of(n->input(0));
        for (ir::Value* v : tensor_list_of(n->input(1))) all.push_back(v);
        lists_.back()[n->output()] = all;
        return;
      }
      ir::Value* a = tensor_of(n->input(0));
      ir::Value* b = tensor_of(n->input(1));
      if (!a || !b) fail(n, "a list to concatenate is None");
      ir::Value* cat = emit("Concat", {a, b}, {{"axis", int64_t{0}}}, 1, "")->output();
      cat->set_type(ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>(1)});
      bind(n->output(), cat);
      return;
    }
  }
  if (convert_list_repeat(n) || convert_varying_squeeze(n)) return;
  if (convert_complex(n)) return;
  const SymbolicFn* fn = lookup(n);
  if (!fn) {
    if (cfg_.export_type == OperatorExportTypes::ONNX) fail(n, "no symbolic function");
    fallback_node(n, cfg_.export_type == OperatorExportTypes::ONNX_ATEN_FALLBACK);
    return;
  }
  if (convert_dequantized(n, *fn)) return;
  bind_outputs(n, call_symbolic(n, *fn));
}

Outputs Converter::call_symbolic(const jit::Node* n, const SymbolicFn& fn) {
  SymbolicContext g(*this, n);
  try {
    return fn(g);
  } catch (const ExportError&) {
    throw;
  } catch (const std::exception& e) {
    fail(n, e.what());
  }
}

ir::Model Converter::convert() {
  check_feasible();
  ir::Graph& g = graph();
  g.name = "main_graph";
  const auto inputs = jg_->inputs();
  const size_t n_user = cfg_.num_user_inputs;
  const size_t n_names = cfg_.input_names.size();
  if (n_names > inputs.size())
    throw ExportError("input_names has " + std::to_string(n_names) + " names, but the model has " +
                      std::to_string(n_user) + " input(s) and " +
                      std::to_string(inputs.size() - n_user) + " parameter tensor(s): at most " +
                      std::to_string(inputs.size()) + " names");
  std::set<std::string> used_names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const jit::Value* in = inputs[i];
    std::string name;
    if (i < n_names)
      name = cfg_.input_names[i];
    else if (i < n_user)
      name = default_input_name(i, n_user);
    else
      name = cfg_.params.at(i - n_user).name;
    if (!used_names.insert(name).second)
      throw ExportError("the name '" + name +
                        "' is given to two graph inputs or parameters; names must be unique");
    if (i >= n_user && !in->hasUses()) continue;  // parameters the trace never used
    std::optional<ir::TensorType> type = jit_type(in);
    auto dyn = cfg_.dynamic_axes.find(name);
    if (dyn != cfg_.dynamic_axes.end() && type && type->shape) {
      for (const auto& [axis, sym] : dyn->second) {
        int64_t rank = static_cast<int64_t>(type->shape->size());
        std::optional<int64_t> a = ir::normalize_axis(axis, rank);
        if (!a)
          throw ExportError("dynamic_axes for '" + name + "': axis " + std::to_string(axis) +
                            " is out of range for an input of rank " + std::to_string(rank));
        (*type->shape)[*a] = ir::Dim::named(sym);
      }
    }
    if (i < n_user && is_complex_type(in))
      throw ExportError("input " + std::to_string(i) + " ('" + name +
                        "') is a complex tensor, and ONNX graph inputs cannot be complex; pass "
                        "torch.view_as_real(x) and call torch.view_as_complex on it in forward");
    if (i < n_user && is_quantized_type(in)) {
      add_quantized_input(in, name, type, i, used_names);
    } else if (i < n_user || !cfg_.export_params) {
      if (i < n_user) input_examples_.push_back(static_cast<int64_t>(i));
      bind(in, g.add_input(name, type));
    } else {
      const at::Tensor& param = cfg_.params[i - n_user].tensor;
      ir::Value* v = g.add_initializer(
          name, param.is_complex() ? at::view_as_real(param.detach().resolve_conj()).contiguous()
                                   : param.detach());
      if (param.is_complex()) mark_complex(v);
      if (cfg_.keep_initializers_as_inputs) g.add_input(name, type);
      // keep the Value bound to the initializer
      bind(in, v);
    }
  }
  // Outputs without a given name are output_K, or output_K_N where a given name is output_K
  // (torch.onnx's suite names only the first of several outputs "output_1").
  std::vector<std::string> out_names;
  {
    std::set<std::string> given(cfg_.output_names.begin(), cfg_.output_names.end());
    for (size_t k = 0; k < jg_->outputs().size(); ++k) {
      if (k < cfg_.output_names.size()) {
        out_names.push_back(cfg_.output_names[k]);
        continue;
      }
      std::string name = "output_" + std::to_string(k);
      for (int n = 1; given.count(name) || used_names.count(name); ++n)
        name = "output_" + std::to_string(k) + "_" + std::to_string(n);
      out_names.push_back(name);
    }
  }
  warnings_ = drop_unknown_dynamic_axes(cfg_.dynamic_axes, used_names, out_names,
                                        cfg_.ignore_unknown_dynamic_axes);
  for (const jit::Node* n : jg_->nodes()) convert_node(n);
  current_ = nullptr;

  const auto outputs = jg_->outputs();
  if (cfg_.output_names.size() > outputs.size())
    throw ExportError("output_names has " + std::to_string(cfg_.output_names.size()) +
                      " names, but the model has " + std::to_string(outputs.size()) + " output(s)");
  std::set<ir::Value*> seen;
  for (size_t k = 0; k < outputs.size(); ++k) {
    // A list of tensors is one output, an ONNX sequence, as torch.onnx exports it.
    ir::Value* v =
        is_tensor_list_type(outputs[k]->type()) ? sequence_of(outputs[k]) : tensor_of(outputs[k]);
    if (!v) throw ExportError("output " + std::to_string(k) + " of the model is None");
    bool complex = is_complex(outputs[k]);
    if (is_tensor_list_type(outputs[k]->type())) {  // a list output: its elements
      if (outputs[k]->node()->kind() == c10::prim::ListConstruct)
        for (const jit::Value* e : outputs[k]->node()->inputs()) complex = complex || is_complex(e);
      if (!is_sequence(outputs[k]))
        for (ir::Value* e : tensor_list_of(outputs[k])) complex = complex || is_complex_value(e);
    }
    if (complex)
      throw ExportError("output " + std::to_string(k) +
                        " of the model is a complex tensor, and ONNX graph outputs cannot be "
                        "complex; return torch.view_as_real(y) (its real and imaginary parts in a "
                        "last dim of 2) instead");
    v = number_list_output(outputs[k], v);
    // An output that is an input, an initializer or another output needs its own node.
    if (!v->producer() || seen.count(v) || v->producer()->op_type() == "Constant") v = copy_of(v);
    seen.insert(v);
    const std::string& name = out_names[k];
    if (used_names.count(name))
      throw ExportError("the output name '" + name + "' is also the name of an input or parameter");
    used_names.insert(name);
    v->set_name(name);
    std::optional<ir::TensorType> type = v->is_sequence() ? std::nullopt : jit_type(outputs[k]);
    if (!type && !v->is_sequence()) type = number_list_type(outputs[k]->type());
    if (type && type->shape && dynamic()) {
      for (auto& d : *type->shape) d = ir::Dim{};
      auto dyn = cfg_.dynamic_axes.find(name);
      if (dyn != cfg_.dynamic_axes.end())
        for (const auto& [axis, sym] : dyn->second) {
          int64_t rank = static_cast<int64_t>(type->shape->size());
          if (auto a = ir::normalize_axis(axis, rank)) (*type->shape)[*a] = ir::Dim::named(sym);
        }
    }
    if (is_quantized_type(outputs[k])) {
      add_quantized_output(v, name, type, used_names);
      continue;
    }
    v->set_type(type);
    g.add_output(v);
  }

  model_.opsets.push_back({"", cfg_.opset});
  if (uses_aten_domain_) model_.opsets.push_back({"org.pytorch.aten", 1});
  for (const auto& [domain, version] : cfg_.custom_opsets) {
    if (domain == "org.pytorch.aten" && uses_aten_domain_) continue;
    model_.opsets.push_back({domain, version});
  }
  model_.producer_name = "tonnx";
#ifdef TONNX_VERSION
  model_.producer_version = TONNX_VERSION;
#endif
  return std::move(model_);
}

}  // namespace tonnx::detail
