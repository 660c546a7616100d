// Helpers shared by the symbolic functions (helpers.h).
#include "symbolic/helpers.h"

#include <torch/csrc/jit/ir/ir.h>

namespace tonnx::sym {

Value* input_as(SymbolicContext& g, size_t i, at::ScalarType dtype) {
  if (g.is_constant(i)) {
    if (auto t = g.constant_tensor(i)) return g.constant(t->to(dtype));
    // Scalars (int, float, bool) take the tensor's type; ints stay exact.
    auto t = g.type(i);
    if (t && t->dtype == ir::DType::Int64)
      return g.constant(at::scalar_tensor(g.i(i), at::kLong).to(dtype));
    return g.constant_scalar(g.f(i), dtype);
  }
  return g.cast(g.input(i), dtype);
}

int64_t norm_dim(SymbolicContext& g, int64_t dim, int64_t rank) {
  if (auto d = ir::normalize_axis(dim, rank)) return *d;
  if (rank == 0 && dim == 0) return 0;  // a scalar's only dim
  g.fail("dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
         std::to_string(rank) + " (expected " + std::to_string(-std::max<int64_t>(rank, 1)) +
         " to " + std::to_string(std::max<int64_t>(rank, 1) - 1) + ")");
}

int64_t arg_dim(SymbolicContext& g, size_t input, int64_t dim) {
  auto t = g.type(input);
  if (dim >= 0 && (!t || !t->shape)) return dim;
  return norm_dim(g, dim, g.rank(input));
}

// Opset 13 moved axes from an attribute to an input.
Value* unsqueeze(SymbolicContext& g, Value* x, const std::vector<int64_t>& axes) {
  if (g.opset() >= 13) return g.op("Unsqueeze", {x, g.constant_ints(axes)});
  return g.op("Unsqueeze", {x}, {{"axes", axes}});
}

Value* squeeze(SymbolicContext& g, Value* x, const std::vector<int64_t>& axes) {
  if (g.opset() >= 13) return g.op("Squeeze", {x, g.constant_ints(axes)});
  return g.op("Squeeze", {x}, {{"axes", axes}});
}

std::optional<at::ScalarType> narrow_int(const Value* x) {
  if (!x->type()) return std::nullopt;
  switch (x->type()->dtype) {
    case ir::DType::Bool:
      return at::kBool;
    case ir::DType::Int8:
      return at::kChar;
    case ir::DType::UInt8:
      return at::kByte;
    case ir::DType::Int16:
      return at::kShort;
    default:
      return std::nullopt;
  }
}

// ReduceSum takes axes as an input from opset 13; the other reductions from 18.
Value* reduce(SymbolicContext& g, const std::string& op, Value* x,
              const std::optional<std::vector<int64_t>>& axes, bool keepdims) {
  if (auto narrow = narrow_int(x)) {  // computed in int32: the same low bits, then cast back
    Value* wide = reduce(g, op, g.cast(x, at::kInt), axes, keepdims);
    return g.cast(wide, *narrow);
  }
  ir::Attr keep{"keepdims", int64_t{keepdims}};
  if (op == "ReduceSum" && g.opset() >= 13) {
    if (!axes) return g.op(op, {x}, {keep});
    return g.op(op, {x, g.constant_ints(*axes)}, {keep});
  }
  if (!axes) return g.op(op, {x}, {keep});
  return g.op(op, {x}, {keep, ir::Attr{"axes", ir::Ints(*axes)}});
}

std::optional<int64_t> known_size(SymbolicContext& g, size_t i, int64_t dim) {
  auto t = g.type(i);
  if (!t || !t->shape || dim < 0 || dim >= static_cast<int64_t>(t->shape->size()))
    return std::nullopt;
  return (*t->shape)[static_cast<size_t>(dim)].value;
}

Value* dim_size(SymbolicContext& g, size_t i, int64_t d) {
  auto t = g.type(i);
  if (t && t->shape && d < static_cast<int64_t>(t->shape->size()) && (*t->shape)[d].value &&
      !g.dynamic_shapes())
    return g.constant_ints({*(*t->shape)[d].value});
  return g.op("Gather", {g.op("Shape", {g.input(i)}), g.constant_ints({d})},
              {{"axis", int64_t{0}}});
}

Value* shape_of(SymbolicContext& g, size_t i) {
  if (!g.dynamic_shapes())
    if (auto t = g.type(i); t && t->shape) {
      std::vector<int64_t> dims;
      for (const auto& d : *t->shape)
        if (d.value) dims.push_back(*d.value);
      if (dims.size() == t->shape->size()) return g.constant_ints(dims);
    }
  return g.op("Shape", {g.input(i)});
}

Value* scatter_add_onehot(SymbolicContext& g, Value* self, Value* index, Value* src, int64_t axis,
                          int64_t rank, at::ScalarType dtype) {
  if (g.opset() < 11)
    g.unsupported_below(11, "adding at repeated indices (OneHot, Pad with its pads as an input)");
  std::vector<int64_t> zeros(static_cast<size_t>(rank), 0), dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  Value* ishape = g.op("Shape", {index});
  src = g.op("Slice", {src, g.constant_ints(zeros), ishape, g.constant_ints(dims)});
  Value* n =
      g.op("Gather", {g.op("Shape", {self}), g.constant_ints({axis})}, {{"axis", int64_t{0}}});
  Value* onehot = g.op("OneHot", {index, n, g.constant_ints({0, 1})}, {{"axis", int64_t{-1}}});
  Value* hit = g.op("Cast", {onehot}, {{"to", static_cast<int64_t>(ir::DType::Bool)}});
  Value* spread = g.op("Where", {hit, unsqueeze(g, src, {rank}), g.constant_scalar(0, dtype)});
  Value* summed = reduce(g, "ReduceSum", spread, std::vector<int64_t>{axis}, true);
  std::vector<int64_t> perm = dims;  // [.., 1 at axis, .., n] -> [.., n at axis, .., 1]
  perm.push_back(rank);
  std::swap(perm[static_cast<size_t>(axis)], perm.back());
  Value* moved = squeeze(g, g.op("Transpose", {summed}, {{"perm", ir::Ints(perm)}}), {rank});
  Value* grow = g.op("Sub", {g.op("Shape", {self}), g.op("Shape", {moved})});
  Value* pads = g.op("Concat", {g.constant_ints(zeros), grow}, {{"axis", int64_t{0}}});
  return g.op("Add", {self, g.op("Pad", {moved, pads})});
}

Value* binary(SymbolicContext& g, const std::string& op, at::ScalarType dtype) {
  return g.op(op, {input_as(g, 0, dtype), input_as(g, 1, dtype)});
}

// Split into pieces of the given sizes along dim (Split takes sizes as an input from 13).
std::vector<Value*> split_sizes(SymbolicContext& g, Value* x, const std::vector<int64_t>& sizes,
                                int64_t dim) {
  if (sizes.size() == 1) return {g.op("Identity", {x})};
  if (g.opset() >= 13)
    return g.op_n("Split", {x, g.constant_ints(sizes)}, {{"axis", dim}}, sizes.size());
  return g.op_n("Split", {x}, {{"axis", dim}, {"split", sizes}}, sizes.size());
}

Value* equal(SymbolicContext& g, Value* a, Value* b, at::ScalarType dtype) {
  if (g.opset() >= 11 || !at::isFloatingType(dtype)) return g.op("Equal", {a, b});
  Value* ordered = g.op("Or", {g.op("Less", {a, b}), g.op("Greater", {a, b})});
  Value* nan = g.op("Or", {g.op("IsNaN", {a}), g.op("IsNaN", {b})});
  return g.op("Not", {g.op("Or", {ordered, nan})});
}

Value* from_sequence(SymbolicContext& g, Value* seq, int64_t axis, bool new_axis,
                     at::ScalarType dtype) {
  Value* r = g.op("ConcatFromSequence", {seq},
                  {{"axis", axis}, {"new_axis", static_cast<int64_t>(new_axis)}});
  if (seq->sequence_elem()) r->set_type(ir::TensorType{seq->sequence_elem()->dtype, std::nullopt});
  return g.cast(r, dtype);
}

bool is_tensor_list(SymbolicContext& g, size_t i) {
  if (i >= g.node()->inputs().size()) return false;
  auto lt = g.node()->input(i)->type()->cast<c10::ListType>();
  if (!lt) return false;
  c10::TypePtr e = lt->getElementType();
  if (auto o = e->cast<c10::OptionalType>()) e = o->getElementType();
  return e->kind() == c10::TypeKind::TensorType;
}

// The length of int[] input i computed at run time: the prim::ListConstruct that builds it.
int64_t computed_list_length(SymbolicContext& g, size_t i) {
  const torch::jit::Node* list = g.node()->input(i)->node();
  if (list->kind() != c10::prim::ListConstruct)
    g.fail("input " + std::to_string(i) + " (" + g.arg_name(i) +
           ") is a list computed at run time that is not built in the graph; its length is "
           "unknown");
  return static_cast<int64_t>(list->inputs().size());
}

}  // namespace tonnx::sym
