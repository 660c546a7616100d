// Tensor manipulation: transpose/permute, expand, indexing by
// position (index_select, gather, scatter, slice, narrow), repeat, flip, roll, padding,
// pixel_shuffle, embedding, baddbmm, casts (to, _to_copy, type_as). select is in shape.cpp,
// index/index_put in index.cpp,
// split/chunk/unbind/stack in split.cpp.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

TONNX_SYMBOLIC("aten::transpose", 9,
               [](SymbolicContext& g, Value* x, int64_t d0, int64_t d1) -> Outputs {
                 int64_t rank = g.rank(0);
                 if (rank < 2) return g.op("Identity", {x});
                 std::vector<int64_t> perm;
                 for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
                 std::swap(perm[norm_dim(g, d0, rank)], perm[norm_dim(g, d1, rank)]);
                 return g.op("Transpose", {x}, {{"perm", perm}});
               });
TONNX_SYMBOLIC("aten::permute", 9,
               [](SymbolicContext& g, Value* x, std::vector<int64_t> dims) -> Outputs {
                 int64_t rank = g.rank(0);
                 for (auto& d : dims) d = norm_dim(g, d, rank);
                 return g.op("Transpose", {x}, {{"perm", dims}});
               });

// expand(self, size, implicit): -1 keeps a dim; ONNX Expand broadcasts a 1 the same way.
TONNX_SYMBOLIC("aten::expand", 9, [](SymbolicContext& g) -> Outputs {
  Value* x = g.input(0);
  if (g.is_constant(1)) {
    std::vector<int64_t> size = g.ints(1);
    for (auto& s : size) s = s == -1 ? 1 : s;
    return g.op("Expand", {x, g.constant_ints(size)});
  }
  Value* size = g.cast(g.input(1), at::kLong);
  Value* ones =
      g.op("ConstantOfShape", {g.op("Shape", {size})}, {{"value", at::ones({1}, at::kLong)}});
  Value* is_neg = g.op("Equal", {size, g.constant_ints({-1})});
  return g.op("Expand", {x, g.op("Where", {is_neg, ones, size})});
});
TONNX_SYMBOLIC("aten::expand_as", 9, [](SymbolicContext& g, Value* x, Value*) {
  return g.op("Expand", {x, shape_of(g, 1)});
});

TONNX_SYMBOLIC(
    "aten::index_select", 9, [](SymbolicContext& g, Value* x, int64_t dim, Value* index) {
      // A 0-d index selects one slice and keeps the dim (Gather would drop it).
      auto t = g.type(2);
      if (!t || !t->shape) g.fail("the rank of the index is not known");
      if (t->shape->empty()) index = g.op("Reshape", {index, g.constant_ints({1})});
      return g.op("Gather", {x, g.cast(index, at::kLong)}, {{"axis", arg_dim(g, 0, dim)}});
    });
// gather(self, dim, index, sparse_grad): GatherElements is opset 11.
TONNX_SYMBOLIC(
    "aten::gather", 11, [](SymbolicContext& g, Value* x, int64_t dim, Value* index, bool) {
      return g.op("GatherElements", {x, g.cast(index, at::kLong)}, {{"axis", arg_dim(g, 0, dim)}});
    });
