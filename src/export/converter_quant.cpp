// Quantized tensors in the converter (converter.h). A quantized value is bound like any tensor
// to its integer tensor; its scale and zero point live beside it (qparams_). Ops on it go
// through DequantizeLinear, their float symbolic, and QuantizeLinear with the parameters
// LibTorch gives the result, as torch.onnx exports them. Graph inputs and outputs that are
// quantized carry three values each (integers, scale, zero point), as torch.onnx's do.
#include <ATen/ATen.h>

#include <set>

#include "export/converter.h"
#include "export/emitted.h"

namespace tonnx::detail {
namespace jit = torch::jit;

bool is_quantized_type(const jit::Value* v) {
  auto tt = v->type()->cast<c10::TensorType>();
  return tt && tt->scalarType() && c10::isQIntType(*tt->scalarType());
}

ir::DType quantized_storage(at::ScalarType qtype) {
  if (!c10::isQIntType(qtype))
    throw ExportError(std::string("internal: ") + c10::toString(qtype) + " is not quantized");
  if (qtype != at::kQUInt8 && qtype != at::kQInt8 && qtype != at::kQInt32)
    throw ExportError(std::string("quantized tensors of type ") + c10::toString(qtype) +
                      " have no ONNX equivalent (ONNX quantizes to uint8, int8 and int32)");
  return ir::dtype_from_scalar_type(c10::toUnderlying(qtype));
}

namespace {

// Ops whose quantized result has the parameters of their (first) quantized input, as LibTorch
// computes them on quantized tensors: views, clamps, pooling, nearest upsampling.
const std::set<std::string>& same_params_ops() {
  static const std::set<std::string> ops = {"aten::relu",
                                            "aten::leaky_relu",
                                            "aten::hardtanh",
                                            "aten::relu6",
                                            "aten::elu",
                                            "aten::selu",
                                            "aten::hardswish",
                                            "aten::view",
                                            "aten::reshape",
                                            "aten::reshape_as",
                                            "aten::view_as",
                                            "aten::transpose",
                                            "aten::permute",
                                            "aten::expand",
                                            "aten::expand_as",
                                            "aten::select",
                                            "aten::slice",
                                            "aten::flatten",
                                            "aten::as_strided",
                                            "aten::squeeze",
                                            "aten::unsqueeze",
                                            "aten::contiguous",
                                            "aten::clone",
                                            "aten::detach",
                                            "aten::max_pool1d",
                                            "aten::max_pool2d",
                                            "aten::max_pool3d",
                                            "aten::avg_pool1d",
                                            "aten::avg_pool2d",
                                            "aten::avg_pool3d",
                                            "aten::adaptive_avg_pool1d",
                                            "aten::adaptive_avg_pool2d",
                                            "aten::adaptive_avg_pool3d",
                                            "aten::upsample_nearest1d",
                                            "aten::upsample_nearest2d",
                                            "aten::upsample_nearest3d",
                                            "aten::cat",
                                            "aten::maximum",
                                            "aten::minimum",
                                            "aten::size",
                                            "aten::numel",
                                            "aten::dim"};
  return ops;
}

// Ops whose results compare or count: never quantized.
bool unquantized_result(const std::string& op) {
  static const std::set<std::string> ops = {"aten::eq",   "aten::ne",    "aten::lt",
                                            "aten::le",   "aten::gt",    "aten::ge",
                                            "aten::size", "aten::numel", "aten::dim"};
  return ops.count(op) > 0;
}

// Sigmoid, hardsigmoid and tanh map to a fixed range: LibTorch gives their results fixed
// parameters (scale 1/256 over [0, 1], 2/256 over [-1, 1]).
std::optional<std::pair<double, int64_t>> fixed_params(const std::string& op,
                                                       at::ScalarType qtype) {
  bool u8 = qtype == at::kQUInt8;
  if (op == "aten::sigmoid" || op == "aten::hardsigmoid")
    return std::make_pair(1.0 / 256.0, u8 ? int64_t{0} : int64_t{-128});
  if (op == "aten::tanh") return std::make_pair(2.0 / 256.0, u8 ? int64_t{128} : int64_t{0});
  return std::nullopt;
}

// Average pooling keeps its input's scale and zero point, and LibTorch averages the integers
// (minus the zero point) exactly and rounds once: computed on q - zero_point with scale 1, the
// ties of an average over a power-of-two window stay exact ties (the scale would blur them).
bool averages(const std::string& op) { return op.find("avg_pool") != std::string::npos; }

}  // namespace

const Converter::QParams* Converter::qparams(const ir::Value* v) const {
  auto it = qparams_.find(v);
  return it == qparams_.end() ? nullptr : &it->second;
}

bool Converter::is_quantized(const jit::Value* v) const {
  if (is_quantized_type(v)) return true;
  ir::Value* e = find_env(v);
  return e && qparams(e);
}

ir::Value* Converter::dequantized(ir::Value* v, ir::Value* scale) {
  const QParams* q = qparams(v);
  if (!q) return v;
  std::vector<ir::Attr> attrs;
  if (q->axis) attrs.push_back({"axis", *q->axis});
  ir::Value* out = emit("DequantizeLinear", {v, scale ? scale : q->scale, q->zero_point},
                        std::move(attrs), 1, "")
                       ->output();
  if (v->type()) {
    ir::TensorType t = *v->type();
    t.dtype = ir::DType::Float;
    out->set_type(t);
  }
  return out;
}

ir::Value* Converter::quantized(ir::Value* x, const QParams& q) {
  if (cfg_.opset < 10)
    fail(current_,
         "quantized tensors need opset 10 or newer (QuantizeLinear); export with "
         "opset_version=10 or newer");
  if (q.qtype == at::kQInt32)
    fail(current_, "quantizes to qint32; ONNX's QuantizeLinear makes uint8 or int8 only");
  if (q.axis && cfg_.opset < 13)
    fail(current_,
         "quantizes per channel, which QuantizeLinear does from opset 13; export with "
         "opset_version=13 or newer");
  if (x->type() && x->type()->dtype != ir::DType::Float) {
    ir::Value* cast =
        emit("Cast", {x}, {{"to", static_cast<int64_t>(ir::DType::Float)}}, 1, "")->output();
    ir::TensorType t = *x->type();
    t.dtype = ir::DType::Float;
    cast->set_type(t);
    x = cast;
  }
  std::vector<ir::Attr> attrs;
  if (q.axis) attrs.push_back({"axis", *q.axis});
  ir::Value* out =
      emit("QuantizeLinear", {x, q.scale, q.zero_point}, std::move(attrs), 1, "")->output();
  ir::TensorType t = x->type() ? *x->type() : ir::TensorType{};
  t.dtype = quantized_storage(q.qtype);
  out->set_type(t);
  qparams_[out] = q;
  return out;
}

ir::Value* Converter::quantized_constant(const at::Tensor& t) {
  QParams q;
  q.qtype = t.scalar_type();
  at::ScalarType storage = c10::toUnderlying(q.qtype);
  quantized_storage(q.qtype);  // fails for types ONNX has no integers for
  if (t.qscheme() == at::kPerTensorAffine) {
    q.scale = constant(at::scalar_tensor(t.q_scale(), at::kFloat));
    q.zero_point = constant(at::scalar_tensor(t.q_zero_point(), storage));
  } else if (t.qscheme() == at::kPerChannelAffine) {
    if (cfg_.opset < 13)
      fail(current_,
           "a tensor quantized per channel needs opset 13 (DequantizeLinear's axis); "
           "export with opset_version=13 or newer");
    q.scale = constant(t.q_per_channel_scales().to(at::kFloat));
    q.zero_point = constant(t.q_per_channel_zero_points().to(storage));
    q.axis = t.q_per_channel_axis();
  } else {
    fail(current_, std::string("a tensor quantized with scheme ") + c10::toString(t.qscheme()) +
                       " (ONNX has per-tensor and per-channel affine quantization)");
  }
  ir::Value* v = constant(t.int_repr().contiguous());
  qparams_[v] = q;
  return v;
}

ir::Value* Converter::dequantized_constant(const at::Tensor& t) {
  // Below opset 13 a per-channel weight is dequantized here: the same float arithmetic,
  // (q - zero_point) * scale, that DequantizeLinear would do.
  if (t.qscheme() == at::kPerChannelAffine && cfg_.opset < 13) return constant(t.dequantize());
  return dequantized(quantized_constant(t));
}

void Converter::add_quantized_input(const jit::Value* in, const std::string& name,
                                    const std::optional<ir::TensorType>& type, size_t example,
                                    std::set<std::string>& used_names) {
  at::ScalarType qtype = *in->type()->cast<c10::TensorType>()->scalarType();
  ir::DType storage = quantized_storage(qtype);
  for (const std::string& n : {name + "_scale", name + "_zero_point"})
    if (!used_names.insert(n).second)
      throw ExportError("the name '" + n + "' of the scale or zero point of quantized input '" +
                        name + "' is also given to another input");
  ir::Graph& g = graph();
  std::optional<ir::TensorType> vt = type;
  if (vt) vt->dtype = storage;
  ir::Value* value = g.add_input(name, vt);
  ir::Value* scale =
      g.add_input(name + "_scale", ir::TensorType{ir::DType::Double, std::vector<ir::Dim>{}});
  ir::Value* zp =
      g.add_input(name + "_zero_point", ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{}});
  for (int k = 0; k < 3; ++k) input_examples_.push_back(static_cast<int64_t>(example));
  QParams q;
  q.qtype = qtype;
  q.scale =
      emit("Cast", {scale}, {{"to", static_cast<int64_t>(ir::DType::Float)}}, 1, "")->output();
  q.scale->set_type(ir::TensorType{ir::DType::Float, std::vector<ir::Dim>{}});
  q.zero_point = emit("Cast", {zp}, {{"to", static_cast<int64_t>(storage)}}, 1, "")->output();
  q.zero_point->set_type(ir::TensorType{storage, std::vector<ir::Dim>{}});
  qparams_[value] = q;
  bind(in, value);
}

