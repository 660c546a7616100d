// Lists changed in place in scripted code: append, l[i] = x, and the functional twins the
// exporter gives insert, del l[i], pop and clear (src/export/list_mutations.cpp). Each returns
// the list's new contents. A list of tensors known while converting stays a list of values
// (with constant indices); one that changes at run time, or is indexed at run time, is an
// ONNX sequence (SequenceInsert / SequenceErase). An int[] / float[] / bool[] is a 1-D
// tensor, changed with Concat, Slice and ScatterElements.
//
// Python's indices: l[i] = x and del l[i] take i in [-n, n-1] (the model raises otherwise);
// insert clamps i to [0, n] after adding n to a negative one.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// The dtype of an int[] / float[] / bool[] input as a 1-D tensor.
at::ScalarType number_list_dtype(SymbolicContext& g, size_t i) {
  auto lt = g.node()->input(i)->type()->cast<c10::ListType>();
  c10::TypeKind e = lt ? lt->getElementType()->kind() : c10::TypeKind::IntType;
  return e == c10::TypeKind::FloatType  ? at::kFloat
         : e == c10::TypeKind::BoolType ? at::kBool
                                        : at::kLong;
}

Value* as_one_element(SymbolicContext& g, Value* x, at::ScalarType dt) {
  return g.op("Reshape", {g.cast(x, dt), g.constant_ints({1})});
}

// i + n where i < 0.
Value* from_end(SymbolicContext& g, Value* i, Value* n) {
  Value* zero = g.constant_scalar(0, at::kLong);
  return g.op("Where", {g.op("Less", {i, zero}), g.op("Add", {i, n}), i});
}

// insert's position: i + n where negative, then clamped to [0, n].
Value* insert_position(SymbolicContext& g, Value* i, Value* n) {
  Value* zero = g.constant_scalar(0, at::kLong);
  Value* p = from_end(g, i, n);
  p = g.op("Where", {g.op("Less", {p, zero}), zero, p});
  return g.op("Where", {g.op("Greater", {p, n}), n, p});
}

// A constant index of a list of n values checked as Python checks it.
int64_t constant_index(SymbolicContext& g, int64_t i, int64_t n, const char* what) {
  if (i < -n || i >= n)
    g.fail(std::string(what) + " index " + std::to_string(i) + " is out of range for a list of " +
           std::to_string(n));
  return i < 0 ? i + n : i;
}

Value* index_input(SymbolicContext& g, size_t i) {
  return g.op("Reshape", {g.cast(g.input(i), at::kLong), g.constant(at::empty({0}, at::kLong))});
}

// l[lo:hi] of a 1-D tensor, bounds 0-d int64 values (hi may be null: to the end).
Value* slice_1d(SymbolicContext& g, Value* l, Value* lo, Value* hi) {
  Value* one = g.constant_ints({1});
  Value* end = hi ? g.op("Reshape", {hi, one}) : g.constant_ints({kInt64Max});
  return g.op("Slice", {l, g.op("Reshape", {lo, one}), end});
}

void need_opset_10(SymbolicContext& g, const char* what) {
  if (g.opset() < 10) g.unsupported_below(10, what);
}

// l.append(x)
TONNX_SYMBOLIC("aten::append", 9, [](SymbolicContext& g) -> Outputs {
  if (is_tensor_list(g, 0)) {
    if (g.is_sequence(0)) return g.sequence_op("SequenceInsert", {g.sequence(0), g.input(1)});
    std::vector<Value*> items = g.inputs_list(0);
    items.push_back(g.input(1));
    return items;
  }
  at::ScalarType dt = number_list_dtype(g, 0);
  return g.op("Concat", {g.cast(g.input(0), dt), as_one_element(g, g.input(1), dt)},
              {{"axis", int64_t{0}}});
});

