// Ops torch.onnx 1.13 exports that ONNX has no single op for, composed from several:
// one_hot, cross, broadcast_tensors, index_fill/index_copy/index_add, masked_select,
// masked_scatter, take, diagonal, einsum, tensordot, eye, the _cast_* family and shifts.
#include <ATen/ExpandUtils.h>

#include <cmath>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// Indices into a dim of size n (a 1-element tensor): negative ones counted from the end.
Value* wrap_index(SymbolicContext& g, Value* index, Value* n) {
  Value* zero = g.constant_scalar(0, at::kLong);
  Value* negative = g.op("Less", {index, zero});
  return g.op("Where", {negative, g.op("Add", {index, n}), index});
}

// one_hot(self, num_classes=-1): int64 [..., C]; C = max(self) + 1 when num_classes is -1.
TONNX_SYMBOLIC("aten::one_hot", 9, [](SymbolicContext& g, Value* x, RuntimeInt n) -> Outputs {
  Value* depth;
  int64_t classes = n.is_constant() ? *n.constant : 0;
  if (!n.is_constant()) {  // num_classes computed at run time
    depth = g.op("Reshape", {g.cast(n.value, at::kLong), g.constant_ints({1})});
  } else if (classes >= 0) {
    depth = g.constant_ints({classes});
  } else {
    Value* top = reduce(g, "ReduceMax", x, std::nullopt, false);
    depth = g.op("Add", {g.op("Reshape", {top, g.constant_ints({1})}), g.constant_ints({1})});
  }
  Value* values = g.constant(at::tensor(std::vector<int64_t>{0, 1}, at::kLong));
  return g.op("OneHot", {x, depth, values}, {{"axis", int64_t{-1}}});
});

// cross(self, other, dim=None) and linalg_cross(self, other, dim=-1): with a = self and
// b = other rotated along dim, a[1]b[2] - a[2]b[1], a[2]b[0] - a[0]b[2], a[0]b[1] - a[1]b[0].
Outputs cross(SymbolicContext& g, bool linalg) {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  int64_t rank = std::max(g.rank(0), g.rank(1));
  int64_t dim = -1;
  if (!linalg && g.is_none(2)) {
    // The deprecated default: the first dim of size 3 of the broadcast shape.
    std::vector<int64_t> shape = at::infer_size(g.sizes(0), g.sizes(1));
    auto it = std::find(shape.begin(), shape.end(), 3);
    if (it == shape.end()) g.fail("no dim of size 3 for cross without a dim");
    dim = it - shape.begin();
  } else {
    dim = norm_dim(g, g.i(2), rank);
  }
  auto rot = [&](Value* v, std::vector<int64_t> order) {
    return g.op("Gather", {v, g.constant_ints(order)}, {{"axis", dim - rank}});
  };
  Value* l = g.op("Mul", {rot(a, {1, 2, 0}), rot(b, {2, 0, 1})});
  Value* r = g.op("Mul", {rot(a, {2, 0, 1}), rot(b, {1, 2, 0})});
  return g.op("Sub", {l, r});
}
TONNX_SYMBOLIC("aten::cross", 9, [](SymbolicContext& g) { return cross(g, false); });
TONNX_SYMBOLIC("aten::linalg_cross", 9, [](SymbolicContext& g) { return cross(g, true); });

// broadcast_tensors(tensors): each expanded to the common shape.
TONNX_SYMBOLIC("aten::broadcast_tensors", 9, [](SymbolicContext& g) -> Outputs {
  std::vector<Value*> xs = g.inputs_list(0);
  if (xs.empty()) return std::vector<Value*>{};
  Value* shape = g.op("Shape", {xs[0]});
  for (size_t k = 1; k < xs.size(); ++k) {
    Value* ones =
        g.op("ConstantOfShape", {g.op("Shape", {xs[k]})}, {{"value", at::ones({1}, at::kByte)}});
    shape = g.op("Shape", {g.op("Expand", {ones, shape})});
  }
  std::vector<Value*> out;
  for (Value* x : xs) {
    out.push_back(g.op("Expand", {x, shape}));
    // Each keeps its dtype: a scripted list of them becomes a sequence of that dtype.
    if (x->type()) out.back()->set_type(ir::TensorType{x->type()->dtype, std::nullopt});
  }
  return out;
});

// The index of index_* reshaped to broadcast along `dim` of a rank-r tensor: [1,..,k,..,1].
Value* index_along(SymbolicContext& g, Value* index, int64_t dim, int64_t rank) {
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(dim)] = -1;
  return g.op("Reshape", {index, g.constant_ints(shape)});
}

