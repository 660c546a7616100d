// Normalization (src/symbolic/norm.cpp): batch_norm in eval, without affine and without
// running statistics.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class NormSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, NormSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(NormSymbolic, BatchNormEvalAndNoAffine) {
  torch::nn::BatchNorm2d bn(3);
  torch::nn::BatchNorm1d bn1(torch::nn::BatchNorm1dOptions(4).affine(false));
  {
    torch::NoGradGuard g;
    bn->running_mean.uniform_(-1, 1);
    bn->running_var.uniform_(0.5, 2);
    bn->weight.uniform_(0.5, 2);
    bn1->running_mean.uniform_(-1, 1);
  }
  bn->eval();
  bn1->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  expect_export_matches(make_traceable(bn), {torch::randn({2, 3, 4, 5})}, opt,
                        "bn2d" + std::to_string(opset()));
  expect_export_matches(make_traceable(bn1), {torch::randn({5, 4})}, opt,
                        "bn1d_noaffine" + std::to_string(opset()));
}

TEST_P(NormSymbolic, BatchNormWithoutRunningStats) {
  torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(3).track_running_stats(false));
  bn->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  expect_export_matches(make_traceable(bn), {torch::randn({4, 3, 2, 2})}, opt,
                        "bn_batchstats" + std::to_string(opset()));
}

}  // namespace
}  // namespace tonnx::test
