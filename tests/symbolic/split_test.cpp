// Splitting and stacking (src/symbolic/split.cpp): split, split_with_sizes, chunk, unbind and
// stack, beside the shape ops they meet (transpose, permute, expand, squeeze, reshape).
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class SplitOps : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, SplitOps, ::testing::Values(11, 13, 17));

TEST_P(SplitOps, ShapeOps) {
  Tensor x = torch::randn({2, 3, 4});
  check([](Tensor x) { return x.transpose(0, -1) + 0; }, {x}, "transpose");
  check([](Tensor x) { return x.permute({2, 0, 1}); }, {x}, "permute");
  check([](Tensor x) { return x.unsqueeze(1).expand({-1, 5, -1, -1}); }, {x}, "expand");
  check([](Tensor x, Tensor y) { return x.expand_as(y); },
        {torch::randn({3, 1}), torch::randn({2, 3, 4})}, "expand_as");
  check([](Tensor x) { return x.split(2, 2); }, {x}, "split_int");
  check([](Tensor x) { return x.split_with_sizes({1, 3}, -1); }, {x}, "split_sizes");
  check([](Tensor x) { return x.chunk(2, 1); }, {x}, "chunk_uneven");
  check([](Tensor x) { return x.unbind(1); }, {x}, "unbind");
  check([](Tensor a, Tensor b) { return torch::stack({a, b}, -1); }, {x, x * 2}, "stack");
  check([](Tensor x) { return x.unsqueeze(-1).squeeze(-1).squeeze(); }, {torch::randn({1, 3, 1})},
        "squeeze_unsqueeze");
  check([](Tensor x) { return x.squeeze(1); }, {x}, "squeeze_noop");
  check([](Tensor x) { return x.flatten(1).reshape({-1}); }, {x}, "reshape_flat");
}

}  // namespace
}  // namespace tonnx::test
