// Losses (src/symbolic/loss.cpp): kl_div, nll_loss (and its aten entry points), cross_entropy
// and binary_cross_entropy_with_logits, with weights, ignore_index and every reduction.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager.
#include "script_check.h"
#include "special_values.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class LossParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, LossParity, ::testing::Values(9, 11, 13, 17));

TEST_P(LossParity, KlDivAndTrueDivide) {
  Tensor logp = torch::log_softmax(torch::randn({3, 4}), 1);
  Tensor t = torch::softmax(torch::randn({3, 4}), 1);
  t.index_put_({0, 1}, 0.f);
  check_script(R"(
def forward(self, x, t):
    return torch.kl_div(x, t, 0), torch.kl_div(x, t, 1), torch.kl_div(x, t, 2), torch.kl_div(x, t.log(), 0, log_target=True)
)",
               {logp, t}, opset(), "kl_div");
  check_script(R"(
def forward(self, x, i):
    return torch.true_divide(i, 4), torch.true_divide(x, i), torch.div(i, 3)
)",
               {torch::tensor({-3.f, -0.5f, 0.f, 2.f, kInf, kNan}),
                torch::tensor({7L, -3L, 2L, 0L, 1L, 5L})},
               opset(), "true_divide");
}

class LossComposite12 : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, LossComposite12, ::testing::Values(12, 17));

TEST_P(LossComposite12, Losses) {
  Tensor logp = torch::log_softmax(torch::randn({4, 5}), 1);
  Tensor target = torch::tensor({1L, 0L, 4L, 1L});
  Tensor w = torch::rand({5}) + 0.1;
  check([](Tensor p, Tensor t) { return F::nll_loss(p, t); }, {logp, target}, "nll_loss_mean");
  check(
      [=](Tensor p, Tensor t) {
        return F::nll_loss(p, t, F::NLLLossFuncOptions().weight(w).reduction(torch::kSum));
      },
      {logp, target}, "nll_loss_weight_sum");
  check(
      [](Tensor p, Tensor t) {
        return F::nll_loss(p, t, F::NLLLossFuncOptions().ignore_index(1).reduction(torch::kNone));
      },
      {logp, target}, "nll_loss_ignore_none");
  check([](Tensor p, Tensor t) { return F::nll_loss(p, t); },
        {torch::log_softmax(torch::randn({2, 3, 4, 5}), 1), torch::randint(0, 3, {2, 4, 5})},
        "nll_loss_2d");
  // The aten entry points F::nll_loss dispatches to (a C++ trace records nll_loss_nd).
  check([](Tensor p, Tensor t) { return torch::nll_loss(p, t, {}, at::Reduction::Sum, 0); },
        {logp, target}, "aten_nll_loss");
  check([](Tensor p, Tensor t) { return torch::nll_loss2d(p, t, {}, at::Reduction::None, -100); },
        {torch::log_softmax(torch::randn({2, 3, 4, 5}), 1), torch::randint(0, 3, {2, 4, 5})},
        "aten_nll_loss2d");
  check([](Tensor x, Tensor t) { return F::cross_entropy(x, t); }, {torch::randn({4, 5}), target},
        "cross_entropy");
  check(
      [=](Tensor x, Tensor t) {
        return F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(w).ignore_index(4));
      },
      {torch::randn({4, 5}), target}, "cross_entropy_weight_ignore");
  Tensor logits = torch::tensor({-30.f, -1.f, 0.f, 2.f, 40.f});
  Tensor y = torch::tensor({0.f, 1.f, 0.5f, 1.f, 0.f});
  check([](Tensor x, Tensor t) { return F::binary_cross_entropy_with_logits(x, t); }, {logits, y},
        "bce_logits");
  check(
      [](Tensor x, Tensor t) {
        return F::binary_cross_entropy_with_logits(x, t,
                                                   F::BinaryCrossEntropyWithLogitsFuncOptions()
                                                       .pos_weight(torch::full({5}, 3.f))
                                                       .weight(torch::linspace(0.5, 1.5, 5))
                                                       .reduction(torch::kNone));
      },
      {logits, y}, "bce_logits_weights");
}

}  // namespace
}  // namespace tonnx::test
