// Sets and bags (src/symbolic/sets.cpp): bucketize, unique (_unique, _unique2, unique_dim),
// nonzero_numpy and embedding_bag, with NaN, infinities, empty bags and integers. Modules are
// scripted from source (a C++ trace would decompose several of these ops), exported at several
// opsets, and ONNX Runtime and tonnx's backend are checked against LibTorch.
#include "script_check.h"
#include "special_values.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class SetsParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, SetsParity, ::testing::Values(9, 11, 13, 17));

TEST_P(SetsParity, Bucketize) {
  Tensor b = torch::tensor({1.f, 3.f, 5.f, 7.f});
  Tensor x = torch::tensor({{kNan, 0.f, 1.f, 3.f}, {4.f, 7.f, kInf, -kInf}});
  check_script(R"(
def forward(self, x, b):
    return torch.bucketize(x, b), torch.bucketize(x, b, right=True), torch.bucketize(x, b, out_int32=True)
)",
               {x, b}, opset(), "bucketize");
  check_script(R"(
def forward(self, x, b):
    return torch.bucketize(x, b, right=True), torch.bucketize(3, b)
)",
               {torch::tensor({-2L, 3L, 9L, 5L}), torch::tensor({0.5, 3.0, 5.0})}, opset(),
               "bucketize_int");
  check_script(R"(
def forward(self, x, b):
    return torch.bucketize(x, b)
)",
               {torch::zeros({0, 3}), b}, opset(), "bucketize_empty");
}

// Ops of opset 11 and up: unique, nonzero as a tuple, embedding_bag with offsets.
class SetsParity11 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, SetsParity11, ::testing::Values(11, 16, 17));

TEST_P(SetsParity11, Unique) {
  check_script(R"(
def forward(self, x, f):
    v, inv, cnt = torch._unique2(x, True, True, True)
    w, inv2 = torch._unique(f, True, True)
    return v, inv, cnt, w, inv2
)",
               {torch::tensor({{3L, 1L, 3L}, {-2L, 5L, 1L}}),
                torch::tensor({0.5f, -1.f, 0.5f, kInf, -0.f, 0.f})},
               opset(), "unique");
  check_script(R"(
def forward(self, x):
    v, inv, cnt = torch.unique_dim(x, 0, True, True, True)
    w, inv2, cnt2 = torch.unique_dim(x, -1, True, False, True)
    return v, inv, cnt, w, cnt2
)",
               {torch::tensor({{1L, 2L, 1L}, {0L, 1L, 0L}, {1L, 2L, 1L}})}, opset(), "unique_dim");
  check_script(R"(
def forward(self, x):
    v, inv, cnt = torch._unique2(x, True, False, True)
    return v, cnt
)",
               {torch::zeros({0}, torch::kLong)}, opset(), "unique_empty");
}

TEST_P(SetsParity11, NonzeroAsTuple) {
  Tensor x = torch::tensor({{0.f, 1.5f, 0.f}, {kNan, 0.f, -2.f}});
  check_script(R"(
def forward(self, x):
    r, c = torch.nonzero_numpy(x)
    (e,) = torch.nonzero_numpy(x[0] > 5)
    return r, c, e
)",
               {x}, opset(), "nonzero_numpy");
}

TEST_P(SetsParity11, EmbeddingBag) {
  Tensor w = torch::randn({10, 4});
  Tensor idx = torch::tensor({1L, 2L, 4L, 5L, 4L, 3L, 2L, 9L});
  Tensor off = torch::tensor({0L, 2L, 2L, 5L});  // bag 1 is empty
  Tensor psw = torch::rand({8});
  // With include_last_offset, LibTorch 1.13's max mode writes out of bounds (heap corruption)
  // when indices run past the last offset; those indices are ignored by sum and the export.
  Tensor off_last = torch::tensor({0L, 2L, 2L, 5L, 8L});
  // mode 0 sum, 1 mean, 2 max; include_last_offset; padding_idx 4; per_sample_weights.
  check_script(R"(
def forward(self, w, idx, off, psw, off_last):
    a = torch.embedding_bag(w, idx, off, False, 0, False, None, False, None)[0]
    b = torch.embedding_bag(w, idx, off, False, 1, False, None, False, None)[0]
    c = torch.embedding_bag(w, idx, off, False, 2, False, None, False, None)[0]
    d = torch.embedding_bag(w, idx, off, False, 0, False, psw, True, None)[0]
    e = torch.embedding_bag(w, idx, off, False, 1, False, None, False, 4)[0]
    f = torch.embedding_bag(w, idx, off_last, False, 2, False, None, True, 4)[0]
    g = torch._embedding_bag(w, idx, off, False, 1, False, None, False, -1)[0]
    return a, b, c, d, e, f, g
)",
               {w, idx, off, psw, off_last}, opset(), "embedding_bag_offsets");
  // F.embedding_bag of 2-D indices [bags, n]: flattened, with offsets 0, n, 2n...
  check_script(R"(
def forward(self, w, idx, psw):
    off = torch.arange(0, idx.numel(), idx.size(1))
    flat = idx.reshape(-1)
    a = torch.embedding_bag(w, flat, off, False, 0, False, psw.reshape(-1), False, None)[0]
    b = torch.embedding_bag(w, flat, off, False, 1, False, None, False, 4)[0]
    c = torch.embedding_bag(w, flat, off, False, 2, False, None, False, 4)[0]
    d = torch.embedding_bag(w, flat, off, False, 2, False, None, False, None)[0]
    return a, b, c, d
)",
               {w, torch::tensor({{1L, 4L, 4L}, {4L, 4L, 4L}, {0L, 9L, 2L}}), torch::rand({3, 3})},
               opset(), "embedding_bag_equal_bags");
}

}  // namespace
}  // namespace tonnx::test