// index_fill(self, dim, index, value): self where the positions along dim named by index are
// value. A mask over the dim (any index equal to the position) selects them.
TONNX_SYMBOLIC("aten::index_fill", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.scalar_type(0);
  int64_t rank = g.rank(0);
  int64_t dim = rank == 0 ? 0 : norm_dim(g, g.i(1), rank);
  Value* n = rank == 0 ? g.constant_ints({1}) : dim_size(g, 0, dim);
  Value* index =
      wrap_index(g, g.op("Reshape", {g.cast(g.input(2), at::kLong), g.constant_ints({-1})}), n);
  Value* positions;
  auto known = g.type(0);
  if (rank == 0 || (known && known->shape && (*known->shape)[dim].value)) {
    int64_t size = rank == 0 ? 1 : *(*known->shape)[dim].value;
    positions = g.constant(at::arange(size, at::kLong));
  } else {
    if (g.opset() < 11) g.unsupported_below(11, "index_fill of a dim whose size varies (Range)");
    positions = g.op("Range", {g.constant_scalar(0, at::kLong), squeeze(g, n, {0}),
                               g.constant_scalar(1, at::kLong)});
  }
  Value* hits = g.op("Equal", {unsqueeze(g, positions, {1}), unsqueeze(g, index, {0})});  // [n, k]
  // Any hit per position: a sum, which is 0 (no hit) over an empty index too.
  Value* count = reduce(g, "ReduceSum", g.cast(hits, at::kInt), std::vector<int64_t>{1}, false);
  Value* mask = g.op("Greater", {count, g.constant_scalar(0, at::kInt)});
  if (rank > 0) mask = index_along(g, mask, dim, rank);
  return g.op("Where", {mask, input_as(g, 3, dt), g.input(0)});
});

// index_copy(self, dim, index, source) and index_add(self, dim, index, source, alpha):
// ScatterElements along dim with the index expanded to source's shape (add: reduction, 16).
Outputs index_scatter(SymbolicContext& g, bool add) {
  if (g.opset() < 11)
    g.unsupported_below(11, add ? "index_add (OneHot, or ScatterElements with reduction)"
                                : "index_copy (ScatterElements)");
  at::ScalarType dt = g.scalar_type(0);
  int64_t rank = g.rank(0);
  if (rank == 0) g.fail("index_copy/index_add of a 0-d tensor is not supported");
  int64_t dim = norm_dim(g, g.i(1), rank);
  Value* n = dim_size(g, 0, dim);
  Value* index =
      wrap_index(g, g.op("Reshape", {g.cast(g.input(2), at::kLong), g.constant_ints({-1})}), n);
  Value* source = input_as(g, 3, dt);
  if (add && g.num_inputs() > 4 && !g.is_none(4) && g.f(4) != 1.0)
    source = g.op("Mul", {source, g.constant_scalar(g.f(4), dt)});
  int64_t srank = g.rank(3);
  if (srank > rank) g.fail("source has more dims than self");
  if (dim >= srank)
    g.fail("source has " + std::to_string(srank) + " dims, so it has no dim " +
           std::to_string(dim) + " to take slices along");
  // torch adds (copies) each source slice (source.select(dim, i)) into a self slice with
  // broadcasting: the slice's dims align with self's from the right, and a size 1 reaches every
  // position of self there. A source of fewer dims gets leading dims of size 1, and its dim
  // moves back to position `dim`; then it is expanded to self's shape with dim's size replaced
  // by the index's length.
  if (srank < rank) {
    std::vector<int64_t> front;
    for (int64_t k = 0; k < rank - srank; ++k) front.push_back(k);
    source = unsqueeze(g, source, front);
    int64_t from = dim + rank - srank;
    std::vector<int64_t> perm;
    for (int64_t k = 0; k < rank; ++k)
      if (k != from) perm.push_back(k);
    perm.insert(perm.begin() + dim, from);
    if (from != dim) source = g.op("Transpose", {source}, {{"perm", ir::Ints(perm)}});
  }
  Value* shape = g.op("Shape", {g.input(0)});
  std::vector<Value*> parts;
  if (dim > 0)
    parts.push_back(g.op("Slice", {shape, g.constant_ints({0}), g.constant_ints({dim})}));
  parts.push_back(g.op("Shape", {index}));
  if (dim + 1 < rank)
    parts.push_back(g.op("Slice", {shape, g.constant_ints({dim + 1}), g.constant_ints({rank})}));
  Value* target = g.op("Concat", parts, {{"axis", int64_t{0}}});
  source = g.op("Expand", {source, target});
  Value* idx = g.op("Expand", {index_along(g, index, dim, rank), target});
  if (add && g.opset() < 16) return scatter_add_onehot(g, g.input(0), idx, source, dim, rank, dt);
  if (add)
    return g.op("ScatterElements", {g.input(0), idx, source},
                {{"axis", dim}, {"reduction", std::string("add")}});
  return g.op("ScatterElements", {g.input(0), idx, source}, {{"axis", dim}});
}
TONNX_SYMBOLIC("aten::index_copy", 11, [](SymbolicContext& g) { return index_scatter(g, false); });
TONNX_SYMBOLIC("aten::index_add", 11, [](SymbolicContext& g) { return index_scatter(g, true); });

