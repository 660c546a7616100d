// Quantized tensors (LibTorch's eager-mode quantization: torch.ao.quantization.convert, the
// nn.quantized modules, torch.ops.quantized): quantize_per_tensor, dequantize and the
// quantized:: ops, as DequantizeLinear, the float op and QuantizeLinear with the output scale
// and zero point the op names. Weights stay integers in the model (per channel from opset 13).
// The converter carries each quantized value's scale and zero point (converter_quant.cpp) and
// runs views, clamps and pooling on quantized tensors through their float symbolics.
#include <ATen/core/function.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// The quantized type of output 0 (LibTorch's quantized ops keep their input's).
at::ScalarType out_qtype(SymbolicContext& g) {
  auto tt = g.node()->output(0)->type()->cast<c10::TensorType>();
  if (tt && tt->scalarType() && c10::isQIntType(*tt->scalarType())) return *tt->scalarType();
  return at::kQUInt8;
}

// The output scale and zero point at inputs (si, si + 1).
Value* quantize_out(SymbolicContext& g, Value* y, size_t si) {
  return g.quantize(y, g.f(si), g.i(si + 1), out_qtype(g));
}

// Input i: the packed weights of a quantized layer (a C++ class object).
c10::IValue packed(SymbolicContext& g, size_t i) {
  auto iv = torch::jit::toIValue(g.node()->input(i));
  if (!iv || !iv->isObject())
    g.fail("input " + std::to_string(i) + " (" + g.arg_name(i) +
           ") must be the layer's packed weights, known at export (read from the module), but "
           "is computed in forward");
  return *iv;
}

c10::IValue call_method(SymbolicContext& g, const c10::IValue& obj, const std::string& name) {
  torch::jit::Function* m = obj.toObjectRef().type()->findMethod(name);
  if (!m)
    g.fail("the packed weights (" + obj.toObjectRef().type()->repr_str() + ") have no " + name +
           "() to read them with");
  torch::jit::Stack stack{obj};
  m->run(stack);
  if (stack.empty()) g.fail("the packed weights' " + name + "() returned nothing");
  return stack.back();
}

// (weight, bias or null) of packed linear or convolution weights.
std::pair<at::Tensor, std::optional<at::Tensor>> unpack(SymbolicContext& g,
                                                        const c10::IValue& obj) {
  c10::IValue wb = call_method(g, obj, "unpack");
  const auto& elems = wb.toTupleRef().elements();
  std::optional<at::Tensor> bias;
  if (elems.size() > 1 && elems[1].isTensor() && elems[1].toTensor().defined())
    bias = elems[1].toTensor();
  return {elems.at(0).toTensor(), bias};
}

// ONNX Runtime (1.30) quantizes the float bias of a Gemm or Conv that reads a
// DequantizeLinear (fusing a following Add of the bias into it first) with a Round node, which
// opset 10 lacks, and then fails to load the model. Below opset 11 the bias is therefore
// subtracted negated after the op (y - (-b) is y + b exactly), which no fusion takes.
bool separate_bias(SymbolicContext& g) { return g.opset() < 11; }
Value* add_bias(SymbolicContext& g, Value* y, const at::Tensor& b) {
  return g.op("Sub", {y, g.constant(-b)});
}

// quantized::linear(X, W_prepack, Y_scale_i, Y_zero_point_i) (and linear_relu).
Outputs linear(SymbolicContext& g, bool relu) {
  auto [w, b] = unpack(g, packed(g, 1));
  Value* x = g.dequantize(0);
  Value* wf = g.dequantize_constant(w);
  Value* y = nullptr;
  if (g.rank(0) == 2 && !separate_bias(g)) {
    std::vector<Value*> in{x, wf};
    if (b) in.push_back(g.constant(*b));
    y = g.op("Gemm", in, {{"transB", int64_t{1}}});
  } else {
    y = g.op("MatMul", {x, g.op("Transpose", {wf}, {{"perm", ir::Ints{1, 0}}})});
    if (b) y = separate_bias(g) ? add_bias(g, y, *b) : g.op("Add", {y, g.constant(*b)});
  }
  if (relu) y = g.op("Relu", {y});
  return quantize_out(g, y, 2);
}

TONNX_SYMBOLIC("quantized::linear", 10, [](SymbolicContext& g) { return linear(g, false); });
TONNX_SYMBOLIC("quantized::linear_relu", 10, [](SymbolicContext& g) { return linear(g, true); });

