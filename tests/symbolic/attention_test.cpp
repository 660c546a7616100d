// Attention and sliding windows (src/symbolic/attention.cpp): LibTorch's native multi-head
// attention fast path, Tensor.unfold and im2col (F::unfold).
// Each case exports a small function and checks tonnx's backend and ONNX Runtime against
// LibTorch eager.
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class AttentionSymbolic : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, AttentionSymbolic, ::testing::Values(11, 13, 17));

TEST_P(AttentionSymbolic, NativeMultiHeadAttentionFastPath) {
  // The fused op PyTorch records for MultiheadAttention in eval; torch.onnx 1.13 has no symbolic
  // for it.
  int64_t e = 8, h = 2;
  Tensor qkv_w = torch::randn({3 * e, e}) * 0.3, qkv_b = torch::randn({3 * e}) * 0.1;
  Tensor proj_w = torch::randn({e, e}) * 0.3, proj_b = torch::randn({e}) * 0.1;
  auto mha = [=](Tensor q, Tensor mask) {
    auto [out, w] = torch::_native_multi_head_attention(q, q, q, e, h, qkv_w, qkv_b, proj_w, proj_b,
                                                        mask, true, true, 1);
    return std::make_tuple(out, w);
  };
  Tensor mask = torch::tensor({{false, false, false, true}, {false, false, false, false}});
  check(mha, {torch::randn({2, 4, e}), mask}, "native_mha", Tolerance{1e-3, 1e-5});
  auto no_weights = [=](Tensor q) {
    return std::get<0>(torch::_native_multi_head_attention(q, q, q, e, h, qkv_w, qkv_b, proj_w,
                                                           proj_b, {}, false));
  };
  check(no_weights, {torch::randn({3, 5, e})}, "native_mha_no_weights");
}

// Where a symbolic has an opset-9 form too.
class AttentionOps9 : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, AttentionOps9, ::testing::Values(9, 12, 17));

TEST_P(AttentionOps9, UnfoldAndIm2col) {
  Tensor x = torch::randn({2, 9, 3});
  check([](Tensor x) { return x.unfold(1, 3, 2); }, {x}, "unfold");
  check([](Tensor x) { return x.unfold(-1, 2, 1); }, {x}, "unfold_last");
  Tensor img = torch::randn({1, 2, 6, 7});
  check(
      [](Tensor x) {
        return F::unfold(x, F::UnfoldFuncOptions({2, 3}).stride(2).padding(1).dilation({1, 2}));
      },
      {img}, "im2col");
}

}  // namespace
}  // namespace tonnx::test