// The positions of a mask broadcast with self: [N, rank] for GatherND / ScatterND, and self
// broadcast to the common shape.
std::pair<Value*, Value*> mask_positions(SymbolicContext& g) {
  Value* x = g.op("Where", {g.input(1), g.input(0), g.input(0)});  // self, broadcast
  Value* mask = g.op("Expand", {g.input(1), g.op("Shape", {x})});
  Value* where = g.op("Transpose", {g.op("NonZero", {mask})}, {{"perm", ir::Ints{1, 0}}});
  return {x, where};
}

// masked_select(self, mask): the elements where mask is true, row-major, as a 1-D tensor.
TONNX_SYMBOLIC("aten::masked_select", 11, [](SymbolicContext& g) -> Outputs {
  auto [x, where] = mask_positions(g);
  return g.op("GatherND", {x, where});
});

// masked_scatter(self, mask, source): the positions where mask is true, in row-major order,
// take source's first elements in order.
TONNX_SYMBOLIC("aten::masked_scatter", 11, [](SymbolicContext& g) -> Outputs {
  auto [x, where] = mask_positions(g);
  Value* count =
      g.op("Slice", {g.op("Shape", {where}), g.constant_ints({0}), g.constant_ints({1})});
  Value* flat = g.op("Reshape", {input_as(g, 2, g.scalar_type(0)), g.constant_ints({-1})});
  Value* updates = g.op("Slice", {flat, g.constant_ints({0}), count, g.constant_ints({0})});
  return g.op("ScatterND", {x, where, updates});
});

// take(self, index): self flattened, gathered (negative indices from the end).
TONNX_SYMBOLIC("aten::take", 9, [](SymbolicContext& g, Value* x, Value* index) -> Outputs {
  return g.op("Gather", {g.op("Reshape", {x, g.constant_ints({-1})}), index},
              {{"axis", int64_t{0}}});
});

// diagonal(self, offset=0, dim1=0, dim2=1): the diagonal moved to the last dim. dim1 and
// dim2 go last, are flattened, and the diagonal's flat positions are gathered.
TONNX_SYMBOLIC("aten::diagonal", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  int64_t offset = g.i(1);
  int64_t d1 = norm_dim(g, g.i(2), rank), d2 = norm_dim(g, g.i(3), rank);
  if (d1 == d2) g.fail("dim1 and dim2 must differ, both are " + std::to_string(d1));
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != d1 && d != d2) perm.push_back(d);
  auto t0 = g.type(0);
  bool known = !g.dynamic_shapes();
  for (const ir::Dim& dm : *t0->shape) known = known && dm.value.has_value();
  if (!known) {
    // Sizes that vary: the flat positions i * (n2 + 1) + offset for i in [max(0, -offset),
    // min(n1, n2 - offset)), from Range at run time.
    if (g.opset() < 11) g.unsupported_below(11, "diagonal of a tensor whose sizes vary (Range)");
    perm.push_back(d1);
    perm.push_back(d2);
    Value* t = g.op("Transpose", {g.input(0)}, {{"perm", perm}});
    Value* shape = g.op("Shape", {t});
    auto at_index = [&](int64_t k) {
      return g.op("Gather", {shape, g.constant(at::scalar_tensor(k, at::kLong))},
                  {{"axis", int64_t{0}}});
    };
    Value* n1 = at_index(rank - 2);
    Value* n2 = at_index(rank - 1);
    Value* lead = g.op(
        "Slice", {shape, g.constant_ints({0}), g.constant_ints({rank - 2}), g.constant_ints({0})});
    Value* flat_shape =
        g.op("Concat", {lead, unsqueeze(g, g.op("Mul", {n1, n2}), {0})}, {{"axis", int64_t{0}}});
    Value* flat = g.op("Reshape", {t, flat_shape});
    Value* off = g.constant(at::scalar_tensor(offset, at::kLong));
    Value* begin = g.constant(at::scalar_tensor(std::max<int64_t>(0, -offset), at::kLong));
    auto less_of = [&](Value* a, Value* b) {  // Min/Max take int64 only from opset 12
      return g.op("Where", {g.op("Less", {a, b}), a, b});
    };
    Value* end = less_of(n1, g.op("Sub", {n2, off}));
    end = g.op("Where", {g.op("Less", {end, begin}), begin, end});
    Value* i = g.op("Range", {begin, end, g.constant(at::scalar_tensor(int64_t{1}, at::kLong))});
    Value* one = g.constant(at::scalar_tensor(int64_t{1}, at::kLong));
    Value* pos = g.op("Add", {g.op("Mul", {i, g.op("Add", {n2, one})}), off});
    return g.op("Gather", {flat, pos}, {{"axis", int64_t{-1}}});
  }
  std::vector<int64_t> sizes = g.sizes(0);
  std::vector<int64_t> lead(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) lead[k] = sizes[static_cast<size_t>(perm[k])];
  perm.push_back(d1);
  perm.push_back(d2);
  int64_t n1 = sizes[static_cast<size_t>(d1)], n2 = sizes[static_cast<size_t>(d2)];
  std::vector<int64_t> pos;
  for (int64_t i = std::max<int64_t>(0, -offset); i < n1 && i + offset < n2; ++i)
    pos.push_back(i * n2 + i + offset);
  std::vector<int64_t> flat_shape = lead;
  flat_shape.push_back(n1 * n2);
  Value* t = g.op("Transpose", {g.input(0)}, {{"perm", perm}});
  Value* flat = g.op("Reshape", {t, g.constant_ints(flat_shape)});
  return g.op("Gather", {flat, g.constant_ints(pos)}, {{"axis", int64_t{-1}}});
});

