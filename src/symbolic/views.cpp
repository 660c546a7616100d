// Writes into views, made functional by export/functionalize.cpp: copy_ and zero_ (the new
// contents of the view), slice_scatter and select_scatter (the view's contents written back
// into its base). Positions may be computed at run time.
#include <limits>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// copy_(self, src, non_blocking): src in self's dtype, broadcast to self's shape.
TONNX_SYMBOLIC("aten::copy_", 9, [](SymbolicContext& g) -> Outputs {
  Value* src = input_as(g, 1, g.scalar_type(0));
  return g.op("Expand", {src, shape_of(g, 0)});
});

// zero_(self): zeros of self's shape and dtype.
TONNX_SYMBOLIC("aten::zero_", 9, [](SymbolicContext& g) -> Outputs {
  return g.op("Expand", {g.constant_scalar(0, g.scalar_type(0)), shape_of(g, 0)});
});

// Size of dim `dim` of input 0 as a 0-d int64 tensor.
Value* dim_size(SymbolicContext& g, int64_t dim) {
  return g.op("Gather",
              {g.op("Shape", {g.input(0)}), g.constant(at::scalar_tensor(dim, at::kLong))},
              {{"axis", int64_t{0}}});
}

// A 1-D int64 tensor of one element from an int argument, constant or computed.
Value* one_int(SymbolicContext& g, size_t i, int64_t if_none) {
  if (g.is_none(i)) return g.constant_ints({if_none});
  if (g.is_constant(i)) return g.constant_ints({g.i(i)});
  return g.op("Reshape", {g.cast(g.input(i), at::kLong), g.constant_ints({1})});
}

// Scatters `src` (rank r) into self along `dim` at the 1-D positions `pos`.
Value* scatter_along(SymbolicContext& g, Value* self, Value* src, Value* pos, int64_t dim,
                     int64_t rank) {
  std::vector<int64_t> shape(rank, 1);
  shape[dim] = -1;
  Value* idx =
      g.op("Expand", {g.op("Reshape", {pos, g.constant_ints(shape)}), g.op("Shape", {src})});
  return g.op("ScatterElements", {self, idx, src}, {{"axis", dim}});
}

// slice_scatter(self, src, dim, start, end, step): src written over self[start:end:step] of dim.
TONNX_SYMBOLIC("aten::slice_scatter", 11, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.scalar_type(0);
  int64_t rank = g.rank(0);
  int64_t dim = norm_dim(g, g.i(2), rank);
  int64_t step = g.i(5);
  if (step <= 0) g.fail("slice step must be positive, got " + std::to_string(step));
  Value* src = g.cast(g.input(1), dt);
  Value* pos;
  auto t = g.type(0);
  bool static_size = !g.dynamic_shapes() && t && t->shape && (*t->shape)[dim].value;
  if (static_size && (g.is_none(3) || g.is_constant(3)) && (g.is_none(4) || g.is_constant(4))) {
    int64_t start = g.is_none(3) ? 0 : g.i(3), end = g.is_none(4) ? kInt64Max : g.i(4);
    pos = g.constant(at::arange(*(*t->shape)[dim].value, at::kLong).slice(0, start, end, step));
  } else {
    // The positions the slice covers: Slice over 0..size-1, which clamps like aten::slice.
    Value* all = g.op("Range", {g.constant(at::scalar_tensor(0, at::kLong)), dim_size(g, dim),
                                g.constant(at::scalar_tensor(1, at::kLong))});
    pos = g.op("Slice", {all, one_int(g, 3, 0), one_int(g, 4, kInt64Max), g.constant_ints({0}),
                         g.constant_ints({step})});
  }
  return scatter_along(g, g.input(0), src, pos, dim, rank);
});

// select_scatter(self, src, dim, index): src (rank r-1) written over self.select(dim, index).
TONNX_SYMBOLIC("aten::select_scatter", 11, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.scalar_type(0);
  int64_t rank = g.rank(0);
  int64_t dim = norm_dim(g, g.i(2), rank);
  Value* src = unsqueeze(g, g.cast(g.input(1), dt), {dim});
  auto t = g.type(0);
  std::optional<int64_t> size;
  if (!g.dynamic_shapes() && t && t->shape && (*t->shape)[dim].value)
    size = *(*t->shape)[dim].value;
  Value* pos;
  if (g.is_constant(3) && (g.i(3) >= 0 || size)) {
    int64_t index = g.i(3);
    if (index < 0) index += *size;
    if (size && (index < 0 || index >= *size))
      g.fail("index " + std::to_string(g.i(3)) + " is out of range for dim " + std::to_string(dim) +
             " of size " + std::to_string(*size));
    pos = g.constant_ints({index});
  } else {
    // index in [-size, size): (index + size) mod size.
    Value* n = dim_size(g, dim);
    Value* index = g.cast(g.input(3), at::kLong);
    pos = g.op("Reshape", {g.op("Mod", {g.op("Add", {index, n}), n}), g.constant_ints({1})});
  }
  return scatter_along(g, g.input(0), src, pos, dim, rank);
});

}  // namespace
}  // namespace tonnx::sym
