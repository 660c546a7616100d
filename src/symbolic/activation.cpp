// Activations: relu, softmax, log_softmax, and the dropout family (identity in eval).
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

TONNX_SYMBOLIC("aten::relu", 9, [](SymbolicContext& g, Value* x) { return g.op("Relu", {x}); });

// softmax / log_softmax (self, dim, dtype)
Outputs softmax_like(SymbolicContext& g, const char* op) {
  Value* x = g.input(0);
  if (!g.is_none(2)) x = g.cast(x, g.output_scalar_type());
  int64_t rank = g.rank(0);
  int64_t dim = rank == 0 ? 0 : norm_dim(g, g.i(1), rank);
  if (rank == 0) return g.op("Identity", {x});
  if (g.opset() >= 13 || dim == rank - 1) return g.op(op, {x}, {{"axis", dim}});
  // Before opset 13 Softmax flattens everything after `axis` into one row: move dim last.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[dim], perm[rank - 1]);
  Value* t = g.op("Transpose", {x}, {{"perm", perm}});
  Value* y = g.op(op, {t}, {{"axis", rank - 1}});
  return g.op("Transpose", {y}, {{"perm", perm}});
}
TONNX_SYMBOLIC("aten::softmax", 9, [](SymbolicContext& g) { return softmax_like(g, "Softmax"); });
TONNX_SYMBOLIC("aten::log_softmax", 9,
               [](SymbolicContext& g) { return softmax_like(g, "LogSoftmax"); });
TONNX_SYMBOLIC("aten::_softmax", 9, [](SymbolicContext& g) { return softmax_like(g, "Softmax"); });
TONNX_SYMBOLIC("aten::_log_softmax", 9,
               [](SymbolicContext& g) { return softmax_like(g, "LogSoftmax"); });

// dropout(input, p, train): identity in eval; Dropout with training_mode from opset 12.
Outputs dropout(SymbolicContext& g) {
  Value* x = g.input(0);
  if (!g.b(2)) return x;
  if (g.opset() < 12) g.unsupported_below(12, "dropout in training mode");
  Value* ratio = g.constant_scalar(g.f(1), at::kFloat);
  Value* training = g.constant(at::scalar_tensor(true, at::kBool));
  return g.op_n("Dropout", {x, ratio, training}, {}, 2)[0];
}
TONNX_SYMBOLIC("aten::dropout", 9, dropout);
TONNX_SYMBOLIC("aten::feature_dropout", 9, dropout);
TONNX_SYMBOLIC("aten::alpha_dropout", 9, dropout);
TONNX_SYMBOLIC("aten::feature_alpha_dropout", 9, dropout);

}  // namespace
}  // namespace tonnx::sym