// einsum(equation, tensors, path=None): ONNX's Einsum (opset 12), same notation.
TONNX_SYMBOLIC("aten::einsum", 12, [](SymbolicContext& g) -> Outputs {
  std::string eq = g.s(0);
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  std::vector<Value*> xs = g.inputs_list(1);
  at::ScalarType dt = g.output_scalar_type();
  // Einsum has no bool type: a bool result (a permutation or a diagonal) goes through int32.
  at::ScalarType work = dt == at::kBool ? at::kInt : dt;
  for (Value*& x : xs) x = g.cast(x, work);
  return g.cast(g.op("Einsum", xs, {{"equation", eq}}), dt);
});

// tensordot(a, b, dims_a, dims_b): an Einsum over the contracted dims.
TONNX_SYMBOLIC("aten::tensordot", 12, [](SymbolicContext& g) -> Outputs {
  int64_t ra = g.rank(0), rb = g.rank(1);
  std::vector<int64_t> da = g.ints(2), db = g.ints(3);
  if (da.size() != db.size())
    g.fail("dims_a has " + std::to_string(da.size()) + " dims but dims_b has " +
           std::to_string(db.size()));
  if (ra + rb > 52) g.fail("tensordot of more than 52 dims in all");
  auto letter = [](int64_t k) { return static_cast<char>(k < 26 ? 'a' + k : 'A' + k - 26); };
  std::string a(static_cast<size_t>(ra), ' '), b(static_cast<size_t>(rb), ' ');
  for (int64_t k = 0; k < ra; ++k) a[static_cast<size_t>(k)] = letter(k);
  for (int64_t k = 0; k < rb; ++k) b[static_cast<size_t>(k)] = letter(ra + k);
  std::vector<bool> contracted_a(static_cast<size_t>(ra)), contracted_b(static_cast<size_t>(rb));
  for (size_t k = 0; k < da.size(); ++k) {
    int64_t x = norm_dim(g, da[k], ra), y = norm_dim(g, db[k], rb);
    b[static_cast<size_t>(y)] = a[static_cast<size_t>(x)];
    contracted_a[static_cast<size_t>(x)] = contracted_b[static_cast<size_t>(y)] = true;
  }
  std::string out;
  for (int64_t k = 0; k < ra; ++k)
    if (!contracted_a[static_cast<size_t>(k)]) out += a[static_cast<size_t>(k)];
  for (int64_t k = 0; k < rb; ++k)
    if (!contracted_b[static_cast<size_t>(k)]) out += b[static_cast<size_t>(k)];
  at::ScalarType dt = g.output_scalar_type();
  return g.op("Einsum", {input_as(g, 0, dt), input_as(g, 1, dt)},
              {{"equation", a + "," + b + "->" + out}});
});

