// Shapes (src/symbolic/shape.cpp): flatten, view and reshape of every dtype, and a reshape that
// copies a non-contiguous input is not a view of it.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class ShapeSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ShapeSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(ShapeSymbolic, FlattenAllForms) {
  auto x = torch::randn({2, 3, 4, 5});
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1); }, {x}, opset(), "flatten1");
  expect_fn_matches([](Tensor x) { return torch::flatten(x); }, {x}, opset(), "flatten0");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1, 2); }, {x}, opset(), "flatten_mid");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, -2, -1); }, {x}, opset(),
                    "flatten_neg");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1); }, {torch::randn({0, 3, 2})},
                    opset(), "flatten_empty");
}

TEST_P(ShapeSymbolic, ViewReshapeInt64AndBool) {
  expect_fn_matches(
      [](Tensor x) {
        return x.view({-1, 6});
      },
      {torch::randn({2, 3, 4})}, opset(), "view");
  expect_fn_matches(
      [](Tensor x) {
        return x.reshape({4, -1, 2});
      },
      {torch::arange(24, torch::kLong)}, opset(), "reshape_int64");
  expect_fn_matches(
      [](Tensor x) {
        return x.reshape({3, 2});
      },
      {torch::tensor({true, false, true, true, false, false})}, opset(), "reshape_bool");
}

// reshape, flatten and contiguous copy a non-contiguous input: a later in-place write to the
// input must not reach the copy (it did: it was taken for a view), nor a write to the copy
// the input. A contiguous input is viewed, and the write reaches both.
TEST_P(ShapeSymbolic, ReshapeThatCopiesIsNotAView) {
  Tensor x = torch::tensor({-1.f, 2.f, 3.f, -4.f, 5.f, -6.f}).reshape({1, 2, 3});
  expect_fn_matches(
      [](Tensor x) {
        Tensor h = x * 1.0;
        Tensor feat = h.permute({0, 2, 1}).reshape({h.size(0), -1});  // a copy
        h.relu_();
        return std::vector<Tensor>{feat, h};
      },
      {x}, opset(), "reshape_copy");
  expect_fn_matches(
      [](Tensor x) {
        Tensor h = x * 1.0;
        h.t().flatten().mul_(0);  // writes into a copy only
        return h;
      },
      {torch::randn({3, 4})}, opset(), "flatten_copy");
  if (opset() >= 11)  // (a write into a selected row: ScatterElements, opset 11)
    expect_fn_matches(
        [](Tensor x) {
          Tensor h = x * 1.0;
          Tensor c = h.t().contiguous();  // a copy
          c[0].fill_(9);
          return std::vector<Tensor>{h, c};
        },
        {torch::randn({3, 4})}, opset(), "contiguous_copy");
  expect_fn_matches(
      [](Tensor x) {
        Tensor h = x * 1.0;
        Tensor v = h.reshape({-1});  // contiguous: a view
        v.add_(100);
        return std::vector<Tensor>{h, v};
      },
      {torch::randn({3, 4})}, opset(), "reshape_view");
}

}  // namespace
}  // namespace tonnx::test