void Converter::add_quantized_output(ir::Value* v, const std::string& name,
                                     std::optional<ir::TensorType> type,
                                     std::set<std::string>& used_names) {
  const QParams* q = qparams(v);
  if (!q)
    throw ExportError("output '" + name +
                      "' is a quantized tensor in LibTorch, but its exported value is not: "
                      "this is a bug in tonnx; please report it with the model");
  if (q->axis)
    throw ExportError("output '" + name +
                      "' is quantized per channel; tonnx exports quantized outputs with one "
                      "scale and zero point (dequantize() it in forward to return floats)");
  QParams params = *q;
  ir::Graph& g = graph();
  if (type) type->dtype = quantized_storage(params.qtype);
  v->set_name(name);
  v->set_type(type);
  g.add_output(v);
  const std::pair<std::string, ir::Value*> extra[] = {{name + "_scale", params.scale},
                                                      {name + "_zero_point", params.zero_point}};
  for (const auto& [n, p] : extra) {
    if (!used_names.insert(n).second)
      throw ExportError("the name '" + n + "' of the scale or zero point of quantized output '" +
                        name + "' is also the name of another input or output");
    ir::Value* out = copy_of(p);
    out->set_name(n);
    out->set_type(p->type());
    g.add_output(out);
  }
}

void Converter::quantized_if_outputs(const jit::Node* n, ir::Node* node,
                                     const std::vector<ir::Value*>& then_outs,
                                     const std::vector<ir::Value*>& else_outs) {
  for (size_t i = 0; i < node->outputs().size() && i < then_outs.size(); ++i) {
    const QParams* a = then_outs[i] ? qparams(then_outs[i]) : nullptr;
    const QParams* b = i < else_outs.size() && else_outs[i] ? qparams(else_outs[i]) : nullptr;
    if (!a && !b) continue;
    // The same scale and zero point values in both branches were made before the If (a value
    // cannot belong to two subgraphs), so the If's result can use them.
    if (!a || !b || a->scale != b->scale || a->zero_point != b->zero_point || a->axis != b->axis)
      fail(n, "output " + std::to_string(i) +
                  " is a quantized tensor whose scale and zero point differ between the branches "
                  "(or one branch's result is not quantized); dequantize() it inside the branches");
    QParams q = *a;
    ir::Value* v = node->output(i);
    ir::TensorType t = v->type() ? *v->type() : ir::TensorType{};
    t.dtype = quantized_storage(q.qtype);
    v->set_type(t);
    qparams_[v] = q;
  }
}