// eye(n, [m,] dtype, ...): a constant, or EyeLike of a [n, m] tensor for sizes computed at
// run time.
TONNX_SYMBOLIC("aten::eye", 9, [](SymbolicContext& g) -> Outputs {
  bool has_m = g.num_inputs() > 5;
  at::ScalarType dt = g.output_scalar_type();
  if (g.is_constant(0) && (!has_m || g.is_constant(1))) {
    int64_t n = g.i(0), m = has_m ? g.i(1) : n;
    return g.constant(at::eye(n, m, at::TensorOptions().dtype(dt)));
  }
  auto size = [&](size_t i) {
    return g.op("Reshape", {g.cast(g.input(i), at::kLong), g.constant_ints({1})});
  };
  Value* n = size(0);
  Value* shape = g.op("Concat", {n, has_m ? size(1) : n}, {{"axis", int64_t{0}}});
  Value* zeros = g.op("ConstantOfShape", {shape}, {{"value", at::zeros({1}, dt)}});
  return g.op("EyeLike", {zeros});
});

// _dim_arange(like, dim): arange(like.size(dim)), int64.
TONNX_SYMBOLIC("aten::_dim_arange", 9, [](SymbolicContext& g, Value*, int64_t d) -> Outputs {
  int64_t dim = arg_dim(g, 0, d);
  auto t = g.type(0);
  if (t && t->shape && (*t->shape)[dim].value && !g.dynamic_shapes())
    return g.constant(at::arange(*(*t->shape)[dim].value, at::kLong));
  if (g.opset() < 11) g.unsupported_below(11, "_dim_arange of a dim whose size varies (Range)");
  return g.op("Range", {g.constant_scalar(0, at::kLong), squeeze(g, dim_size(g, 0, dim), {0}),
                        g.constant_scalar(1, at::kLong)});
});

// _cast_Float(self, non_blocking) and the rest of the family: Cast.
template <at::ScalarType T>
Outputs cast_to(SymbolicContext& g) {
  Value* y = g.cast(g.input(0), T);
  return y == g.input(0) ? g.op("Identity", {y}) : y;
}
TONNX_SYMBOLIC("aten::_cast_Byte", 9, cast_to<at::kByte>);
TONNX_SYMBOLIC("aten::_cast_Char", 9, cast_to<at::kChar>);
TONNX_SYMBOLIC("aten::_cast_Short", 9, cast_to<at::kShort>);
TONNX_SYMBOLIC("aten::_cast_Int", 9, cast_to<at::kInt>);
TONNX_SYMBOLIC("aten::_cast_Long", 9, cast_to<at::kLong>);
TONNX_SYMBOLIC("aten::_cast_Half", 9, cast_to<at::kHalf>);
TONNX_SYMBOLIC("aten::_cast_Float", 9, cast_to<at::kFloat>);
TONNX_SYMBOLIC("aten::_cast_Double", 9, cast_to<at::kDouble>);

// x << y and x >> y on integers (torch.onnx registers them as aten::__lshift_ / __rshift_,
// names no trace has). uint8: BitShift. Other integers: times / floor-divided by 2^y, so a
// negative x shifts right arithmetically as in torch (torch.onnx's Div truncates).
Outputs bit_shift(SymbolicContext& g, bool left) {
  at::ScalarType dt = g.output_scalar_type();
  if (dt == at::kByte) {
    if (g.opset() < 11) g.unsupported_below(11, "shifts (BitShift)");
    return g.op("BitShift", {input_as(g, 0, dt), input_as(g, 1, dt)},
                {{"direction", std::string(left ? "LEFT" : "RIGHT")}});
  }
  if (!at::isIntegralType(dt, false))
    g.fail("shifts of " + std::string(c10::toString(dt)) + " tensors are not supported");
  Value* x = input_as(g, 0, dt);
  Value* p;
  // 2^y in double (exact up to 2^62), cast back: Pow takes integer bases from opset 12 only.
  Value* y = g.cast(g.input(1), at::kDouble);
  p = g.cast(g.op("Pow", {g.constant_scalar(2.0, at::kDouble), y}), dt);
  if (left) return g.op("Mul", {x, p});
  Value* rem = g.op("Mod", {x, p}, {{"fmod", int64_t{0}}});  // sign of p: floor division
  return g.op("Div", {g.op("Sub", {x, rem}), p});
}
TONNX_SYMBOLIC("aten::__lshift__", 9, [](SymbolicContext& g) { return bit_shift(g, true); });
TONNX_SYMBOLIC("aten::__rshift__", 9, [](SymbolicContext& g) { return bit_shift(g, false); });