// scatter(self, dim, index, src | value[, reduce]): ScatterElements (11); reduce='add' and
// 'multiply' need its reduction attribute (16): a plain scatter would keep one write per
// repeated index, a silently different model.
Outputs scatter(SymbolicContext& g, const std::string& reduction) {
  at::ScalarType dt = g.scalar_type(0);
  int64_t dim = arg_dim(g, 0, g.i(1));
  Value* index = g.cast(g.input(2), at::kLong);
  Value* src = g.arg_type(3) == "Tensor" && !g.is_constant(3)
                   ? g.cast(g.input(3), dt)
                   : g.op("Expand", {input_as(g, 3, dt), g.op("Shape", {index})});
  if (g.opset() >= 10 && g.arg_type(3) == "Tensor") {  // torch reads src only where index is
    std::vector<int64_t> zeros(static_cast<size_t>(g.rank(0)), 0), dims;
    for (int64_t d = 0; d < g.rank(0); ++d) dims.push_back(d);
    src =
        g.op("Slice", {src, g.constant_ints(zeros), g.op("Shape", {index}), g.constant_ints(dims)});
  }
  if (reduction == "none")
    return g.op("ScatterElements", {g.input(0), index, src}, {{"axis", dim}});
  if (reduction == "add" && g.opset() < 16)
    return scatter_add_onehot(g, g.input(0), index, src, dim, g.rank(0), dt);
  if (g.opset() < 16)
    g.unsupported_below(
        16, "scatter with reduction '" + reduction + "' (ScatterElements' reduction attribute)");
  return g.op("ScatterElements", {g.input(0), index, src},
              {{"axis", dim}, {"reduction", reduction}});
}
TONNX_SYMBOLIC("aten::scatter", 11, [](SymbolicContext& g) -> Outputs {
  if (g.num_inputs() < 5 || g.is_none(4)) return scatter(g, "none");
  std::string reduce = g.s(4);
  if (reduce != "add" && reduce != "multiply")
    g.fail("reduce='" + reduce + "' is not one of 'add', 'multiply'");
  return scatter(g, reduce == "add" ? "add" : "mul");
});
TONNX_SYMBOLIC("aten::scatter_add", 11, [](SymbolicContext& g) { return scatter(g, "add"); });

// Slice from start to end with step along dim. Before opset 10 Slice has no steps and
// takes attributes.
Value* slice(SymbolicContext& g, Value* x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (g.opset() < 10) {
    if (step != 1) g.unsupported_below(10, "slicing with a step");
    return g.op("Slice", {x},
                {{"axes", ir::Ints{dim}}, {"starts", ir::Ints{start}}, {"ends", ir::Ints{end}}});
  }
  std::vector<Value*> in{x, g.constant_ints({start}), g.constant_ints({end}),
                         g.constant_ints({dim})};
  if (step != 1) in.push_back(g.constant_ints({step}));
  return g.op("Slice", in);
}

// A 1-D int64 tensor of one element from int argument i: a constant, or the value computed at
// run time (x.size(1) in a trace becomes aten::size).
Value* int_1d(SymbolicContext& g, size_t i) {
  if (g.is_constant(i)) return g.constant_ints({g.i(i)});
  return g.op("Reshape", {g.cast(g.input(i), at::kLong), g.constant_ints({1})});
}

// slice(self, dim, start, end, step): start/end may be None, out of range, or computed.
// Python's l[start:end:step] on a list (aten::slice.t): an int[] or float[] is one 1-D tensor,
// sliced along axis 0; a Tensor[] is sliced at export, with constant bounds.
Outputs list_slice(SymbolicContext& g) {
  int64_t step = g.i(3);
  if (step == 0) g.fail("slice step cannot be zero");
  if (is_tensor_list(g, 0)) {
    std::vector<Value*> items = g.inputs_list(0);
    int64_t n = static_cast<int64_t>(items.size());
    if (!(g.is_none(1) || g.is_constant(1)) || !(g.is_none(2) || g.is_constant(2)))
      g.fail("slicing a list of tensors at bounds computed at run time is not supported");
    // Python's slice indices: clamp into range, negative from the end.
    auto bound = [&](size_t i, int64_t dflt) {
      if (g.is_none(i)) return dflt;
      int64_t v = g.i(i);
      if (v < 0) v += n;
      return step > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1);
    };
    int64_t start = bound(1, step > 0 ? 0 : n - 1), end = bound(2, step > 0 ? n : -1);
    std::vector<Value*> out;
    for (int64_t k = start; step > 0 ? k < end : k > end; k += step) out.push_back(items[k]);
    return out;
  }
  if (step < 0) g.fail("slicing an int list with a negative step is not supported");
  Value* l = g.input(0);
  bool known = (g.is_none(1) || g.is_constant(1)) && (g.is_none(2) || g.is_constant(2));
  if (known)
    return slice(g, l, 0, g.is_none(1) ? 0 : g.i(1), g.is_none(2) ? kInt64Max : g.i(2), step);
  if (g.opset() < 10) g.unsupported_below(10, "slicing with bounds computed at run time");
  Value* start = g.is_none(1) ? g.constant_ints({0}) : int_1d(g, 1);
  Value* end = g.is_none(2) ? g.constant_ints({kInt64Max}) : int_1d(g, 2);
  std::vector<Value*> in{l, start, end, g.constant_ints({0})};
  if (step != 1) in.push_back(g.constant_ints({step}));
  return g.op("Slice", in);
}