// l[i] = x
TONNX_SYMBOLIC("aten::_set_item", 9, [](SymbolicContext& g) -> Outputs {
  if (is_tensor_list(g, 0)) {
    if (!g.is_sequence(0) && g.is_constant(1)) {
      std::vector<Value*> items = g.inputs_list(0);
      items[constant_index(g, g.i(1), static_cast<int64_t>(items.size()), "l[i] = x:")] =
          g.input(2);
      return items;
    }
    Value* seq = g.sequence(0);
    Value* i = from_end(g, index_input(g, 1), g.op("SequenceLength", {seq}));
    Value* erased = g.sequence_op("SequenceErase", {seq, i});
    return g.sequence_op("SequenceInsert", {erased, g.input(2), i});
  }
  if (g.opset() < 11) g.unsupported_below(11, "l[i] = x on a list of numbers");
  at::ScalarType dt = number_list_dtype(g, 0);
  return g.op("ScatterElements",
              {g.cast(g.input(0), dt), g.op("Reshape", {index_input(g, 1), g.constant_ints({1})}),
               as_one_element(g, g.input(2), dt)},
              {{"axis", int64_t{0}}});
});

// l.insert(i, x)
TONNX_SYMBOLIC("tonnx::list_insert", 9, [](SymbolicContext& g) -> Outputs {
  if (is_tensor_list(g, 0)) {
    if (!g.is_sequence(0) && g.is_constant(1)) {
      std::vector<Value*> items = g.inputs_list(0);
      int64_t n = static_cast<int64_t>(items.size()), i = g.i(1);
      if (i < 0) i += n;
      i = std::clamp<int64_t>(i, 0, n);
      items.insert(items.begin() + i, g.input(2));
      return items;
    }
    Value* seq = g.sequence(0);
    Value* p = insert_position(g, index_input(g, 1), g.op("SequenceLength", {seq}));
    return g.sequence_op("SequenceInsert", {seq, g.input(2), p});
  }
  need_opset_10(g, "insert into a list of numbers");
  at::ScalarType dt = number_list_dtype(g, 0);
  Value* l = g.cast(g.input(0), dt);
  Value* p = insert_position(g, index_input(g, 1), g.op("Size", {l}));
  Value* zero = g.constant_scalar(0, at::kLong);
  return g.op(
      "Concat",
      {slice_1d(g, l, zero, p), as_one_element(g, g.input(2), dt), slice_1d(g, l, p, nullptr)},
      {{"axis", int64_t{0}}});
});

// del l[i] (and the list after l.pop(i))
TONNX_SYMBOLIC("tonnx::list_delete", 9, [](SymbolicContext& g) -> Outputs {
  if (is_tensor_list(g, 0)) {
    if (!g.is_sequence(0) && g.is_constant(1)) {
      std::vector<Value*> items = g.inputs_list(0);
      int64_t i = constant_index(g, g.i(1), static_cast<int64_t>(items.size()), "del l[i]/pop:");
      items.erase(items.begin() + i);
      return items;
    }
    return g.sequence_op("SequenceErase", {g.sequence(0), index_input(g, 1)});
  }
  need_opset_10(g, "deleting from a list of numbers");
  at::ScalarType dt = number_list_dtype(g, 0);
  Value* l = g.cast(g.input(0), dt);
  Value* i = from_end(g, index_input(g, 1), g.op("Size", {l}));
  Value* next = g.op("Add", {i, g.constant_scalar(1, at::kLong)});
  return g.op("Concat",
              {slice_1d(g, l, g.constant_scalar(0, at::kLong), i), slice_1d(g, l, next, nullptr)},
              {{"axis", int64_t{0}}});
});

// l.clear()
TONNX_SYMBOLIC("tonnx::list_clear", 9, [](SymbolicContext& g) -> Outputs {
  if (is_tensor_list(g, 0)) {
    if (!g.is_sequence(0)) return std::vector<Value*>{};
    Value* seq = g.sequence(0);
    return g.sequence_op("SequenceEmpty", {},
                         {{"dtype", static_cast<int64_t>(seq->sequence_elem()->dtype)}});
  }
  return g.constant(at::empty({0}, number_list_dtype(g, 0)));
});

}  // namespace
}  // namespace tonnx::sym