// repeat_interleave(self, repeats, dim=None, output_size=None): repeats an int, a 1-element
// or a per-element tensor. Known repeats and size: one Gather with constant indices. Repeats
// computed at run time (opset 11): element k covers output positions [cum[k-1], cum[k]), so
// position j takes the element whose count of cum <= j it is.
TONNX_SYMBOLIC("aten::repeat_interleave", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  int64_t dim = 0;
  if (g.num_inputs() > 2 && !g.is_none(2)) {
    dim = norm_dim(g, g.i(2), g.rank(0));
  } else {
    x = g.op("Reshape", {x, g.constant_ints({-1})});
  }
  auto t = g.type(0);
  std::optional<int64_t> n;
  if (g.is_none(2) || g.num_inputs() <= 2) {
    if (t && t->shape) {
      int64_t total = 1;
      bool known = true;
      for (const auto& d : *t->shape) {
        known = known && d.value.has_value();
        if (d.value) total *= *d.value;
      }
      if (known) n = total;
    }
  } else if (t && t->shape && (*t->shape)[dim].value) {
    n = *(*t->shape)[dim].value;
  }
  std::optional<at::Tensor> reps;
  if (g.arg_type(1) == "int")
    reps = at::scalar_tensor(g.i(1), at::kLong);
  else if (auto c = g.constant_tensor(1))
    reps = c->to(at::kLong).reshape({-1});
  if (reps && n && !g.dynamic_shapes()) {
    at::Tensor r = reps->numel() == 1 ? reps->reshape({}).expand({*n}) : *reps;
    if (r.numel() != *n)
      g.fail("repeats has " + std::to_string(r.numel()) + " elements for a dim of size " +
             std::to_string(*n));
    if ((r < 0).any().item<bool>()) g.fail("repeats must not be negative");
    at::Tensor idx = at::repeat_interleave(at::arange(*n, at::kLong), r);
    return g.op("Gather", {x, g.constant(idx)}, {{"axis", dim}});
  }
  if (g.opset() < 11)
    g.unsupported_below(11, "repeat_interleave with repeats computed at run time");
  Value* size =
      g.op("Gather", {g.op("Shape", {x}), g.constant_ints({dim})}, {{"axis", int64_t{0}}});
  Value* r = g.op("Expand",
                  {g.op("Reshape", {g.cast(g.input(1), at::kLong), g.constant_ints({-1})}), size});
  Value* cum = g.op("CumSum", {r, g.constant_scalar(0, at::kLong)});
  Value* total = reduce(g, "ReduceSum", r, std::nullopt, false);
  Value* j =
      g.op("Range", {g.constant_scalar(0, at::kLong), total, g.constant_scalar(1, at::kLong)});
  Value* past = g.cast(g.op("Not", {g.op("Less", {unsqueeze(g, j, {1}), unsqueeze(g, cum, {0})})}),
                       at::kLong);
  Value* idx = reduce(g, "ReduceSum", past, std::vector<int64_t>{1}, false);
  return g.op("Gather", {x, idx}, {{"axis", dim}});
});

// tensor_split(self, sections | indices, dim): pieces of a dim of known size, as torch cuts
// them (the first size % sections pieces one longer; indices clamped to the size).
TONNX_SYMBOLIC("aten::tensor_split", 9, [](SymbolicContext& g) -> Outputs {
  int64_t dim = norm_dim(g, g.i(2), g.rank(0));
  std::optional<int64_t> known = known_size(g, 0, dim);
  if (!known)  // only the split dim's size matters: the others may vary
    g.fail("tensor_split along dim " + std::to_string(dim) +
           ", whose size varies (a dynamic axis): the pieces' bounds depend on it");
  int64_t n = *known;
  std::optional<int64_t> sections;
  std::vector<int64_t> indices;
  if (g.arg_type(1) == "int") {
    sections = g.i(1);
  } else if (auto c = g.constant_tensor(1)) {  // tensor_indices_or_sections
    at::Tensor v = c->to(at::kLong).reshape({-1});
    if (c->dim() == 0) sections = v[0].item<int64_t>();
    for (int64_t i = 0; c->dim() > 0 && i < v.numel(); ++i) indices.push_back(v[i].item<int64_t>());
  } else {
    indices = g.ints(1);
  }
  std::vector<int64_t> bounds{0};
  if (sections) {
    int64_t k = *sections;
    if (k <= 0) g.fail("sections must be positive, got " + std::to_string(k));
    for (int64_t p = 0; p < k; ++p) bounds.push_back(bounds.back() + n / k + (p < n % k ? 1 : 0));
  } else {
    for (int64_t i : indices) bounds.push_back(std::clamp(i < 0 ? i + n : i, int64_t{0}, n));
    bounds.push_back(n);
  }
  std::vector<Value*> out;
  for (size_t p = 0; p + 1 < bounds.size(); ++p) {
    int64_t b = bounds[p], e = std::max(bounds[p], bounds[p + 1]);
    if (g.opset() < 10)
      out.push_back(
          g.op("Slice", {g.input(0)},
               {{"axes", ir::Ints{dim}}, {"starts", ir::Ints{b}}, {"ends", ir::Ints{e}}}));
    else
      out.push_back(g.op("Slice", {g.input(0), g.constant_ints({b}), g.constant_ints({e}),
                                   g.constant_ints({dim})}));
  }
  return out;
});

