// Creation (src/symbolic/creation.cpp): zeros, ones, full, arange, triu and tril, and topk and
// sort.
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class CreationSymbolic : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, CreationSymbolic, ::testing::Values(11, 13, 17));

TEST_P(CreationSymbolic, CreationTriangularTopkSort) {
  Tensor x = torch::randn({3, 5});
  check(
      [](Tensor x) {
        return x + torch::arange(5) + torch::arange(1, 6, 2).sum() + torch::ones({5}) * 2 +
               torch::zeros({3, 1});
      },
      {x}, "creation");
  check([](Tensor x) { return x + torch::full({1, 5}, 0.5); }, {x}, "full");
  check(
      [](Tensor x) {
        return std::make_tuple(torch::triu(x), torch::tril(x, -1), torch::triu(x, 2));
      },
      {x}, "triu_tril");
  check([](Tensor x) { return torch::tril(x); }, {torch::randn({2, 4, 4})}, "tril_batched");
  check([](Tensor x) { return x.topk(2, 1); }, {x}, "topk");
  check([](Tensor x) { return x.topk(3, 0, false); }, {x}, "topk_smallest");
  check([](Tensor x) { return x.sort(-1, true); }, {x}, "sort");
}

}  // namespace
}  // namespace tonnx::test
