// Reductions (src/symbolic/reduce.cpp): sum, mean, prod, amax/amin, max/min, argmax/argmin,
// norms, var/std, logsumexp and cumsum.
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class ReduceSymbolic : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ReduceSymbolic, ::testing::Values(11, 13, 17));

TEST_P(ReduceSymbolic, Reductions) {
  Tensor x = torch::randn({2, 3, 4});
  check([](Tensor x) { return std::make_tuple(x.sum(), x.mean(), x.prod()); }, {x * 0.5},
        "reduce_all");
  check(
      [](Tensor x) {
        return std::make_tuple(x.sum({-1}), x.mean(at::IntArrayRef{0, 2}, true), x.prod(1, true));
      },
      {x}, "reduce_dims");
  check([](Tensor x) { return x.sum(1, false, torch::kDouble); }, {x}, "sum_dtype");
  check([](Tensor x) { return x.sum(); }, {torch::tensor({1L, 2L, 3L})}, "sum_int64");
  check([](Tensor x) { return x.sum(0); }, {torch::ones({0, 3})}, "sum_empty");
  check(
      [](Tensor x) {
        return std::make_tuple(x.amax({1, 2}), x.amin(-1, true), x.max(), x.min());
      },
      {x}, "amax_amin");
  check([](Tensor x) { return x.max(1); }, {x}, "max_dim_indices");
  check([](Tensor x) { return x.min(-1, true); }, {x}, "min_dim_keep");
  check([](Tensor x) { return std::make_tuple(x.argmax(), x.argmin(1), x.argmax(-1, true)); }, {x},
        "argmax");
  check([](Tensor x) { return std::make_tuple(x.norm(), x.norm(1, {1}), x.norm(3, {-1}, true)); },
        {x}, "norm");
  check(
      [](Tensor x) {
        return torch::linalg_vector_norm(x, INFINITY, at::IntArrayRef{1}, false, c10::nullopt);
      },
      {x}, "norm_inf");
  check(
      [](Tensor x) {
        return std::make_tuple(x.var(), x.std(1), x.var(at::IntArrayRef{0, 2}, false, true));
      },
      {x}, "var_std");
  check([](Tensor x) { return torch::logsumexp(x, {1}); }, {x}, "logsumexp");
  check([](Tensor x) { return torch::cumsum(x, -1) + torch::cumsum(x, 0); }, {x}, "cumsum");
  check([](Tensor x) { return torch::cumsum(x, 0); }, {torch::tensor({1L, -2L, 5L})},
        "cumsum_int64");
}

}  // namespace
}  // namespace tonnx::test
