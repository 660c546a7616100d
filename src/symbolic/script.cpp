// Scalars and lists of scripted (TorchScript) graphs: bool/int conversions of 0-d tensors,
// list indexing and length, min/max of ints, any/all. Scripted graphs compute Python ints,
// floats and bools; tonnx carries them as 0-d tensors (int64, float, bool).
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

Value* scalar_shape(SymbolicContext& g) { return g.constant(at::empty({0}, at::kLong)); }

// bool(t): t has one element; If and Loop want a 0-d bool.
TONNX_SYMBOLIC("aten::Bool", 9, [](SymbolicContext& g, Value* x) {
  return g.op("Reshape", {g.cast(x, at::kBool), scalar_shape(g)});
});

TONNX_SYMBOLIC("aten::__not__", 9,
               [](SymbolicContext& g, Value* x) { return g.op("Not", {g.cast(x, at::kBool)}); });

// any(x) / all(x) over every element, or any(x, dim, keepdim) / all(x, dim, keepdim): counts
// of true (any) or false (all) elements, so an empty reduction gives torch's False / True.
Outputs reduce_bool(SymbolicContext& g, bool any) {
  Value* b = g.cast(g.input(0), at::kBool);
  if (!any) b = g.op("Not", {b});
  Value* as_int = g.cast(b, at::kInt);
  std::optional<std::vector<int64_t>> axes;
  bool keep = false;
  if (g.num_inputs() == 3) {
    axes = std::vector<int64_t>{arg_dim(g, 0, g.i(1))};
    keep = g.b(2);
  } else if (g.num_inputs() != 1) {
    g.fail("any/all with " + std::to_string(g.num_inputs()) + " arguments is not supported");
  }
  Value* count = reduce(g, "ReduceSum", as_int, axes, keep);
  Value* zero = g.constant_scalar(0, at::kInt);
  Value* r = any ? g.op("Greater", {count, zero}) : g.op("Equal", {count, zero});
  return g.cast(r, g.output_scalar_type());  // uint8 for uint8 inputs, as LibTorch gives
}
TONNX_SYMBOLIC("aten::any", 9, [](SymbolicContext& g) { return reduce_bool(g, true); });
TONNX_SYMBOLIC("aten::all", 9, [](SymbolicContext& g) { return reduce_bool(g, false); });

// IntImplicit(t): a 0-d tensor used where TorchScript wants an int: the value as int64.
TONNX_SYMBOLIC("aten::IntImplicit", 9, [](SymbolicContext& g, Value* x) {
  return g.op("Reshape", {g.cast(x, at::kLong), scalar_shape(g)});
});

TONNX_SYMBOLIC("aten::dim", 9, [](SymbolicContext& g, Value*) {
  return g.constant(at::scalar_tensor(g.rank(0), at::kLong));
});

// len(x): a tensor's first size, or the length of a list.
TONNX_SYMBOLIC("aten::len", 9, [](SymbolicContext& g) -> Outputs {
  if (g.arg_type(0) == "Tensor") {
    Value* shape = shape_of(g, 0);
    return g.op("Gather", {shape, g.constant(at::scalar_tensor(0, at::kLong))},
                {{"axis", int64_t{0}}});
  }
  auto lt = g.node()->input(0)->type()->cast<c10::ListType>();
  if (g.is_sequence(0)) return g.op("SequenceLength", {g.sequence(0)});
  if (lt && lt->getElementType()->cast<c10::TensorType>())  // Tensor[] / List[Tensor]
    return g.constant(at::scalar_tensor(static_cast<int64_t>(g.inputs_list(0).size()), at::kLong));
  // int[] / float[]: a 1-D tensor (constant or computed, e.g. x.size()).
  Value* list = g.input(0);
  Value* shape = g.op("Shape", {list});
  return g.op("Gather", {shape, g.constant(at::scalar_tensor(0, at::kLong))},
              {{"axis", int64_t{0}}});
});

// list[i]: a Tensor[] with a constant index picks the element, with a computed one (a loop
// over the list) takes it from an ONNX sequence (opset 11); an int[]/float[] (a 1-D tensor
// here, e.g. x.size()) is gathered, so the index may be computed.
TONNX_SYMBOLIC("aten::__getitem__", 9, [](SymbolicContext& g) -> Outputs {
  auto lt = g.node()->input(0)->type()->cast<c10::ListType>();
  if (g.is_sequence(0)) return g.op("SequenceAt", {g.sequence(0), g.cast(g.input(1), at::kLong)});
  if (lt && lt->getElementType()->cast<c10::TensorType>()) {  // Tensor[] / List[Tensor]
    std::vector<Value*> items = g.inputs_list(0);
    if (!g.is_constant(1)) {
      if (g.opset() < 11) g.unsupported_below(11, "indexing a list of tensors at run time");
      if (items.empty()) g.fail("indexing an empty list of tensors");
      Value* seq = g.op("SequenceConstruct", items);
      return g.op("SequenceAt", {seq, g.cast(g.input(1), at::kLong)});
    }
    int64_t i = g.i(1);
    int64_t n = static_cast<int64_t>(items.size());
    if (i < -n || i >= n)
      g.fail("index " + std::to_string(i) + " is out of range for a list of " + std::to_string(n) +
             " tensors");
    return items[i < 0 ? i + n : i];
  }
  Value* list = g.input(0);
  Value* index = g.cast(g.input(1), at::kLong);
  return g.op("Gather", {list, index}, {{"axis", int64_t{0}}});
});

