// Exports at opset_version 18 to 23 (src/export/pipeline.cpp: written at 17 by the symbolics,
// then converted by tonnx::convert_opset and judged by the backend's validation): the ops
// whose form changed (reductions' axes, Pad, Split, Resize, Softmax, LayerNormalization) and a
// small network, each file run on tonnx's backend and ONNX Runtime against LibTorch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tonnx/proto.h"

namespace tonnx::test {
namespace {

using torch::Tensor;
namespace F = torch::nn::functional;

class ExportAtNewOpsets : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(18); }
  template <typename Fn>
  void check(Fn f, std::vector<Tensor> in, const std::string& name) {
    std::string path = expect_fn_matches(f, in, GetParam(), name);
    onnx::ModelProto m = read_model_proto(path);
    int64_t imported = -1;
    for (const auto& o : m.opset_import())
      if (o.domain().empty()) imported = o.version();
    EXPECT_EQ(imported, GetParam()) << name;
  }
};
INSTANTIATE_TEST_SUITE_P(Opsets, ExportAtNewOpsets, ::testing::Values(18, 20, 23));

TEST_P(ExportAtNewOpsets, OpsWhoseFormChanged) {
  Tensor x = torch::randn({2, 3, 5, 4});
  check([](Tensor a) { return a.mean({1, -1}) + a.amax({2}, true).sum(); }, {x}, "reductions");
  check([](Tensor a) { return a.norm(2, {1}) + a.logsumexp(-1).sum(); }, {x}, "norms");
  check(
      [](Tensor a) {
        return F::pad(a, F::PadFuncOptions({1, 2, 0, 1}).value(-3.0));
      },
      {x}, "pad_constant");
  check(
      [](Tensor a) {
        return F::pad(a, F::PadFuncOptions({2, 1, 1, 2}).mode(torch::kReflect));
      },
      {x}, "pad_reflect");
  check(
      [](Tensor a) {
        auto parts = a.split(2, 2);
        return parts[0].sum() + parts[2] * 2;
      },
      {x}, "split");
  check([](Tensor a) { return torch::softmax(a, 1) + torch::log_softmax(a, -1); }, {x}, "softmax");
  check(
      [](Tensor a) {
        return F::interpolate(a, F::InterpolateFuncOptions()
                                     .scale_factor(std::vector<double>{2.0, 1.5})
                                     .mode(torch::kBilinear)
                                     .align_corners(false));
      },
      {x}, "resize");
  check([](Tensor a) { return F::layer_norm(a, F::LayerNormFuncOptions({4}).eps(1e-3)); }, {x},
        "layer_norm");
}

TEST_P(ExportAtNewOpsets, ASmallNetwork) {
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
                            torch::nn::BatchNorm2d(8), torch::nn::ReLU(),
                            torch::nn::AdaptiveAvgPool2d(1), torch::nn::Flatten(),
                            torch::nn::Linear(8, 4), torch::nn::Softmax(1));
  net->eval();
  ExportOptions opt;
  opt.opset_version = GetParam();
  expect_export_matches(make_traceable(net), {torch::randn({2, 3, 8, 8})}, opt,
                        "network_opset" + std::to_string(GetParam()));
}

TEST(ExportAtNewOpsetsRange, PastTheNewestOpsetIsRefused) {
  ExportOptions opt;
  opt.opset_version = 24;
  expect_error(
      [&] {
        export_traceable(make_traceable_fn([](Tensor a) { return a * 2; }), {torch::ones({2})},
                         temp_dir("opset24") + "/m.onnx", opt);
      },
      "opset_version 24 is not supported: use 9 to 23");
}

}  // namespace
}  // namespace tonnx::test