// quantized::conv2d / conv3d(qx, packed_weight, output_scale, output_zero_point) (.new, and the
// _relu variants): the layer's strides, pads, dilations and groups are in the packed weights.
Outputs conv(SymbolicContext& g, bool relu) {
  if (g.num_inputs() != 4)
    g.fail(
        "this overload (weights not packed) is deprecated in LibTorch; tonnx exports the "
        "packed one that nn.quantized.Conv modules call");
  c10::IValue obj = packed(g, 1);
  if (call_method(g, obj, "transpose").toBool())
    g.fail("transposed quantized convolution is not supported");
  auto [w, b] = unpack(g, obj);
  if (w.dim() < 3)
    g.fail("the packed weight has " + std::to_string(w.dim()) +
           " dims; a convolution's has at least 3 (out, in, kernel...)");
  std::vector<int64_t> pads = call_method(g, obj, "padding").toIntVector();
  std::vector<int64_t> both = pads;
  both.insert(both.end(), pads.begin(), pads.end());
  std::vector<Value*> in{g.dequantize(0), g.dequantize_constant(w)};
  if (b && !separate_bias(g)) in.push_back(g.constant(*b));
  std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
  Value* y = g.op("Conv", in,
                  {{"strides", ir::Ints(call_method(g, obj, "stride").toIntVector())},
                   {"pads", ir::Ints(both)},
                   {"dilations", ir::Ints(call_method(g, obj, "dilation").toIntVector())},
                   {"group", call_method(g, obj, "groups").toInt()},
                   {"kernel_shape", ir::Ints(kernel)}});
  if (b && separate_bias(g)) {
    std::vector<int64_t> shape(w.dim() - 1, 1);  // [C, 1, 1...] against [N, C, H, W...]
    shape[0] = -1;
    y = add_bias(g, y, b->reshape(shape));
  }
  if (relu) y = g.op("Relu", {y});
  return quantize_out(g, y, 2);
}

TONNX_SYMBOLIC("quantized::conv2d", 10, [](SymbolicContext& g) { return conv(g, false); });
TONNX_SYMBOLIC("quantized::conv2d_relu", 10, [](SymbolicContext& g) { return conv(g, true); });
TONNX_SYMBOLIC("quantized::conv3d", 10, [](SymbolicContext& g) { return conv(g, false); });
TONNX_SYMBOLIC("quantized::conv3d_relu", 10, [](SymbolicContext& g) { return conv(g, true); });

// quantized::add / mul(qa, qb, scale, zero_point): two quantized tensors.
Outputs binary_q(SymbolicContext& g, const std::string& op, bool relu) {
  if (g.num_inputs() != 4 || g.arg_type(1) != "Tensor")
    g.fail(
        "only the overload of two quantized tensors with an output scale and zero point "
        "is supported");
  Value* y = g.op(op, {g.dequantize(0), g.dequantize(1)});
  if (relu) y = g.op("Relu", {y});
  return quantize_out(g, y, 2);
}

TONNX_SYMBOLIC("quantized::add", 10, [](SymbolicContext& g) { return binary_q(g, "Add", false); });
TONNX_SYMBOLIC("quantized::add_relu", 10,
               [](SymbolicContext& g) { return binary_q(g, "Add", true); });
TONNX_SYMBOLIC("quantized::mul", 10, [](SymbolicContext& g) { return binary_q(g, "Mul", false); });

// quantized::cat(qx[], dim, scale, zero_point).
TONNX_SYMBOLIC("quantized::cat", 10, [](SymbolicContext& g) -> Outputs {
  if (g.is_none(2) || g.is_none(3)) g.fail("quantized::cat without an output scale and zero point");
  std::vector<Value*> parts;
  for (Value* v : g.inputs_list(0)) parts.push_back(g.dequantize_value(v));
  if (parts.empty()) g.fail("concatenation of an empty list");
  int64_t rank = parts[0]->type() && parts[0]->type()->shape
                     ? static_cast<int64_t>(parts[0]->type()->shape->size())
                     : -1;
  int64_t dim = g.i(1);
  if (dim < 0) {
    if (rank < 0) g.fail("a negative dim with inputs of unknown rank");
    dim += rank;
  }
  return quantize_out(g, g.op("Concat", parts, {{"axis", dim}}), 2);
});

// quantized::hardswish / sigmoid(qx, output_scale, output_zero_point).
TONNX_SYMBOLIC("quantized::hardswish", 10, [](SymbolicContext& g) -> Outputs {
  Value* x = g.dequantize(0);
  Value* y = g.opset() >= 14
                 ? g.op("HardSwish", {x})
                 : g.op("Mul", {x, g.op("HardSigmoid", {x}, {{"alpha", 1.0 / 6}, {"beta", 0.5}})});
  return quantize_out(g, y, 1);
});
TONNX_SYMBOLIC("quantized::sigmoid", 10, [](SymbolicContext& g) -> Outputs {
  return quantize_out(g, g.op("Sigmoid", {g.dequantize(0)}), 1);
});

// quantized::leaky_relu(qx, negative_slope, inplace, output_scale, output_zero_point).
TONNX_SYMBOLIC("quantized::leaky_relu", 10, [](SymbolicContext& g) -> Outputs {
  return quantize_out(g, g.op("LeakyRelu", {g.dequantize(0)}, {{"alpha", g.f(1)}}), 3);
});

// (x - mean) / sqrt(var + eps) over `axes` (biased variance, as LibTorch's norms).
Value* normalize(SymbolicContext& g, Value* x, const std::vector<int64_t>& axes, double eps) {
  Value* mean = reduce(g, "ReduceMean", x, axes, true);
  Value* d = g.op("Sub", {x, mean});
  Value* var = reduce(g, "ReduceMean", g.op("Mul", {d, d}), axes, true);
  Value* denom = g.op("Sqrt", {g.op("Add", {var, g.constant_scalar(eps, at::kFloat)})});
  return g.op("Div", {d, denom});
}