TONNX_SYMBOLIC("aten::slice", 9, [](SymbolicContext& g) -> Outputs {
  const c10::FunctionSchema* schema = g.node()->maybeSchema();
  if (schema && schema->overload_name() == "t") return list_slice(g);
  int64_t dim = arg_dim(g, 0, g.i(1));
  int64_t step = g.i(4);
  if (step <= 0) g.fail("slice step must be positive, got " + std::to_string(step));
  bool computed = (!g.is_none(2) && !g.is_constant(2)) || (!g.is_none(3) && !g.is_constant(3));
  if (computed) {
    if (g.opset() < 10) g.unsupported_below(10, "slicing with bounds computed at run time");
    Value* start = g.is_none(2) ? g.constant_ints({0}) : int_1d(g, 2);
    Value* end = g.is_none(3) ? g.constant_ints({kInt64Max}) : int_1d(g, 3);
    std::vector<Value*> in{g.input(0), start, end, g.constant_ints({dim})};
    if (step != 1) in.push_back(g.constant_ints({step}));
    return g.op("Slice", in);
  }
  int64_t start = g.is_none(2) ? 0 : g.i(2);
  int64_t end = g.is_none(3) ? kInt64Max : g.i(3);
  if (start == 0 && end == kInt64Max && step == 1) return g.op("Identity", {g.input(0)});
  return slice(g, g.input(0), dim, start, end, step);
});
// narrow(self, dim, start, length): start and length may be computed at run time.
TONNX_SYMBOLIC("aten::narrow", 9, [](SymbolicContext& g) -> Outputs {
  int64_t rank = g.rank(0);
  int64_t d = norm_dim(g, g.i(1), rank);
  if (g.is_constant(2) && g.is_constant(3)) {
    int64_t start = g.i(2), length = g.i(3);
    if (start < 0) start += g.sizes(0)[d];
    return slice(g, g.input(0), d, start, start + length, 1);
  }
  if (g.opset() < 10) g.unsupported_below(10, "narrow with a start or length computed at run time");
  if (g.is_constant(2) && g.i(2) < 0)
    g.fail("narrow with a negative start and a length computed at run time");
  Value* start = int_1d(g, 2);
  Value* end = g.op("Add", {start, int_1d(g, 3)});
  return g.op("Slice", {g.input(0), start, end, g.constant_ints({d})});
});

// flip(self, dims): Slice backwards over each dim (opset 10).
TONNX_SYMBOLIC("aten::flip", 10,
               [](SymbolicContext& g, Value* x, std::vector<int64_t> dims) -> Outputs {
                 int64_t rank = g.rank(0);
                 std::vector<int64_t> starts, ends, steps;
                 for (auto& d : dims) {
                   d = norm_dim(g, d, rank);
                   starts.push_back(-1);
                   ends.push_back(std::numeric_limits<int64_t>::min());
                   steps.push_back(-1);
                 }
                 return g.op("Slice", {x, g.constant_ints(starts), g.constant_ints(ends),
                                       g.constant_ints(dims), g.constant_ints(steps)});
               });

// roll(self, shifts, dims): two slices concatenated per dim.
TONNX_SYMBOLIC("aten::roll", 10,
               [](SymbolicContext& g, Value* x, std::vector<int64_t> shifts,
                  std::vector<int64_t> dims) -> Outputs {
                 if (dims.empty()) {
                   std::vector<int64_t> sizes = g.sizes(0);
                   // Rolls the flattened tensor.
                   int64_t n = 1;
                   for (int64_t s : sizes) n *= s;
                   Value* flat = g.op("Reshape", {x, g.constant_ints({n})});
                   int64_t s = n ? ((shifts[0] % n) + n) % n : 0;
                   Value* rolled =
                       s ? g.op("Concat",
                                {slice(g, flat, 0, n - s, n, 1), slice(g, flat, 0, 0, n - s, 1)},
                                {{"axis", int64_t{0}}})
                         : flat;
                   return g.op("Reshape", {rolled, g.constant_ints(sizes)});
                 }
                 if (shifts.size() != dims.size()) g.fail("roll needs as many shifts as dims");
                 for (size_t i = 0; i < dims.size(); ++i) {
                   // Only the rolled dims' sizes are needed (others may be dynamic).
                   int64_t d = norm_dim(g, dims[i], g.rank(0));
                   std::optional<int64_t> size = known_size(g, 0, d);
                   if (!size)
                     g.fail("roll along dim " + std::to_string(d) +
                            ", whose size varies (a dynamic axis): the split point depends on "
                            "it; keep that dim's size fixed");
                   int64_t n = *size;
                   int64_t s = n ? ((shifts[i] % n) + n) % n : 0;
                   if (!s) continue;
                   x = g.op("Concat", {slice(g, x, d, n - s, n, 1), slice(g, x, d, 0, n - s, 1)},
                            {{"axis", d}});
                 }
                 return x;
               });

