// Creation ops (arange, zeros, ones, full, empty, tensor, scalar_tensor), triu/tril,
// topk/sort, where the trace knows everything they need.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// zeros/ones/full/empty(size, dtype, layout, device, pin_memory): a constant of the traced
// result when the size is constant; ConstantOfShape when it is computed. `at` is where the
// size is (1 for new_zeros(self, size, ...)); the fill value of full follows it.
Outputs filled(SymbolicContext& g, std::optional<double> value, size_t at = 0) {
  at::ScalarType dt = g.output_scalar_type();
  if (!value && !g.is_constant(at + 1)) {
    // A computed fill value (full(size, x.mean()) in scripted code): expand it.
    Value* shape = g.is_constant(at) ? g.constant_ints(g.ints(at)) : g.cast(g.input(at), at::kLong);
    return g.op("Expand", {input_as(g, at + 1, dt), shape});
  }
  double v = value ? *value : g.f(at + 1);
  if (g.is_constant(at)) return g.constant(at::full(g.ints(at), v, at::TensorOptions().dtype(dt)));
  return g.op("ConstantOfShape", {g.cast(g.input(at), at::kLong)},
              {{"value", at::full({1}, v, at::TensorOptions().dtype(dt))}});
}
TONNX_SYMBOLIC("aten::zeros", 9, [](SymbolicContext& g) { return filled(g, 0.0); });
TONNX_SYMBOLIC("aten::empty", 9, [](SymbolicContext& g) { return filled(g, 0.0); });
TONNX_SYMBOLIC("aten::ones", 9, [](SymbolicContext& g) { return filled(g, 1.0); });
TONNX_SYMBOLIC("aten::full", 9, [](SymbolicContext& g) { return filled(g, std::nullopt); });
// new_zeros/new_ones/new_empty/new_full(self, size, [fill_value,] dtype...): self's dtype
// unless given (the traced result's dtype says which).
TONNX_SYMBOLIC("aten::new_zeros", 9, [](SymbolicContext& g) { return filled(g, 0.0, 1); });
TONNX_SYMBOLIC("aten::new_empty", 9, [](SymbolicContext& g) { return filled(g, 0.0, 1); });
TONNX_SYMBOLIC("aten::new_ones", 9, [](SymbolicContext& g) { return filled(g, 1.0, 1); });
TONNX_SYMBOLIC("aten::new_full", 9, [](SymbolicContext& g) { return filled(g, std::nullopt, 1); });
// scalar_tensor(s, dtype, ...): torch::tensor(x.size(0)) in C++ records this with s computed
// under dynamic axes.
TONNX_SYMBOLIC("aten::scalar_tensor", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  if (!g.is_constant(0)) return g.cast(g.input(0), dt);
  return g.constant(at::scalar_tensor(g.f(0), at::TensorOptions().dtype(dt)));
});
TONNX_SYMBOLIC("aten::tensor", 9, [](SymbolicContext& g) -> Outputs {
  if (auto t = g.constant_tensor(0)) return g.constant(t->to(g.output_scalar_type()));
  return g.cast(g.input(0), g.output_scalar_type());
});

// arange: end | start, end | start, end, step (+ dtype, layout, device, pin_memory), or the
// out= forms (end, out) and (start, end, step, out), in out's dtype.
TONNX_SYMBOLIC("aten::arange", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.output_scalar_type();
  size_t n = g.num_inputs();
  const c10::FunctionSchema* schema = g.node()->maybeSchema();
  std::string overload = schema ? schema->overload_name() : "";
  size_t nargs = overload == "out"         ? 1
                 : overload == "start_out" ? 3
                 : n == 5                  ? 1
                 : n == 6                  ? 2
                                           : 3;  // the tensor-options tail has 4 entries
  bool constant = true;
  for (size_t i = 0; i < nargs; ++i) constant = constant && g.is_constant(i);
  double start = 0, step = 1, end;
  if (constant) {
    if (nargs == 1)
      end = g.f(0);
    else {
      start = g.f(0);
      end = g.f(1);
      if (nargs == 3) step = g.f(2);
    }
    return g.constant(at::arange(start, end, step, at::TensorOptions().dtype(at::kDouble)).to(dt));
  }
  if (g.opset() < 11) g.unsupported_below(11, "arange with a computed bound");
  Value* s = nargs == 1 ? g.constant_scalar(0, dt) : input_as(g, 0, dt);
  Value* e = input_as(g, nargs == 1 ? 0 : 1, dt);
  Value* st = nargs == 3 ? input_as(g, 2, dt) : g.constant_scalar(1, dt);
  return g.op("Range", {s, e, st});
});

