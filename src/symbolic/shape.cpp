// Shape ops: flatten, view, reshape, squeeze/unsqueeze, cat, select, size, the *_like
// creation ops, identities (clone, contiguous, detach), and the scalar plumbing of traces.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

Outputs reshape(SymbolicContext& g, Value* x) {
  Value* shape = g.cast(g.input(1), at::kLong);
  return g.op("Reshape", {x, shape});
}
TONNX_SYMBOLIC("aten::view", 9, [](SymbolicContext& g, Value* x, Value*) { return reshape(g, x); });
TONNX_SYMBOLIC("aten::reshape", 9,
               [](SymbolicContext& g, Value* x, Value*) { return reshape(g, x); });
TONNX_SYMBOLIC("aten::_reshape_alias", 9,
               [](SymbolicContext& g) { return reshape(g, g.input(0)); });

// flatten(self, start_dim, end_dim)
TONNX_SYMBOLIC(
    "aten::flatten", 9, [](SymbolicContext& g, Value* x, int64_t start, int64_t end) -> Outputs {
      int64_t rank = g.rank(0);
      if (rank == 0) return unsqueeze(g, x, {0});
      start = norm_dim(g, start, rank);
      end = norm_dim(g, end, rank);
      if (start > end)
        g.fail("flatten: start_dim " + std::to_string(start) + " comes after end_dim " +
               std::to_string(end));
      if (start == end) return g.op("Identity", {x});
      // ONNX Flatten makes a matrix [prod(:axis), prod(axis:)]: exact when end is the last dim
      // and start is 1 (or 0, with a reshape to 1-D).
      if (end == rank - 1 && start == 1) return g.op("Flatten", {x}, {{"axis", int64_t{1}}});
      // Static sizes: the output's. (Sizes that depend on data are unknown without dynamic
      // axes: a review found an unknown one read as 0, Reshape's "copy this dim".)
      auto out = g.output_type();
      bool known = !g.dynamic_shapes() && out && out->shape;
      if (known)
        for (const auto& d : *out->shape) known = known && d.value.has_value();
      if (known) {
        std::vector<int64_t> sizes;
        for (const auto& d : *out->shape) sizes.push_back(*d.value);
        return g.op("Reshape", {x, g.constant_ints(sizes)});
      }
      // Otherwise: shape[:start] ++ [-1] ++ shape[end+1:]
      Value* shp = g.op("Shape", {x});
      std::vector<Value*> parts;
      if (start > 0)
        parts.push_back(g.op("Slice", {shp, g.constant_ints({0}), g.constant_ints({start})}));
      parts.push_back(g.constant_ints({-1}));
      if (end < rank - 1)
        parts.push_back(g.op("Slice", {shp, g.constant_ints({end + 1}), g.constant_ints({rank})}));
      Value* target = parts.size() == 1 ? parts[0] : g.op("Concat", parts, {{"axis", int64_t{0}}});
      return g.op("Reshape", {x, target});
    });

// cat(tensors, dim): every input converted to the result's type; a list that changes at run
// time (an ONNX sequence) through ConcatFromSequence.
TONNX_SYMBOLIC("aten::cat", 9, [](SymbolicContext& g) -> Outputs {
  int64_t dim = g.i(1);
  at::ScalarType dt = g.output_scalar_type();
  auto out = g.output_type();
  int64_t rank = out && out->shape ? static_cast<int64_t>(out->shape->size()) : 0;
  int64_t axis = rank ? norm_dim(g, dim, rank) : dim;
  if (g.is_sequence(0)) return from_sequence(g, g.sequence(0), axis, false, dt);
  std::vector<Value*> inputs;
  for (Value* x : g.inputs_list(0)) inputs.push_back(g.cast(x, dt));
  return g.op("Concat", inputs, {{"axis", axis}});
});

