// Linear algebra: linear, addmm, mm, bmm, matmul, t.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

Value* transpose2d(SymbolicContext& g, Value* w) {
  return g.op("Transpose", {w}, {{"perm", ir::Ints{1, 0}}});
}

// linear(input, weight, bias): Gemm for matrices, MatMul + Add otherwise.
TONNX_SYMBOLIC(
    "aten::linear", 9,
    [](SymbolicContext& g, Value* x, Value* w, std::optional<Value*> b) -> Outputs {
      if (g.rank(0) == 2 && b)
        return g.op("Gemm", {x, w, *b}, {{"alpha", 1.0f}, {"beta", 1.0f}, {"transB", int64_t{1}}});
      Value* y = g.op("MatMul", {x, transpose2d(g, w)});
      return b ? g.op("Add", {y, *b}) : y;
    });

// addmm(self, mat1, mat2, beta, alpha) = beta * self + alpha * mat1 @ mat2
TONNX_SYMBOLIC("aten::addmm", 9,
               [](SymbolicContext& g, Value* c, Value* a, Value* b, double beta, double alpha) {
                 return g.op("Gemm", {a, b, c}, {{"alpha", alpha}, {"beta", beta}});
               });

TONNX_SYMBOLIC("aten::t", 9, [](SymbolicContext& g, Value* x) -> Outputs {
  if (g.rank(0) < 2) return g.op("Identity", {x});
  return transpose2d(g, x);
});

TONNX_SYMBOLIC("aten::mm", 9, [](SymbolicContext& g, Value* a, Value* b) {
  return g.op("MatMul", {a, b});
});
TONNX_SYMBOLIC("aten::bmm", 9, [](SymbolicContext& g, Value* a, Value* b) {
  return g.op("MatMul", {a, b});
});
TONNX_SYMBOLIC("aten::matmul", 9, [](SymbolicContext& g, Value* a, Value* b) {
  return g.op("MatMul", {a, b});
});

}  // namespace
}  // namespace tonnx::sym
