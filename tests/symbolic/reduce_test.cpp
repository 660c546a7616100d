// Reductions (src/symbolic/reduce.cpp): sum, mean, prod, amax/amin, max/min, argmax/argmin,
// norms (cdist, the linalg norms), var/std (and var_mean, std_mean), logsumexp and cumsum, of
// narrow integers and bools too.
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "script_check.h"
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

class ReduceParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ReduceParity, ::testing::Values(9, 11, 13, 17));

TEST_P(ReduceParity, DistancesAndNorms) {
  Tensor a = torch::randn({2, 3, 4}), b = torch::randn({2, 5, 4});
  check_script(R"(
def forward(self, a, b):
    return torch.cdist(a, b), torch.cdist(a, b, 1.0), torch.cdist(a, b, 0.0), torch.cdist(a[0], b[1], float('inf')), torch.cdist(a, b[:1], 3.0)
)",
               {a, b}, opset(), "cdist");
  Tensor m = torch::randn({3, 4, 5});
  check_script(R"(
def forward(self, m):
    a = torch.linalg_norm(m)
    b = torch.linalg_norm(m, 3.0, [1], True)
    c = torch.linalg_norm(m, 'fro', [-1, 0])
    d = torch.linalg_norm(m, float('inf'), [1, 2])
    e = torch.linalg_norm(m[0], -1.0)
    f = torch.linalg_matrix_norm(m, 1.0, [-2, -1], True)
    g = torch.linalg_matrix_norm(m, float('-inf'), [2, 0])
    h = torch.linalg_matrix_norm(m, 'fro')
    k = torch.linalg_norm(m[0, 0], 1.0)
    return a, b, c, d, e, f, g, h, k
)",
               {m}, opset(), "linalg_norms");
  expect_export_error(R"(
def forward(self, m):
    return torch.linalg_matrix_norm(m, 'nuc')
)",
                      {m}, opset(), "needs singular values");
}

class ReduceComposite : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ReduceComposite, ::testing::Values(9, 13, 17));

TEST_P(ReduceComposite, Statistics) {
  Tensor x = torch::randn({3, 4, 5});
  check([](Tensor a) { return torch::var_mean(a, {1}, true, true); }, {x}, "var_mean_keep");
  check([](Tensor a) { return torch::std_mean(a, {-1, 0}, false, false); }, {x}, "std_mean");
  check([](Tensor a) { return torch::var_mean(a); }, {x}, "var_mean_all");
  Tensor nan = torch::tensor({{1.f, NAN, 2.f}, {0.f, 1.f, 2.f}});
  check([](Tensor a) { return torch::std_mean(a, {1}); }, {nan}, "std_mean_nan");
}

class ReduceNumeric9 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ReduceNumeric9, ::testing::Values(9, 13, 17));

// Reductions and CumSum of bool, int8, uint8 and int16 (ONNX has no such ReduceSum/ReduceMax/
// CumSum before opset 18): computed in int32 and cast back, wrapping as LibTorch does.
TEST_P(ReduceNumeric9, NarrowIntegerReductions) {
  for (auto dt : {torch::kByte, torch::kChar, torch::kShort}) {
    Tensor a = torch::tensor({{100, 3, 127}, {90, -5, 0}}).to(dt);
    std::string n = std::string("reduce_") + c10::toString(dt);
    check(
        [dt](Tensor x) {
          return std::make_tuple(x.sum(dt), x.sum(1, true, dt), x.prod(0, false, dt));
        },
        {a}, n + "_sum_prod");
    check(
        [](Tensor x) {
          return std::make_tuple(x.amax(1), x.max(), x.min(0), x.amin({0, 1}), x.argmax(),
                                 x.argmin(1, true));
        },
        {a}, n + "_max_min");
    if (GetParam() >= 11)  // (CumSum: opset 11)
      check([dt](Tensor x) { return torch::cumsum(x, -1, dt); }, {a}, n + "_cumsum");
  }
  // any/all of uint8 give uint8 (0 or 1), as LibTorch does (the checker rejected them).
  check([](Tensor x) { return std::make_tuple(x.any(1), x.all(-1), x.any(), x.all()); },
        {torch::tensor({{0, 3, 0}, {0, 0, 0}, {1, 2, 255}}, torch::kByte)}, "any_all_uint8");
  Tensor b = torch::tensor({{true, false, false}, {false, false, false}});
  check([](Tensor x) { return std::make_tuple(x.max(), x.amin(1), x.max(0), x.min(1, true)); }, {b},
        "reduce_bool_max_min");
  check([](Tensor x) { return x.amax(0); }, {torch::zeros({0, 2}, torch::kBool).t()},
        "reduce_bool_empty");
}

}  // namespace
}  // namespace tonnx::test