// y * weight + bias, weight and bias ([C] or normalized_shape) shaped by `axes_to_add`.
Value* affine(SymbolicContext& g, Value* y, size_t wi, const std::vector<int64_t>& axes_to_add) {
  auto as_param = [&](size_t i) {
    Value* p = g.cast(g.input(i), at::kFloat);
    return axes_to_add.empty() ? p : unsqueeze(g, p, axes_to_add);
  };
  if (!g.is_none(wi)) y = g.op("Mul", {y, as_param(wi)});
  if (!g.is_none(wi + 1)) y = g.op("Add", {y, as_param(wi + 1)});
  return y;
}

// quantized::layer_norm(input, normalized_shape, weight, bias, eps, output_scale,
// output_zero_point).
TONNX_SYMBOLIC("quantized::layer_norm", 10, [](SymbolicContext& g) -> Outputs {
  int64_t n = static_cast<int64_t>(g.ints(1).size());
  std::vector<int64_t> axes;
  for (int64_t k = -n; k < 0; ++k) axes.push_back(k);
  Value* y = normalize(g, g.dequantize(0), axes, g.f(4));
  return quantize_out(g, affine(g, y, 2, {}), 5);
});

// Trailing axes 1..rank-2 for a per-channel [C] parameter of an [N, C, ...] input.
std::vector<int64_t> channel_axes(SymbolicContext& g) {
  std::vector<int64_t> axes;
  for (int64_t k = 1; k < g.rank(0) - 1; ++k) axes.push_back(k);
  return axes;
}

// quantized::group_norm(input, num_groups, weight, bias, eps, output_scale,
// output_zero_point): statistics over [N, G, C/G * spatial].
TONNX_SYMBOLIC("quantized::group_norm", 10, [](SymbolicContext& g) -> Outputs {
  Value* x = g.dequantize(0);
  Value* grouped = g.op("Reshape", {x, g.constant_ints({0, g.i(1), -1})});
  Value* y = normalize(g, grouped, {2}, g.f(4));
  y = g.op("Reshape", {y, g.op("Shape", {x})});
  return quantize_out(g, affine(g, y, 2, channel_axes(g)), 5);
});

// quantized::instance_norm(input, weight, bias, eps, output_scale, output_zero_point).
TONNX_SYMBOLIC("quantized::instance_norm", 10, [](SymbolicContext& g) -> Outputs {
  std::vector<int64_t> axes;
  for (int64_t k = 2; k < g.rank(0); ++k) axes.push_back(k);
  Value* y = normalize(g, g.dequantize(0), axes, g.f(3));
  return quantize_out(g, affine(g, y, 1, channel_axes(g)), 4);
});

// quantize_per_tensor(self, scale, zero_point, dtype): scale and zero point numbers (known at
// export or computed), or tensors of one element (.tensor_qparams).
TONNX_SYMBOLIC("aten::quantize_per_tensor", 10, [](SymbolicContext& g) -> Outputs {
  if (g.arg_type(0) != "Tensor") g.fail("quantizing a list of tensors is not supported");
  auto qtype = static_cast<at::ScalarType>(g.i(3));
  Value* x = g.cast(g.input(0), at::kFloat);
  if (g.is_constant(1) && g.is_constant(2) && g.arg_type(1) == "float")
    return g.quantize(x, g.f(1), g.i(2), qtype);
  // Computed at run time (scripted QuantStub: float(self.scale) of a buffer), or tensors.
  if (!c10::isQIntType(qtype) || qtype == at::kQInt32)
    g.fail(std::string("quantizing to ") + c10::toString(qtype) +
           " (QuantizeLinear makes quint8 or qint8)");
  Value* scalar = g.constant(at::zeros({0}, at::kLong));
  Value* scale = g.op("Reshape", {g.cast(g.input(1), at::kFloat), scalar});
  at::ScalarType storage = c10::toUnderlying(qtype);
  Value* zp = g.op("Reshape", {g.cast(g.input(2), storage), scalar});
  zp->set_type(ir::TensorType{ir::dtype_from_scalar_type(storage), std::vector<ir::Dim>{}});
  return g.quantize(x, scale, zp);
});

// dequantize(self): the floats a quantized tensor stands for (a float tensor as it is).
TONNX_SYMBOLIC("aten::dequantize", 10, [](SymbolicContext& g) -> Outputs {
  if (g.arg_type(0) != "Tensor") g.fail("dequantizing a list of tensors is not supported");
  if (!g.is_quantized(0)) return g.input(0);
  return g.dequantize(0);
});

// int_repr(self): the integer values, a plain tensor from here on.
TONNX_SYMBOLIC("aten::int_repr", 10, [](SymbolicContext& g) -> Outputs {
  if (!g.is_quantized(0)) g.fail("int_repr of a tensor that is not quantized");
  return g.op("Identity", {g.input(0)});
});

}  // namespace
}  // namespace tonnx::sym