// Scalars in traces are 0-d tensors already.
TONNX_SYMBOLIC("prim::NumToTensor", 9, [](SymbolicContext&, Value* x) { return x; });
TONNX_SYMBOLIC("aten::Int", 9, [](SymbolicContext& g, Value* x) { return g.cast(x, at::kLong); });
TONNX_SYMBOLIC("aten::Float", 9,
               [](SymbolicContext& g, Value* x) { return g.cast(x, at::kFloat); });
TONNX_SYMBOLIC("aten::ScalarImplicit", 9, [](SymbolicContext&, Value* x) { return x; });
TONNX_SYMBOLIC("aten::detach", 9, [](SymbolicContext&, Value* x) { return x; });
TONNX_SYMBOLIC("aten::contiguous", 9, [](SymbolicContext& g) { return g.input(0); });
TONNX_SYMBOLIC("aten::clone", 9, [](SymbolicContext& g) { return g.input(0); });

// _shape_as_tensor(self): the shape as a 1-D int64 tensor (torchvision's detection models).
TONNX_SYMBOLIC("aten::_shape_as_tensor", 9,
               [](SymbolicContext& g, Value* x) { return g.op("Shape", {x}); });

// meshgrid(tensors, indexing="ij"): each 1-D input reshaped to lie along its own dim and
// expanded to the grid; "xy" swaps the first two dims of the grid.
TONNX_SYMBOLIC("aten::meshgrid", 9, [](SymbolicContext& g) -> Outputs {
  std::vector<Value*> xs = g.inputs_list(0);
  std::string indexing = g.num_inputs() > 1 && !g.is_none(1) ? g.s(1) : "ij";
  if (indexing != "ij" && indexing != "xy")
    g.fail("indexing '" + indexing + "' is not 'ij' or 'xy'");
  const int64_t n = static_cast<int64_t>(xs.size());
  bool swap = indexing == "xy" && n >= 2;
  std::vector<Value*> flat, lens;
  for (Value* x : xs) {
    Value* f = g.op("Reshape", {x, g.constant_ints({-1})});
    flat.push_back(f);
    lens.push_back(g.op("Shape", {f}));
  }
  if (swap) std::swap(lens[0], lens[1]);
  Value* grid = g.op("Concat", lens, {{"axis", int64_t{0}}});
  std::vector<Value*> outs;
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = swap && i < 2 ? 1 - i : i;
    std::vector<int64_t> shape(n, 1);
    shape[at] = -1;
    outs.push_back(g.op("Expand", {g.op("Reshape", {flat[i], g.constant_ints(shape)}), grid}));
  }
  return outs;
});

// numel(self) -> int: ONNX Size, a 0-d int64 tensor.
TONNX_SYMBOLIC("aten::numel", 9, [](SymbolicContext& g, Value* x) { return g.op("Size", {x}); });

// size(self, dim) -> int, as a 0-d int64 tensor.
TONNX_SYMBOLIC("aten::size", 9, [](SymbolicContext& g) -> Outputs {
  Value* shp = shape_of(g, 0);
  if (g.num_inputs() == 1) return shp;
  if (!g.is_constant(1)) {  // x.size(i) in a loop over dims: i + rank where negative
    Value* d = g.cast(g.input(1), at::kLong);
    Value* zero = g.constant_scalar(0, at::kLong);
    d = g.op("Where", {g.op("Less", {d, zero}), g.op("Add", {d, g.op("Size", {shp})}), d});
    return g.op("Gather", {shp, d}, {{"axis", int64_t{0}}});
  }
  int64_t dim = arg_dim(g, 0, g.i(1));
  return g.op("Gather", {shp, g.constant(at::scalar_tensor(dim, at::kLong))},
              {{"axis", int64_t{0}}});
});

// select(self, dim, index): Gather with a scalar index drops the dim.
TONNX_SYMBOLIC("aten::select", 9, [](SymbolicContext& g, Value* x, int64_t dim, Value* index) {
  int64_t d = arg_dim(g, 0, dim);
  return g.op("Gather", {x, g.cast(index, at::kLong)}, {{"axis", d}});
});

