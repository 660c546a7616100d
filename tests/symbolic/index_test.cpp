// Indexing (src/symbolic/index.cpp, and tensor.cpp's positional ops): index and index_put,
// index_select, gather, scatter, select, narrow, roll, flip, masked_fill; masks among several
// indices, indices past the leading dims, constant index lists of scripted code.
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "script_check.h"
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

class IndexComposite11 : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, IndexComposite11, ::testing::Values(11, 16, 17));

// Several indices of which some are bool masks: each mask indexes with its nonzero()
// coordinates (torch.onnx's test_input_mask_model); casting it to 0/1 would be wrong.
TEST_P(IndexComposite11, MasksAmongSeveralIndices) {
  Tensor y = torch::randn({4, 4});
  Tensor m1 = torch::tensor({true, false, false, false});
  Tensor m2 = torch::tensor({true, false, true, true});
  using torch::indexing::TensorIndex;
  check(
      [](Tensor v, Tensor a, Tensor b) {
        v = v.clone();
        v.index_put_({a, b}, 0.5);
        return v;
      },
      {y, m1, m2}, "index_put_two_masks");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        return v.index({a, b});
      },
      {y, m1, m2}, "index_two_masks");
  check(
      [](Tensor v, Tensor a, Tensor i) {
        return v.index({a, i});
      },
      {torch::randn({3, 4, 2}), torch::tensor({false, true, true}), torch::tensor({3L, -1L})},
      "index_mask_and_ints");
  check(
      [](Tensor v, Tensor a) {
        v = v.clone();
        v.index_put_({a, torch::tensor({1L})}, torch::tensor(7.f));
        return v;
      },
      {torch::zeros({3, 2}), torch::tensor({true, false, true})}, "index_put_mask_and_int");
}

// Tensor indices past the leading dims: adjacent ones put the broadcast dims where the first
// index was (x[:, i, j]), separated ones put them first (x[i, :, j]); a rank-2 mask after a
// slice; index_put through the same layouts; a constant uint8 mask (a mask, not indices).
TEST_P(IndexComposite11, IndicesPastTheLeadingDims) {
  using torch::indexing::Ellipsis;
  using torch::indexing::Slice;
  Tensor x = torch::randn({3, 4, 5, 6});
  Tensor i = torch::tensor({{0L, 2L}, {1L, -1L}}), j = torch::tensor({4L, 0L});
  check(
      [](Tensor v, Tensor a, Tensor b) {
        return v.index({Slice(), a, b});
      },
      {x, i, j}, "index_adjacent");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        return v.index({a, Slice(), b});
      },
      {x, i, j}, "index_separated");
  check([](Tensor v, Tensor b) { return v.index({Ellipsis, b}); }, {x, j}, "index_ellipsis");
  Tensor mask = torch::rand({4, 5}) > 0.5;
  check([](Tensor v, Tensor m) { return v.index({Slice(), m}); }, {x, mask}, "index_mask_2d");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        v = v.clone();
        v.index_put_({Slice(), a, b}, torch::arange(6).to(torch::kFloat));
        return v;
      },
      {x, i, j}, "index_put_adjacent");
  check(
      [](Tensor v, Tensor a, Tensor b) {
        v = v.clone();
        v.index_put_({a, Slice(), b}, -1.5);
        return v;
      },
      {x, i, j}, "index_put_separated");
  check(
      [](Tensor v, Tensor b) {
        v = v.clone();
        v.index_put_({Ellipsis, b}, 2.f);
        return v;
      },
      {x, j}, "index_put_ellipsis");
  check(
      [](Tensor v) {
        return v.index({torch::tensor({0, 1, 0}, torch::kByte)});
      },
      {x}, "index_uint8_constant_mask");
  // index_select with a 0-d index keeps the dim; x.T of a 0-d tensor; einsum of bools.
  check([](Tensor v, Tensor k) { return torch::index_select(v, 1, k); }, {x, torch::tensor(2L)},
        "index_select_0d");
  check([](Tensor v) { return v.numpy_T(); }, {torch::tensor(-4.f)}, "numpy_T_0d");
  if (GetParam() >= 12)
    check(
        [](Tensor b) {
          return std::make_tuple(torch::einsum("ij->ji", {b}), torch::einsum("ii->i", {b}));
        },
        {torch::rand({3, 3}) > 0.5}, "einsum_bool");
}

class IndexParity11 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, IndexParity11, ::testing::Values(11, 16, 17));

// A constant index list folds into one Tensor?[] constant: still an index (it was once read as
// "no index" and exported as Identity, a silently different model).
TEST_P(IndexParity11, ConstantIndexLists) {
  check_script(R"(
def forward(self, x):
    return x[torch.tensor([True, False, True])], x[:, torch.tensor([0, 2])], x[torch.tensor([2, 0]), 1:]
)",
               {torch::randn({3, 4})}, opset(), "constant_index_lists");
}

}  // namespace
}  // namespace tonnx::test