// min(a, b) / max(a, b) of ints or floats; min(list) / max(list) of an int[].
Outputs min_max(SymbolicContext& g, const char* op, const char* reduce_op) {
  at::ScalarType dt = g.output_scalar_type();
  if (g.num_inputs() == 1) return reduce(g, reduce_op, g.cast(g.input(0), dt), std::nullopt, false);
  return g.op(op, {input_as(g, 0, dt), input_as(g, 1, dt)});
}
TONNX_SYMBOLIC("prim::min", 9, [](SymbolicContext& g) { return min_max(g, "Min", "ReduceMin"); });
TONNX_SYMBOLIC("prim::max", 9, [](SymbolicContext& g) { return min_max(g, "Max", "ReduceMax"); });

// Type refinements of scripted code carry the value through.
TONNX_SYMBOLIC("prim::unchecked_cast", 9, [](SymbolicContext&, Value* x) { return x; });

// `x is None` / `x is not None` against a None constant: tonnx exports values that exist,
// so the answer is known while converting (a value that is None on some path is not
// supported, see docs/torchscript.md).
Outputs is_none_test(SymbolicContext& g, bool negate) {
  // One value on both sides (`query is key` in self-attention, once an if that did not depend on
  // data made them the same value) is itself.
  if (g.node()->input(0) == g.node()->input(1))
    return g.constant(at::scalar_tensor(!negate, at::kBool));
  if (!g.is_none(1) && !g.is_none(0))
    g.fail("`is` between two values that are not None is not supported");
  bool none = g.is_none(0) && g.is_none(1) ? true : false;
  return g.constant(at::scalar_tensor(negate ? !none : none, at::kBool));
}
TONNX_SYMBOLIC("aten::__is__", 9, [](SymbolicContext& g) { return is_none_test(g, false); });
TONNX_SYMBOLIC("aten::__isnot__", 9, [](SymbolicContext& g) { return is_none_test(g, true); });

// for i in range(start, stop, step) in scripted code: the loop runs __range_length(start,
// stop, step) times, and __derive_index(k, start, step) = start + k * step is i.
TONNX_SYMBOLIC("aten::__range_length", 9, [](SymbolicContext& g) -> Outputs {
  Value* lo = input_as(g, 0, at::kLong);
  Value* hi = input_as(g, 1, at::kLong);
  Value* step = input_as(g, 2, at::kLong);
  if (g.is_constant(2) && g.i(2) == 0) g.fail("range() step must not be zero");
  // ceil((hi - lo) / step), at least 0, in exact integer arithmetic: for step > 0
  // (hi - lo + step - 1) / step, for step < 0 (lo - hi - step - 1) / -step; Div of positive
  // numerators truncates, which is floor there.
  Value *zero = g.constant_scalar(0, at::kLong), *one = g.constant_scalar(1, at::kLong);
  Value* pos = g.op("Greater", {step, zero});
  Value* dist = g.op("Where", {pos, g.op("Sub", {hi, lo}), g.op("Sub", {lo, hi})});
  Value* mag = g.op("Abs", {step});
  Value* num = g.op("Sub", {g.op("Add", {dist, mag}), one});
  num = g.op("Where", {g.op("Less", {num, zero}), zero, num});  // Max takes int64 from 12
  return g.op("Div", {num, mag});
});
TONNX_SYMBOLIC("aten::__derive_index", 9, [](SymbolicContext& g) -> Outputs {
  return g.op("Add", {input_as(g, 1, at::kLong),
                      g.op("Mul", {input_as(g, 0, at::kLong), input_as(g, 2, at::kLong)})});
});

// warnings.warn(...) in scripted code (F.kl_div's reduction='mean'): nothing to export.
TONNX_SYMBOLIC("aten::warn", 9, [](SymbolicContext&) -> Outputs { return std::vector<Value*>{}; });

// list(l): a copy of a list; lists are values in ONNX, so the same list.
TONNX_SYMBOLIC("aten::list", 9, [](SymbolicContext& g) -> Outputs {
  if (g.is_sequence(0)) return g.sequence(0);
  if (is_tensor_list(g, 0)) return g.inputs_list(0);
  return g.op("Identity", {g.input(0)});
});

}  // namespace
}  // namespace tonnx::sym