// repeat(self, repeats): Tile, with leading dims added when repeats is longer than rank.
// repeat(self, repeats): Tile, after leading axes of 1 when there are more repeats than dims.
// The repeats may be computed at run time.
TONNX_SYMBOLIC("aten::repeat", 9, [](SymbolicContext& g, Value* x, RuntimeInts repeats) -> Outputs {
  int64_t rank = g.rank(0);
  int64_t count = repeats.is_constant() ? static_cast<int64_t>(repeats.constant->size())
                                        : computed_list_length(g, 1);
  int64_t extra = count - rank;
  if (extra < 0) g.fail("repeat needs at least as many repeats as the tensor has dims");
  if (extra > 0) {
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < extra; ++a) axes.push_back(a);
    x = unsqueeze(g, x, axes);
  }
  Value* times = repeats.is_constant() ? g.constant_ints(*repeats.constant) : repeats.value;
  return g.op("Tile", {x, times});
});

// Padding: PyTorch lists (begin, end) pairs from the last dim; ONNX all begins then all ends.
std::vector<int64_t> onnx_pads(SymbolicContext& g, const std::vector<int64_t>& pad, int64_t rank) {
  if (pad.size() % 2 || static_cast<int64_t>(pad.size()) > 2 * rank)
    g.fail("pad has " + std::to_string(pad.size()) + " values; expected pairs for at most " +
           std::to_string(rank) + " dims");
  std::vector<int64_t> begins(rank, 0), ends(rank, 0);
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    begins[rank - 1 - i] = pad[2 * i];
    ends[rank - 1 - i] = pad[2 * i + 1];
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  return begins;
}
Value* emit_pad(SymbolicContext& g, Value* x, const std::vector<int64_t>& pads,
                const std::string& mode, Value* value) {
  if (g.opset() >= 11) {
    std::vector<Value*> in{x, g.constant_ints(pads)};
    if (value) in.push_back(value);
    return g.op("Pad", in, {{"mode", mode}});
  }
  std::vector<ir::Attr> attrs{{"mode", mode}, {"pads", pads}};
  return g.op("Pad", {x}, attrs);
}
// onnx_pads on a pad list computed at run time (opset 11): pairs reversed to dim order, begins
// then ends, zeros for the leading dims.
Value* onnx_pads_runtime(SymbolicContext& g, int64_t rank) {
  if (g.opset() < 11) g.unsupported_below(11, "padding by amounts computed at run time");
  int64_t n = computed_list_length(g, 1);
  if (n % 2 || n > 2 * rank)
    g.fail("pad has " + std::to_string(n) + " values; expected pairs for at most " +
           std::to_string(rank) + " dims");
  int64_t m = n / 2;
  Value* pairs = g.op("Reshape", {g.cast(g.input(1), at::kLong), g.constant_ints({m, 2})});
  Value* dim_order = g.op("Slice", {pairs, g.constant_ints({-1}), g.constant_ints({-kInt64Max}),
                                    g.constant_ints({0}), g.constant_ints({-1})});
  Value* by_side = g.op("Transpose", {dim_order}, {{"perm", ir::Ints{1, 0}}});  // [2, m]
  if (m < rank) {
    Value* zeros = g.constant(at::zeros({2, rank - m}, at::kLong));
    by_side = g.op("Concat", {zeros, by_side}, {{"axis", int64_t{1}}});
  }
  return g.op("Reshape", {by_side, g.constant_ints({-1})});
}

