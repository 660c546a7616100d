// Resizing (src/symbolic/resize.cpp): nearest neighbours at non-integer scales, nearest,
// bilinear and bicubic by size and by scale, __interpolate, the upsample overloads of scripted
// code (sizes computed at run time and in a loop), grid_sampler.
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

class ResizeSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ResizeSymbolic, ::testing::ValuesIn(key_opsets()));

// Non-integer scale factors: the output size (5 x 1.4 is 7 in float) and nearest neighbours
// (output 29 at scale 2.9 reads input 10) as LibTorch and ONNX Runtime compute them.
TEST_P(ResizeSymbolic, InterpolateNearestAtNonIntegerScales) {
  if (opset() < 11) GTEST_SKIP() << "checked from opset 11 (Resize)";
  namespace F = torch::nn::functional;
  for (double scale : {1.4, 2.9})
    for (const auto& shape : {std::vector<int64_t>{1, 2, 5, 5}, std::vector<int64_t>{1, 1, 15, 20}})
      expect_fn_matches(
          [scale](Tensor x) {
            return F::interpolate(x, F::InterpolateFuncOptions()
                                         .scale_factor(std::vector<double>{scale, scale})
                                         .mode(torch::kNearest));
          },
          {torch::randn(shape)}, opset(),
          "nearest_scale_" + std::to_string(scale) + "_" + std::to_string(shape[3]));
}

class ResizeOps : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ResizeOps, ::testing::Values(11, 13, 17));

TEST_P(ResizeOps, Interpolation) {
  Tensor x = torch::randn({1, 2, 5, 7});
  check(
      [](Tensor x) {
        return F::interpolate(x, F::InterpolateFuncOptions()
                                     .scale_factor(std::vector<double>{2, 3})
                                     .mode(torch::kNearest));
      },
      {x}, "nearest_scale");
  check(
      [](Tensor x) {
        return F::interpolate(
            x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 9}).mode(torch::kNearest));
      },
      {x}, "nearest_size");
  for (bool align : {true, false}) {
    std::string a = align ? "_align" : "";
    check(
        [align](Tensor x) {
          return F::interpolate(x, F::InterpolateFuncOptions()
                                       .size(std::vector<int64_t>{9, 4})
                                       .mode(torch::kBilinear)
                                       .align_corners(align));
        },
        {x}, "bilinear_size" + a);
    check(
        [align](Tensor x) {
          return F::interpolate(x, F::InterpolateFuncOptions()
                                       .scale_factor(std::vector<double>{1.5, 2})
                                       .mode(torch::kBilinear)
                                       .align_corners(align));
        },
        {x}, "bilinear_scale" + a);
    check(
        [align](Tensor x) {
          return F::interpolate(x, F::InterpolateFuncOptions()
                                       .size(std::vector<int64_t>{10, 14})
                                       .mode(torch::kBicubic)
                                       .align_corners(align));
        },
        {x}, "bicubic" + a, Tolerance{1e-3, 1e-4});
  }
  // An output of length 1 samples the input's middle (half_pixel), not its first element
  // (pytorch_half_pixel): torch.onnx's test_interpolate_half_pixel.
  for (auto mode : {F::InterpolateFuncOptions::mode_t(torch::kBilinear),
                    F::InterpolateFuncOptions::mode_t(torch::kBicubic)})
    check(
        [mode](Tensor x) {
          return F::interpolate(
              x, F::InterpolateFuncOptions().size(std::vector<int64_t>{1, 7}).mode(mode));
        },
        {x},
        std::string("size_one_") +
            (c10::get_if<torch::enumtype::kBicubic>(&mode) ? "bicubic" : "bilinear"),
        Tolerance{1e-3, 1e-4});
}

class ResizeParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ResizeParity, ::testing::Values(9, 11, 13, 17));