// linspace and hann_window with sizes known at export: constants, computed by LibTorch.
// With start or end computed at run time (a known number of steps, a floating result):
// start + i * (end - start) / (steps - 1), computed in double.
TONNX_SYMBOLIC("aten::linspace", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  if (g.is_constant(0) && g.is_constant(1) && g.is_constant(2))
    return g.constant(at::linspace(g.f(0), g.f(1), g.i(2), at::TensorOptions().dtype(dt)));
  if (!at::isFloatingType(dt))
    g.fail("linspace of integers with a start, end or steps computed at run time is not supported");
  if (!g.is_constant(2)) {
    // steps computed at run time (opset 11): i = 0 .. steps - 1 by Range.
    if (g.opset() < 11)
      g.unsupported_below(11, "linspace with a number of steps computed at run time");
    Value* a = input_as(g, 0, at::kDouble);
    Value* b = input_as(g, 1, at::kDouble);
    Value* n = g.cast(g.input(2), at::kDouble);
    Value* one = g.constant_scalar(1, at::kDouble);
    Value* i = g.op("Range", {g.constant_scalar(0, at::kDouble), n, one});
    Value* denom = g.op("Max", {g.op("Sub", {n, one}), one});
    Value* y = g.op("Add", {a, g.op("Mul", {g.op("Div", {i, denom}), g.op("Sub", {b, a})})});
    return g.cast(y, dt);
  }
  int64_t steps = g.i(2);
  if (steps < 0) g.fail("steps must not be negative, got " + std::to_string(steps));
  Value* a = input_as(g, 0, at::kDouble);
  Value* b = input_as(g, 1, at::kDouble);
  at::Tensor i = at::arange(steps, at::kDouble);
  if (steps > 1) i = i / static_cast<double>(steps - 1);
  Value* y = g.op("Add", {a, g.op("Mul", {g.constant(i), g.op("Sub", {b, a})})});
  return g.cast(y, dt);
});
// A length computed at run time (opset 11): 0.5 - 0.5 cos(2 pi n / N), N the length
// (periodic) or the length - 1; a window of length 1 is [1].
TONNX_SYMBOLIC("aten::hann_window", 9, [](SymbolicContext& g) -> Outputs {
  bool periodic = g.num_inputs() > 5 ? g.b(1) : true;
  at::ScalarType dt = g.output_scalar_type();
  if (g.is_constant(0))
    return g.constant(at::hann_window(g.i(0), periodic, at::TensorOptions().dtype(dt)));
  if (g.opset() < 11) g.unsupported_below(11, "hann_window of a length computed at run time");
  Value* len = g.cast(g.input(0), at::kDouble);
  Value* n =
      g.op("Range", {g.constant_scalar(0, at::kDouble), len, g.constant_scalar(1, at::kDouble)});
  Value* denom = periodic ? len : g.op("Sub", {len, g.constant_scalar(1, at::kDouble)});
  denom = g.op("Max", {denom, g.constant_scalar(1, at::kDouble)});
  Value* angle = g.op("Div", {g.op("Mul", {n, g.constant_scalar(2 * M_PI, at::kDouble)}), denom});
  Value* w =
      g.op("Sub", {g.constant_scalar(0.5, at::kDouble),
                   g.op("Mul", {g.constant_scalar(0.5, at::kDouble), g.op("Cos", {angle})})});
  Value* one = g.op("Equal", {len, g.constant_scalar(1, at::kDouble)});
  w = g.op("Where", {one, g.constant_scalar(1, at::kDouble), w});
  return g.cast(w, dt);
});