TONNX_SYMBOLIC("aten::constant_pad_nd", 9,
               [](SymbolicContext& g, Value* x, RuntimeInts pad, double value) -> Outputs {
                 at::ScalarType dt = g.scalar_type(0);
                 if (!pad.is_constant())
                   return g.op("Pad",
                               {x, onnx_pads_runtime(g, g.rank(0)), g.constant_scalar(value, dt)},
                               {{"mode", "constant"}});
                 std::vector<int64_t> pads = onnx_pads(g, *pad.constant, g.rank(0));
                 for (int64_t p : pads)
                   if (p < 0) g.fail("negative padding (cropping) is not supported by ONNX Pad");
                 if (g.opset() >= 11)
                   return emit_pad(g, x, pads, "constant", g.constant_scalar(value, dt));
                 return g.op("Pad", {x}, {{"mode", "constant"}, {"pads", pads}, {"value", value}});
               });
Outputs mode_pad(SymbolicContext& g, const char* mode) {
  return emit_pad(g, g.input(0), onnx_pads(g, g.ints(1), g.rank(0)), mode, nullptr);
}
// _pad_enum(self, pad, mode, value): what F::pad records in LibTorch 1.13, with
// at::padding_mode (0 reflect, 1 replicate, 2 circular, 3 constant).
// Pad of input 0 by the aten pad list of input 1, in an ONNX mode, with the fill value of
// input 3 (None: 0) for "constant".
// Circular padding (no ONNX Pad mode): per dim, the last `lo` slices, the tensor, and the first
// `hi` slices concatenated; a negative amount crops. Dims padded one after the other, so the
// corners wrap in both, as in PyTorch.
Value* circular_pad(SymbolicContext& g, Value* x, const std::vector<int64_t>& pad) {
  int64_t rank = g.rank(0);
  if (pad.size() % 2 || static_cast<int64_t>(pad.size()) > 2 * rank)
    g.fail("pad has " + std::to_string(pad.size()) + " values; expected pairs for at most " +
           std::to_string(rank) + " dims");
  auto t = g.type(0);
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    int64_t dim = rank - 1 - static_cast<int64_t>(k), lo = pad[2 * k], hi = pad[2 * k + 1];
    if (t && t->shape && (*t->shape)[dim].value) {
      int64_t size = *(*t->shape)[dim].value;
      if (lo > size || hi > size || -lo - hi > size)
        g.fail("circular padding of (" + std::to_string(lo) + ", " + std::to_string(hi) +
               ") on dim " + std::to_string(dim) + " of size " + std::to_string(size) +
               " wraps around more than once");
    }
    if (lo < 0) x = slice(g, x, dim, -lo, kInt64Max, 1);
    if (hi < 0) x = slice(g, x, dim, 0, hi, 1);
    std::vector<Value*> parts;
    if (lo > 0) parts.push_back(slice(g, x, dim, -lo, kInt64Max, 1));
    parts.push_back(x);
    if (hi > 0) parts.push_back(slice(g, x, dim, 0, hi, 1));
    if (parts.size() > 1) x = g.op("Concat", parts, {{"axis", dim}});
  }
  return x;
}
TONNX_SYMBOLIC("aten::_pad_circular", 9,
               [](SymbolicContext& g, Value* x, std::vector<int64_t> pad) {
                 return circular_pad(g, x, pad);
               });