// triu/tril(self, diagonal): Trilu from opset 14; before, a constant mask (static shapes).
Outputs tri(SymbolicContext& g, bool upper) {
  Value* x = g.input(0);
  // Trilu takes k as an input: a diagonal computed at run time too.
  if (g.opset() >= 14)
    return g.op("Trilu", {x, input_as(g, 1, at::kLong)}, {{"upper", int64_t{upper}}});
  int64_t k = g.i(1);
  std::vector<int64_t> s = g.sizes(0);
  if (s.size() < 2) g.fail("triu/tril need a tensor of rank >= 2");
  at::Tensor ones = at::ones({s[s.size() - 2], s.back()}, at::kBool);
  at::Tensor mask = upper ? at::triu(ones, k) : at::tril(ones, k);
  at::ScalarType dt = g.scalar_type(0);
  return g.op("Where", {g.constant(mask), x, g.constant_scalar(0, dt)});
}
TONNX_SYMBOLIC("aten::triu", 9, [](SymbolicContext& g) { return tri(g, true); });
TONNX_SYMBOLIC("aten::tril", 9, [](SymbolicContext& g) { return tri(g, false); });

// topk(self, k, dim, largest, sorted): TopK's K is an input from 10 and `largest` from 11.
// k may be computed at run time (min(pre_nms_top_n, num_anchors) in torchvision's RPN).
Outputs topk(SymbolicContext& g, Value* x, RuntimeInt k, int64_t dim, bool largest) {
  if (!largest && g.opset() < 11) g.unsupported_below(11, "topk with largest=False");
  if (g.opset() < 10) {
    if (!k.is_constant()) g.unsupported_below(10, "topk with k computed at run time");
    return g.op_n("TopK", {x}, {{"axis", dim}, {"k", *k.constant}}, 2);
  }
  Value* kv = k.is_constant() ? g.constant_ints({*k.constant})
                              : g.op("Reshape", {k.value, g.constant_ints({1})});
  if (g.opset() >= 11)
    return g.op_n("TopK", {x, kv}, {{"axis", dim}, {"largest", int64_t{largest}}}, 2);
  return g.op_n("TopK", {x, kv}, {{"axis", dim}}, 2);
}
TONNX_SYMBOLIC("aten::topk", 9,
               [](SymbolicContext& g, Value* x, RuntimeInt k, int64_t dim, bool largest, bool) {
                 return topk(g, x, k, arg_dim(g, 0, dim), largest);
               });
// The size of input 0's dim `dim` as TopK's K: known, or read at run time (a size that
// depends on data: topk(x, int(k)) before the sort).
RuntimeInt whole_dim(SymbolicContext& g, int64_t dim) {
  if (auto n = known_size(g, 0, dim)) return RuntimeInt{*n, nullptr};
  return RuntimeInt{std::nullopt, dim_size(g, 0, dim)};
}
// sort(self, dim, descending): TopK over the whole dim. Ties may order differently.
TONNX_SYMBOLIC("aten::sort", 9, [](SymbolicContext& g) -> Outputs {
  int64_t dim = norm_dim(g, g.i(g.num_inputs() == 4 ? 2 : 1), g.rank(0));
  bool descending = g.b(g.num_inputs() == 4 ? 3 : 2);
  return topk(g, g.input(0), whole_dim(g, dim), dim, descending);
});
// argsort(self, dim, descending) or argsort.stable(self, stable, dim, descending): sort's
// indices. Ties may order differently from torch's (stable) order.
TONNX_SYMBOLIC("aten::argsort", 9, [](SymbolicContext& g) -> Outputs {
  size_t a = g.num_inputs() == 4 ? 2 : 1;
  int64_t dim = norm_dim(g, g.i(a), g.rank(0));
  Outputs both = topk(g, g.input(0), whole_dim(g, dim), dim, g.b(a + 1));
  return both.values.at(1);
});

}  // namespace
}  // namespace tonnx::sym
