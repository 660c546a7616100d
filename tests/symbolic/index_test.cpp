// Indexing (src/symbolic/index.cpp, and tensor.cpp's positional ops): index and index_put,
// index_select, gather, scatter, select, narrow, roll, flip, masked_fill.
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class IndexSymbolic : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, IndexSymbolic, ::testing::Values(11, 13, 17));

TEST_P(IndexSymbolic, IndexingOps) {
  Tensor x = torch::randn({4, 5, 3});
  check([](Tensor x) { return x.select(1, -1) + x.select(0, 2).sum(); }, {x}, "select");
  check([](Tensor x) { return x.slice(1, 1, -1, 2); }, {x}, "slice_step");
  check([](Tensor x) { return x.slice(0, -3); }, {x}, "slice_negative");
  check([](Tensor x) { return x.narrow(2, 1, 2) + x.narrow(2, -2, 2); }, {x}, "narrow");
  check([](Tensor x, Tensor i) { return x.index_select(1, i); }, {x, torch::tensor({4L, 0L, 0L})},
        "index_select");
  check([](Tensor x, Tensor i) { return x.gather(1, i); }, {x, torch::randint(0, 5, {4, 2, 3})},
        "gather");
  check([](Tensor x, Tensor i, Tensor s) { return x.scatter(0, i, s); },
        {torch::zeros({3, 5}), torch::tensor({{0L, 1L, 2L, 0L, 1L}}), torch::randn({1, 5})},
        "scatter");
  check([](Tensor x, Tensor i) { return x.index({i}); }, {x, torch::tensor({3L, -1L, 0L})},
        "index_tensor");
  check(
      [](Tensor x, Tensor i) {
        return x.index({torch::indexing::Slice(), i});
      },
      {x, torch::tensor({{1L, 2L}, {0L, 4L}})}, "index_second_dim");
  check([](Tensor x, Tensor m) { return x.index({m}); },
        {x, torch::tensor({true, false, true, true})}, "index_bool_vector");
  check([](Tensor x) { return x.index({x > 0}); }, {x}, "index_bool_mask");
  check(
      [](Tensor x, Tensor i, Tensor j) {
        return x.index({i, j});
      },
      {x, torch::tensor({0L, 3L}), torch::tensor({1L, 4L})}, "index_two");
  check([](Tensor x, Tensor i, Tensor v) { return x.index_put({i}, v); },
        {x, torch::tensor({1L, 3L}), torch::randn({2, 5, 3})}, "index_put");
  check([](Tensor x) { return x.masked_fill(x < 0, 0).index_put({x > 1}, torch::tensor(7.f)); },
        {x}, "index_put_mask");
  check([](Tensor x) { return x.flip({0, -1}); }, {x}, "flip");
  check(
      [](Tensor x) {
        return x.roll({1, -2}, {0, 1}) + x.roll(3).reshape({4, 5, 3});
      },
      {x}, "roll");
  check([](Tensor x) { return x.repeat({2, 1, 1, 3}); }, {x}, "repeat");
}

}  // namespace
}  // namespace tonnx::test