Outputs pad_mode(SymbolicContext& g, const std::string& mode) {
  if (mode == "circular") {
    if (!g.is_constant(1)) g.fail("circular padding by amounts computed at run time");
    return circular_pad(g, g.input(0), g.ints(1));
  }
  if (!g.is_constant(1)) {
    Value* pads = onnx_pads_runtime(g, g.rank(0));
    std::vector<Value*> in{g.input(0), pads};
    if (mode == "constant") {
      double value = g.num_inputs() <= 3 || g.is_none(3) ? 0.0 : g.f(3);
      in.push_back(g.constant_scalar(value, g.scalar_type(0)));
    }
    return g.op("Pad", in, {{"mode", mode}});
  }
  std::vector<int64_t> pads = onnx_pads(g, g.ints(1), g.rank(0));
  if (mode != "constant") return emit_pad(g, g.input(0), pads, mode, nullptr);
  for (int64_t p : pads)
    if (p < 0) g.fail("negative padding (cropping) is not supported by ONNX Pad");
  double value = g.num_inputs() <= 3 || g.is_none(3) ? 0.0 : g.f(3);
  at::ScalarType dt = g.scalar_type(0);
  if (g.opset() >= 11)
    return emit_pad(g, g.input(0), pads, "constant", g.constant_scalar(value, dt));
  return g.op("Pad", {g.input(0)}, {{"mode", "constant"}, {"pads", pads}, {"value", value}});
}
TONNX_SYMBOLIC("aten::_pad_enum", 9, [](SymbolicContext& g) -> Outputs {
  static const char* kModes[] = {"reflect", "edge", "circular", "constant"};
  int64_t mode = g.i(2);
  if (mode < 0 || mode > 3) g.fail("padding mode " + std::to_string(mode) + " is not 0 to 3");
  return pad_mode(g, kModes[mode]);
});
// pad(self, pad, mode="constant", value=None): F.pad in Python torch 1.13.
TONNX_SYMBOLIC("aten::pad", 9, [](SymbolicContext& g) -> Outputs {
  std::string mode = g.num_inputs() > 2 && !g.is_none(2) ? g.s(2) : "constant";
  if (mode == "reflect" || mode == "constant" || mode == "circular") return pad_mode(g, mode);
  if (mode == "replicate") return pad_mode(g, "edge");
  g.fail("padding mode '" + mode + "' is not one of constant, reflect, replicate, circular");
});
TONNX_SYMBOLIC("aten::reflection_pad1d", 9,
               [](SymbolicContext& g) { return mode_pad(g, "reflect"); });
TONNX_SYMBOLIC("aten::reflection_pad2d", 9,
               [](SymbolicContext& g) { return mode_pad(g, "reflect"); });
TONNX_SYMBOLIC("aten::reflection_pad3d", 9,
               [](SymbolicContext& g) { return mode_pad(g, "reflect"); });
TONNX_SYMBOLIC("aten::replication_pad1d", 9,
               [](SymbolicContext& g) { return mode_pad(g, "edge"); });
TONNX_SYMBOLIC("aten::replication_pad2d", 9,
               [](SymbolicContext& g) { return mode_pad(g, "edge"); });
TONNX_SYMBOLIC("aten::replication_pad3d", 9,
               [](SymbolicContext& g) { return mode_pad(g, "edge"); });