bool Converter::convert_dequantized(const jit::Node* n, const SymbolicFn& fn) {
  const std::string kind = n->kind().toQualString();
  if (kind.rfind("quantized::", 0) == 0 || kind == "aten::dequantize" ||
      kind == "aten::quantize_per_tensor" || kind == "aten::int_repr" || kind == "aten::q_scale" ||
      kind == "aten::q_zero_point")
    return false;
  std::vector<const jit::Value*> tensors, lists;
  for (const jit::Value* in : n->inputs()) {
    if (in->type()->cast<c10::TensorType>() && is_quantized(in)) tensors.push_back(in);
    if (is_tensor_list_type(in->type()) && in->node()->kind() == c10::prim::ListConstruct)
      for (const jit::Value* e : in->node()->inputs())
        if (is_quantized(e)) {
          lists.push_back(in);
          break;
        }
  }
  if (tensors.empty() && lists.empty()) return false;
  const std::string serving = serving_symbolic_name(kind, cfg_.opset);
  auto fixed = fixed_params(serving, at::kQUInt8);
  if (!same_params_ops().count(serving) && !fixed && !unquantized_result(serving))
    fail(n,
         "it takes a quantized tensor, and tonnx knows the quantized result of this op only "
         "for views, clamps, pooling, nearest upsampling, sigmoid, tanh and comparisons: "
         "call dequantize() before it, or register a symbolic for it that reads its input "
         "with g.dequantize(i)");

  // The integer values (and their parameters) before the scope that rebinds them to floats.
  std::vector<ir::Value*> qvalues;
  for (const jit::Value* in : tensors) qvalues.push_back(tensor_of(in));
  std::vector<std::vector<ir::Value*>> qlists;
  for (const jit::Value* in : lists) qlists.push_back(tensor_list_of(in));
  std::optional<QParams> first;
  for (ir::Value* v : qvalues)
    if (!first && qparams(v)) first = *qparams(v);
  for (const auto& l : qlists)
    for (ir::Value* v : l)
      if (!first && qparams(v)) first = *qparams(v);
  if (!first) fail(n, "internal: a quantized input without its scale and zero point");
  if (first->axis)
    fail(n,
         "its input is quantized per channel; tonnx follows per-tensor quantized activations "
         "only (dequantize() before this op)");

  // With `unit` (a scale of 1), values are dequantized to q - zero_point and quantized back
  // with scale 1; the result keeps the input's real scale.
  ir::Value* unit = averages(serving) ? constant(at::scalar_tensor(1.0, at::kFloat)) : nullptr;
  Outputs outs = [&]() -> Outputs {
    // Inside this scope the quantized inputs are bound to their floats.
    struct Scope {
      Converter& c;
      explicit Scope(Converter& conv) : c(conv) {
        c.env_.emplace_back();
        c.lists_.emplace_back();
      }
      ~Scope() {
        c.env_.pop_back();
        c.lists_.pop_back();
      }
    } scope(*this);
    for (size_t k = 0; k < tensors.size(); ++k) bind(tensors[k], dequantized(qvalues[k], unit));
    for (size_t k = 0; k < lists.size(); ++k) {
      std::vector<ir::Value*> floats;
      for (ir::Value* v : qlists[k]) floats.push_back(dequantized(v));
      lists_.back()[lists[k]] = floats;
    }
    return call_symbolic(n, fn);
  }();
  if (!unquantized_result(serving)) {
    for (size_t k = 0; k < n->outputs().size() && k < outs.values.size(); ++k) {
      const jit::Value* jo = n->output(k);
      if (!outs.values[k] || !jo->type()->cast<c10::TensorType>()) continue;
      auto st = jo->type()->cast<c10::TensorType>()->scalarType();
      if (st && !c10::isQIntType(*st)) continue;  // a float or integer result stays one
      QParams q = *first;
      if (st) q.qtype = *st;
      if (auto f = fixed_params(serving, q.qtype)) {
        at::ScalarType storage = c10::toUnderlying(q.qtype);
        q.scale = constant(at::scalar_tensor(f->first, at::kFloat));
        q.zero_point = constant(at::scalar_tensor(f->second, storage));
      }
      if (unit) {
        QParams scaled = q;
        q.scale = unit;
        outs.values[k] = quantized(outs.values[k], q);
        qparams_[outs.values[k]] = scaled;
        continue;
      }
      outs.values[k] = quantized(outs.values[k], q);
    }
  }
  bind_outputs(n, outs);
  return true;
}

}  // namespace tonnx::detail
