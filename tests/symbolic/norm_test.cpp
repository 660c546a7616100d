// Normalization (src/symbolic/norm.cpp): batch_norm in eval, without affine, without running
// statistics and of varying sizes; layer_norm, group_norm, instance_norm (with running
// statistics too), native_layer_norm and _weight_norm.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "script_check.h"
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

class NormOps : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, NormOps, ::testing::Values(11, 13, 17));

TEST_P(NormOps, Normalizations) {
  Tensor x = torch::randn({2, 6, 4, 5});
  auto w = torch::rand({5}) + 0.5, b = torch::randn({5});
  check(
      [w, b](Tensor x) { return F::layer_norm(x, F::LayerNormFuncOptions({5}).weight(w).bias(b)); },
      {x}, "layer_norm");
  check(
      [](Tensor x) {
        return F::layer_norm(x, F::LayerNormFuncOptions({4, 5}).eps(1e-3));
      },
      {x}, "layer_norm_2d_noaffine");
  auto gw = torch::rand({6}), gb = torch::randn({6});
  check([gw,
         gb](Tensor x) { return F::group_norm(x, F::GroupNormFuncOptions(3).weight(gw).bias(gb)); },
        {x}, "group_norm");
  check(
      [gw, gb](Tensor x) {
        return F::instance_norm(x, F::InstanceNormFuncOptions().weight(gw).bias(gb));
      },
      {x}, "instance_norm");
}

class NormParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, NormParity, ::testing::Values(9, 11, 13, 17));

TEST_P(NormParity, NormalizationEntryPoints) {
  Tensor x = torch::randn({2, 3, 4});
  check_script(R"(
def forward(self, x, w, b):
    y, mean, rstd = torch.native_layer_norm(x, [3, 4], w, b, 1e-5)
    z, m2, r2 = torch.native_layer_norm(x, [4], None, None, 1e-3)
    return y, mean, rstd, z, m2, r2
)",
               {x, torch::randn({3, 4}), torch::randn({3, 4})}, opset(), "native_layer_norm");
  Tensor v = torch::randn({4, 3, 2});
  check_script(
      R"(
def forward(self, v, g0, g1, gv):
    return torch._weight_norm(v, g0, 0), torch._weight_norm(v, g1, 1), torch._weight_norm(v[0, 0], gv, 0), torch._weight_norm(v, g1.sum(), -1)
)",
      {v, torch::rand({4, 1, 1}) + 0.5, torch::rand({1, 3, 1}) + 0.5, torch::rand({2}) + 0.5},
      opset(), "weight_norm");
}

class NormComposite : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, NormComposite, ::testing::Values(9, 13, 17));

TEST_P(NormComposite, InstanceNormRunningStats) {
  Tensor x = torch::randn({2, 3, 5});
  Tensor mean = torch::randn({3}), var = torch::rand({3}) + 0.5, w = torch::randn({3});
  check(
      [=](Tensor a) {
        return F::instance_norm(
            a,
            F::InstanceNormFuncOptions().running_mean(mean).running_var(var).weight(w).eps(1e-3));
      },
      {x}, "instance_norm_running_stats");
}

// batch_norm of an input whose batch and length vary (dynamic axes, or a scripted block):
// only the rank is needed, and the channel count only to make a missing weight or bias.
TEST(NormScripted, BatchNormOfVaryingSizes) {
  ExportOptions opt;
  opt.input_names = {"x", "w", "b", "rm", "rv"};
  opt.dynamic_axes["x"] = {{0, "n"}, {2, "len"}};
  test::expect_script_matches(R"(
def forward(self, x, w, b, rm, rv):
    y = torch.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, False)
    z = torch.batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5, False)
    return y, z
)",
                              {torch::randn({3, 4, 5}), torch::randn({4}), torch::randn({4}),
                               torch::randn({4}), torch::rand({4}) + 0.5},
                              opt, "batch_norm_varying_sizes");
}

}  // namespace
}  // namespace tonnx::test
