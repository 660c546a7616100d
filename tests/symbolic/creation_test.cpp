// Creation (src/symbolic/creation.cpp): zeros, ones, full, arange, triu and tril, and topk and
// sort, argsort; in scripted code arange(out=), the new_* ops and topk with k computed at run
// time.
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "script_check.h"
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

class CreationComposite : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, CreationComposite, ::testing::Values(9, 13, 17));

TEST_P(CreationComposite, SortsAndSplits) {
  Tensor x = torch::randperm(24).to(torch::kFloat).reshape({2, 3, 4});
  check([](Tensor a) { return torch::argsort(a, 1, true); }, {x}, "argsort_desc");
  if (GetParam() >= 11) {  // ascending: TopK's `largest` is opset 11
    check([](Tensor a) { return torch::argsort(a, -1, false); }, {x}, "argsort");
    check([](Tensor a) { return torch::argsort(a, 0, false); }, {torch::tensor({5L, -3L, 9L, 0L})},
          "argsort_int");
  }
  check([](Tensor a) { return a.unsafe_chunk(3, -1); }, {x}, "unsafe_chunk");
  check([](Tensor a) { return a.unsafe_split_with_sizes({1, 3}, 2); }, {x}, "unsafe_split_sizes");
}

class CreationParity11 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, CreationParity11, ::testing::Values(11, 16, 17));

// arange(..., out=t): t's contents and shape become the result, in t's dtype.
TEST_P(CreationParity11, ArangeOut) {
  check_script(R"(
def forward(self, x, n):
    a = torch.zeros([3])
    torch.arange(5, out=a)
    b = x.clone()
    torch.arange(1.0, 3.0, 0.5, out=b)
    c = torch.zeros([2], dtype=4)
    torch.arange(int(n), out=c)
    return a * 2, b, x, c
)",
               {torch::randn({4}), torch::tensor(6L)}, opset(), "arange_out");
}

// F.pad is aten::pad in Python torch 1.13's scripts (every mode but circular), and the
// new_* creation ops take self's dtype.
TEST(CreationScripted, PadAndNewTensors) {
  expect_script_matches(R"JIT(
def forward(self, x, n):
    a = torch.pad(x, [1, 2], "constant", None)
    b = torch.pad(x, [2, 1, 1, 0], "reflect", None)
    c = torch.pad(x, [0, 3, 1, 0], "replicate", None)
    d = torch.pad(x, [1, 1, 1, 1], "constant", -2.5)
    e = x.new_zeros([2, 3]) + x.new_ones([2, 3]) * 2 + x.new_full([2, 3], 7.0)
    f = n.new_zeros([4])
    return a, b, c, d, e, f, x.new_empty([0, 3]).size(0)
)JIT",
                        {torch::randn({1, 2, 3, 4}), torch::tensor({1L, 2L})}, "script_pad_new");
  // new_empty's contents are undefined: filled before use, at a size computed at run time.
  expect_script_matches(R"JIT(
def forward(self, x):
    return x.new_empty([x.size(0), 3]).fill_(2.0) + x[:, :3]
)JIT",
                        {torch::randn({4, 5})}, "script_new_empty", 17, /*dynamic_batch=*/true);
}

// topk with k computed at run time, nonzero and where(condition): torchvision's RPN.
TEST(CreationScripted, TopkRuntimeKNonzeroWhere) {
  expect_script_matches(R"JIT(
def forward(self, x):
    k = min(x.size(0), 3)
    v, i = torch.topk(x, k, 0)
    nz = torch.nonzero(x > 0.5)
    w = torch.where(x > 0.5)
    return v, i, nz, w[0] * 10 + w[1]
)JIT",
                        {torch::randn({5, 4})}, "script_topk_nonzero", 17, /*dynamic_batch=*/true);
}

}  // namespace
}  // namespace tonnx::test