// __interpolate: F.interpolate as one op (size or scale_factor, one value or a list).
TEST_P(ResizeParity, Interpolate) {
  Tensor x = torch::randn({1, 2, 3, 4});
  check_script(R"(
def forward(self, x):
    a = torch.__interpolate(x, scale_factor=[2.0, 3.0], mode='nearest')
    b = torch.__interpolate(x, size=[6, 12], mode='nearest')
    c = torch.__interpolate(x, scale_factor=[2.0, 1.5], mode='nearest', recompute_scale_factor=False)
    return a, b, c
)",
               {x}, opset(), "interpolate_nearest");
  if (opset() < 11) {  // linear and cubic as PyTorch computes them need opset 11
    expect_export_error(R"(
def forward(self, x):
    return torch.__interpolate(x, size=[5, 7], mode='nearest')
)",
                        {x}, opset(), "interpolation from size 3 to 5");
    return;
  }
  check_script(R"(
def forward(self, x):
    a = torch.__interpolate(x, size=6, mode='bilinear', align_corners=True)
    b = torch.__interpolate(x, scale_factor=2.5, mode='bicubic', align_corners=False)
    c = torch.__interpolate(x, scale_factor=[1.5, 0.5], mode='bilinear', recompute_scale_factor=True)
    d = torch.__interpolate(x[0], scale_factor=2.0, mode='linear')
    e = torch.__interpolate(x, scale_factor=2.5, mode='bilinear', recompute_scale_factor=False)
    f = torch.__interpolate(x, size=[5, 7], mode='nearest')
    return a, b, c, d, e, f
)",
               {x}, opset(), "interpolate_linear", {1e-3, 1e-4});
  expect_export_error(R"(
def forward(self, x):
    return torch.__interpolate(x, scale_factor=2.0, mode='area')
)",
                      {x}, opset(), "mode 'area' is not exported");
}

// F.interpolate(size=y.shape[-2:]) records the .vec overload with a list built in the graph
// (torchvision's FPN): the overload is told by its schema, not by the list's type.
TEST(ResizeScripted, UpsampleVecWithComputedSize) {
  expect_script_matches(R"JIT(
def forward(self, x, y):
    s = y.size()
    return torch.upsample_nearest2d(x, [s[2], s[3]], scale_factors=None)
)JIT",
                        {torch::randn({1, 2, 3, 4}), torch::randn({1, 1, 6, 8})},
                        "script_upsample_vec");
}

// grid_sampler (F.grid_sample; RAFT's correlation lookup): every mode and padding mode.
TEST(ResizeScripted, GridSampler) {
  expect_script_matches(R"JIT(
def forward(self, x, grid):
    a = torch.grid_sampler(x, grid, 0, 0, False)
    b = torch.grid_sampler(x, grid, 1, 1, True)
    c = torch.grid_sampler(x, grid, 0, 2, False)
    d = torch.grid_sampler(x, grid, 2, 1, True)
    return a, b, c, d
)JIT",
                        {torch::randn({2, 3, 5, 6}), torch::rand({2, 4, 7, 2}) * 2.4 - 1.2},
                        "script_grid_sampler", 16);
}

// interpolate to sizes computed in a loop from sizes that vary (torchvision's
// GeneralizedRCNNTransform.resize): the size list's length is unknown to shape inference, which
// ONNX Runtime then reads as 0 and rejects the model, unless it is reshaped to its length.
TEST(ResizeScripted, InterpolateToSizesBuiltInALoop) {
  torch::jit::Module m("Resize");
  m.define(R"(
def forward(self, x):
    sizes: List[int] = []
    for i in range(2):
        sizes.append(int(float(x.size(i + 2)) * 1.5))
    return torch.upsample_bilinear2d(x, sizes, False, None)
)");
  ExportOptions opt;
  opt.input_names = {"x"};
  add_dynamic_axes(opt, "x", {2, 3});
  std::string path = temp_dir("interpolate_loop_sizes") + "/model.onnx";
  std::vector<std::vector<Tensor>> sets = {{torch::rand({1, 3, 10, 20})},
                                           {torch::rand({1, 3, 7, 5})}};
  export_model(m, sets[0], path, opt);
  for (size_t i = 0; i < sets.size(); ++i)
    expect_outputs_match(path, sets[i], {m.forward({sets[i][0]}).toTensor()},
                         "interpolate_loop_sizes_" + std::to_string(i));
}

}  // namespace
}  // namespace tonnx::test