// unsqueeze(self, dim): dim may equal rank (append a trailing axis). A dim computed at run
// time is Unsqueeze's axes input (opset 13), whose negative values count from the output's
// end, as torch's do.
TONNX_SYMBOLIC("aten::unsqueeze", 9, [](SymbolicContext& g, Value* x, RuntimeInt dim) -> Outputs {
  if (dim.is_constant()) {
    int64_t d = *dim.constant;
    return unsqueeze(g, x, {d < 0 ? d + g.rank(0) + 1 : d});
  }
  if (g.opset() < 13) g.unsupported_below(13, "unsqueeze at a dim computed at run time");
  // (axes made 1-D by Unsqueeze: ONNX Runtime 1.30 rewrites a Reshape feeding Unsqueeze's axes
  // into a node of the wrong type)
  return g.op("Unsqueeze", {x, unsqueeze(g, dim.value, {0})});
});

// squeeze(self[, dim]): only dims of size 1 are removed; a dim of another size is a no-op. A dim
// whose size varies reaches the converter's If form instead (converter_rank.cpp); the refusal
// below guards a size the converter did not see as unknown.
TONNX_SYMBOLIC("aten::squeeze", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  int64_t rank = g.rank(0);
  const std::vector<ir::Dim> shape = *g.type(0)->shape;
  auto size_of = [&](int64_t d) {
    if (!shape[d].value)
      g.fail("squeeze of dim " + std::to_string(d) +
             ", whose size varies (it follows a dynamic axis or the data): the result's rank "
             "would depend on it; squeeze a dim of fixed size, or index it (x[0]) instead");
    return *shape[d].value;
  };
  std::vector<int64_t> axes;
  if (g.num_inputs() == 1) {
    for (int64_t i = 0; i < rank; ++i)
      if (size_of(i) == 1) axes.push_back(i);
  } else {
    for (int64_t d : g.ints(1)) {
      d = norm_dim(g, d, rank);
      if (size_of(d) == 1) axes.push_back(d);
    }
  }
  if (axes.empty()) return g.op("Identity", {x});
  return squeeze(g, x, axes);
});

// Creation ops shaped like an input: a constant expanded to the input's shape.
Value* filled_like(SymbolicContext& g, Value* value, at::ScalarType dt) {
  return g.op("Expand", {g.cast(value, dt), shape_of(g, 0)});
}
TONNX_SYMBOLIC("aten::empty_like", 9, [](SymbolicContext& g) {
  at::ScalarType dt = g.output_scalar_type();
  return filled_like(g, g.constant_scalar(0, dt), dt);
});
TONNX_SYMBOLIC("aten::zeros_like", 9, [](SymbolicContext& g) {
  at::ScalarType dt = g.output_scalar_type();
  return filled_like(g, g.constant_scalar(0, dt), dt);
});
TONNX_SYMBOLIC("aten::ones_like", 9, [](SymbolicContext& g) {
  at::ScalarType dt = g.output_scalar_type();
  return filled_like(g, g.constant_scalar(1, dt), dt);
});
TONNX_SYMBOLIC("aten::full_like", 9, [](SymbolicContext& g) {
  at::ScalarType dt = g.output_scalar_type();
  return filled_like(g, input_as(g, 1, dt), dt);
});
// fill_(self, value): the trace rewires later uses of self to this output; fill is its
// functional form (torch.fill).
Outputs fill(SymbolicContext& g) {
  at::ScalarType dt = g.scalar_type(0);
  return filled_like(g, input_as(g, 1, dt), dt);
}
TONNX_SYMBOLIC("aten::fill_", 9, fill);
TONNX_SYMBOLIC("aten::fill", 9, fill);

}  // namespace
}  // namespace tonnx::sym