// rrelu(self, lower, upper, training=False): in eval, leaky_relu with the mean slope.
TONNX_SYMBOLIC("aten::rrelu", 9, [](SymbolicContext& g) -> Outputs {
  if (g.num_inputs() > 3 && g.b(3))
    g.fail("rrelu in training draws random slopes; export in eval mode");
  double lower = g.num_inputs() > 1 ? g.f(1) : 1.0 / 8,
         upper = g.num_inputs() > 2 ? g.f(2) : 1.0 / 3;
  return g.op("LeakyRelu", {g.input(0)}, {{"alpha", static_cast<float>((lower + upper) / 2)}});
});

// linalg_det (Det, opset 11; torch.det traces as it) and logdet: log(det), NaN for a negative
// determinant.
TONNX_SYMBOLIC("aten::linalg_det", 11,
               [](SymbolicContext& g, Value* x) -> Outputs { return g.op("Det", {x}); });
TONNX_SYMBOLIC("aten::logdet", 11, [](SymbolicContext& g, Value* x) -> Outputs {
  return g.op("Log", {g.op("Det", {x})});
});

// pairwise_distance(x1, x2, p=2, eps=1e-6, keepdim=False): ||x1 - x2 + eps||_p over the last dim.
TONNX_SYMBOLIC("aten::pairwise_distance", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  double p = g.f(2), eps = g.f(3);
  bool keep = g.b(4);
  Value* d = g.op(
      "Add", {g.op("Sub", {input_as(g, 0, dt), input_as(g, 1, dt)}), g.constant_scalar(eps, dt)});
  std::vector<int64_t> last{-1};
  if (p == 1) return reduce(g, "ReduceL1", d, last, keep);
  if (p == 2) return reduce(g, "ReduceL2", d, last, keep);
  if (std::isinf(p))
    return reduce(g, p > 0 ? "ReduceMax" : "ReduceMin", g.op("Abs", {d}), last, keep);
  if (p <= 0) g.fail("pairwise_distance with p " + std::to_string(p) + " is not supported");
  Value* pv = g.constant_scalar(p, dt);
  Value* s = reduce(g, "ReduceSum", g.op("Pow", {g.op("Abs", {d}), pv}), last, keep);
  return g.op("Pow", {s, g.constant_scalar(1.0 / p, dt)});
});

// numpy_T (x.T): the dims reversed.
TONNX_SYMBOLIC("aten::numpy_T", 9, [](SymbolicContext& g, Value* x) -> Outputs {
  int64_t rank = g.rank(0);
  if (rank < 2) return g.op("Identity", {x});
  std::vector<int64_t> perm;
  for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  return g.op("Transpose", {x}, {{"perm", perm}});
});

// aminmax(self, dim=None, keepdim=False) -> (min, max).
TONNX_SYMBOLIC("aten::aminmax", 9, [](SymbolicContext& g) -> Outputs {
  std::optional<std::vector<int64_t>> axes;
  if (!g.is_none(1)) axes = std::vector<int64_t>{arg_dim(g, 0, g.i(1))};
  bool keep = g.b(2);
  return {reduce(g, "ReduceMin", g.input(0), axes, keep),
          reduce(g, "ReduceMax", g.input(0), axes, keep)};
});

// cosine_similarity(x1, x2, dim, eps): sum(x1 x2) / sqrt(max(sum(x1^2) sum(x2^2), eps^2)).
TONNX_SYMBOLIC("aten::cosine_similarity", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* a = input_as(g, 0, dt);
  Value* b = input_as(g, 1, dt);
  int64_t dim = norm_dim(g, g.i(2), std::max(g.rank(0), g.rank(1)));
  double eps = g.f(3);
  auto sum = [&](Value* v) { return reduce(g, "ReduceSum", v, std::vector<int64_t>{dim}, false); };
  Value* w12 = sum(g.op("Mul", {a, b}));
  Value* n = g.op("Mul", {sum(g.op("Mul", {a, a})), sum(g.op("Mul", {b, b}))});
  Value* denom = g.op("Sqrt", {g.op("Max", {n, g.constant_scalar(eps * eps, dt)})});
  return g.op("Div", {w12, denom});
});

// x ^ y on bools (ONNX has no bitwise xor of integers before opset 18).
TONNX_SYMBOLIC("aten::__xor__", 9, [](SymbolicContext& g) -> Outputs {
  if (g.output_scalar_type() != at::kBool)
    g.fail("xor of integers needs BitwiseXor (opset 18); only bools are supported");
  return g.op("Xor", {input_as(g, 0, at::kBool), input_as(g, 1, at::kBool)});
});

}  // namespace
}  // namespace tonnx::sym