// pixel_shuffle(self, r): [N, C*r*r, H, W] -> [N, C, H*r, W*r] by reshape/transpose/reshape.
TONNX_SYMBOLIC("aten::pixel_shuffle", 9, [](SymbolicContext& g, Value* x, int64_t r) -> Outputs {
  if (g.dynamic_shapes() && g.opset() >= 11)
    return g.op("DepthToSpace", {x}, {{"blocksize", r}, {"mode", "CRD"}});
  std::vector<int64_t> s = g.sizes(0);
  if (s.size() != 4) g.fail("pixel_shuffle is exported for 4-D inputs");
  int64_t n = s[0], c = s[1] / (r * r), h = s[2], w = s[3];
  Value* y = g.op("Reshape", {x, g.constant_ints({n, c, r, r, h, w})});
  y = g.op("Transpose", {y}, {{"perm", ir::Ints{0, 1, 4, 2, 5, 3}}});
  return g.op("Reshape", {y, g.constant_ints({n, c, h * r, w * r})});
});
// pixel_unshuffle(self, r): [N, C, H, W] -> [N, C*r*r, H/r, W/r], channel c*r*r + i*r + j
// (ONNX's SpaceToDepth orders the channels the other way). Sizes that vary are read with
// Shape at run time.
TONNX_SYMBOLIC("aten::pixel_unshuffle", 9, [](SymbolicContext& g, Value* x, int64_t r) -> Outputs {
  if (g.rank(0) != 4) g.fail("pixel_unshuffle is exported for 4-D inputs");
  if (r <= 0) g.fail("downscale_factor must be > 0, got " + std::to_string(r));
  auto known = g.type(0)->shape;
  bool varies = g.dynamic_shapes();
  for (const ir::Dim& d : *known) varies = varies || !d.value;
  if (varies) {
    Value* shape = g.op("Shape", {x});
    auto dim = [&](int64_t i) {
      return g.op("Gather", {shape, g.constant_ints({i})}, {{"axis", int64_t{0}}});
    };
    Value* rr = g.constant_ints({r});
    Value* n = dim(0);
    Value* c = dim(1);
    Value* h = g.op("Div", {dim(2), rr});
    Value* w = g.op("Div", {dim(3), rr});
    Value* y = g.op("Reshape", {x, g.op("Concat", {n, c, h, rr, w, rr}, {{"axis", int64_t{0}}})});
    y = g.op("Transpose", {y}, {{"perm", ir::Ints{0, 1, 3, 5, 2, 4}}});
    Value* crr = g.op("Mul", {c, g.constant_ints({r * r})});
    return g.op("Reshape", {y, g.op("Concat", {n, crr, h, w}, {{"axis", int64_t{0}}})});
  }
  std::vector<int64_t> s = g.sizes(0);
  int64_t n = s[0], c = s[1], h = s[2] / r, w = s[3] / r;
  Value* y = g.op("Reshape", {x, g.constant_ints({n, c, h, r, w, r})});
  y = g.op("Transpose", {y}, {{"perm", ir::Ints{0, 1, 3, 5, 2, 4}}});
  return g.op("Reshape", {y, g.constant_ints({n, c * r * r, h, w})});
});

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): a row gather.
// padding_idx only affects gradients.
TONNX_SYMBOLIC("aten::embedding", 9, [](SymbolicContext& g) -> Outputs {
  return g.op("Gather", {g.input(0), g.cast(g.input(1), at::kLong)}, {{"axis", int64_t{0}}});
});
// embedding_renorm_(weight, indices, max_norm, norm_type): rows whose norm exceeds max_norm
// are scaled to it. Scaling every row gives the same embedding output as PyTorch, which
// scales only the rows the indices name.
TONNX_SYMBOLIC(
    "aten::embedding_renorm", 9,
    [](SymbolicContext& g, Value* w, Value*, double max_norm, double norm_type) -> Outputs {
      at::ScalarType dt = g.scalar_type(0);
      Value* norm;
      if (norm_type == 2) {
        norm = reduce(g, "ReduceL2", w, std::vector<int64_t>{1}, true);
      } else if (norm_type == 1) {
        norm = reduce(g, "ReduceL1", w, std::vector<int64_t>{1}, true);
      } else {
        Value* p = g.op("Pow", {g.op("Abs", {w}), g.constant_scalar(norm_type, dt)});
        norm = g.op("Pow", {reduce(g, "ReduceSum", p, std::vector<int64_t>{1}, true),
                            g.constant_scalar(1.0 / norm_type, dt)});
      }
      Value* mx = g.constant_scalar(max_norm, dt);
      Value* scale = g.op("Div", {mx, g.op("Add", {norm, g.constant_scalar(1e-7, dt)})});
      Value* s = g.op("Where", {g.op("Greater", {norm, mx}), scale, g.constant_scalar(1, dt)});
      return g.op("Mul", {w, s});
    });

// Casts: to / type_as / _to_copy all become a Cast to the traced result type.
Outputs cast_to_output(SymbolicContext& g) {
  return g.op("Cast", {g.input(0)},
              {{"to", static_cast<int64_t>(ir::dtype_from_scalar_type(g.output_scalar_type()))}});
}
TONNX_SYMBOLIC("aten::to", 9, cast_to_output);
TONNX_SYMBOLIC("aten::type_as", 9, cast_to_output);
TONNX_SYMBOLIC("aten::_to_copy", 9, cast_to_output);

// baddbmm(self, batch1, batch2, beta, alpha) = beta * self + alpha * batch1 @ batch2; beta and
// alpha may be computed at run time.
TONNX_SYMBOLIC("aten::baddbmm", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  Value* mm = g.op("MatMul", {g.input(1), g.input(2)});
  bool alpha_known = g.is_constant(4), beta_known = g.is_constant(3);
  if (!alpha_known || g.f(4) != 1) mm = g.op("Mul", {mm, input_as(g, 4, dt)});
  if (beta_known && g.f(3) == 0) return mm;  // self is ignored, NaN and inf included
  Value* s;
  if (beta_known) {
    s = g.f(3) == 1 ? g.input(0) : g.op("Mul", {g.input(0), input_as(g, 3, dt)});
  } else {
    // A beta of 0 at run time ignores self too (0 * NaN would be NaN).
    Value* beta = input_as(g, 3, dt);
    Value* zero = g.constant_scalar(0, dt);
    s = g.op("Where", {equal(g, beta, zero, dt), zero, g.op("Mul", {g.input(0), beta})});
  }
  return g.op("Add", {s, mm});
});

}  // namespace
}  // namespace tonnx::sym
