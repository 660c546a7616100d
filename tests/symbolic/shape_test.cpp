// Shapes (src/symbolic/shape.cpp): flatten, view and reshape of every dtype, and a reshape that
// copies a non-contiguous input is not a view of it; unsqueeze at a dim computed at run time,
// meshgrid, _shape_as_tensor and numel in scripted code.
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

class ShapeSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ShapeSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(ShapeSymbolic, FlattenAllForms) {
  auto x = torch::randn({2, 3, 4, 5});
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1); }, {x}, opset(), "flatten1");
  expect_fn_matches([](Tensor x) { return torch::flatten(x); }, {x}, opset(), "flatten0");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1, 2); }, {x}, opset(), "flatten_mid");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, -2, -1); }, {x}, opset(),
                    "flatten_neg");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1); }, {torch::randn({0, 3, 2})},
                    opset(), "flatten_empty");
}

TEST_P(ShapeSymbolic, ViewReshapeInt64AndBool) {
  expect_fn_matches(
      [](Tensor x) {
        return x.view({-1, 6});
      },
      {torch::randn({2, 3, 4})}, opset(), "view");
  expect_fn_matches(
      [](Tensor x) {
        return x.reshape({4, -1, 2});
      },
      {torch::arange(24, torch::kLong)}, opset(), "reshape_int64");
  expect_fn_matches(
      [](Tensor x) {
        return x.reshape({3, 2});
      },
      {torch::tensor({true, false, true, true, false, false})}, opset(), "reshape_bool");
}

// reshape, flatten and contiguous copy a non-contiguous input: a later in-place write to the
// input must not reach the copy (it did: it was taken for a view), nor a write to the copy
// the input. A contiguous input is viewed, and the write reaches both.
TEST_P(ShapeSymbolic, ReshapeThatCopiesIsNotAView) {
  Tensor x = torch::tensor({-1.f, 2.f, 3.f, -4.f, 5.f, -6.f}).reshape({1, 2, 3});
  expect_fn_matches(
      [](Tensor x) {
        Tensor h = x * 1.0;
        Tensor feat = h.permute({0, 2, 1}).reshape({h.size(0), -1});  // a copy
        h.relu_();
        return std::vector<Tensor>{feat, h};
      },
      {x}, opset(), "reshape_copy");
  expect_fn_matches(
      [](Tensor x) {
        Tensor h = x * 1.0;
        h.t().flatten().mul_(0);  // writes into a copy only
        return h;
      },
      {torch::randn({3, 4})}, opset(), "flatten_copy");
  if (opset() >= 11)  // (a write into a selected row: ScatterElements, opset 11)
    expect_fn_matches(
        [](Tensor x) {
          Tensor h = x * 1.0;
          Tensor c = h.t().contiguous();  // a copy
          c[0].fill_(9);
          return std::vector<Tensor>{h, c};
        },
        {torch::randn({3, 4})}, opset(), "contiguous_copy");
  expect_fn_matches(
      [](Tensor x) {
        Tensor h = x * 1.0;
        Tensor v = h.reshape({-1});  // contiguous: a view
        v.add_(100);
        return std::vector<Tensor>{h, v};
      },
      {torch::randn({3, 4})}, opset(), "reshape_view");
}

// unsqueeze at a dim computed at run time (from a tensor's value): Unsqueeze's axes input,
// negative dims counting from the output's end as in torch; below opset 13 a clear refusal.
TEST(ShapeScripted, UnsqueezeAtRunTimeDim) {
  const char* source = R"(
def forward(self, x, k):
    return torch.unsqueeze(x, int(k)) * 2.0
)";
  ExportOptions opt;
  opt.opset_version = 13;
  for (int64_t k : {-1, 0, 2, -3})
    test::expect_script_matches(source, {torch::randn({2, 3}), torch::tensor(k)}, opt,
                                "unsqueeze_runtime_dim");
  opt.opset_version = 11;
  torch::jit::Module m("Scripted");
  m.define(source);
  try {
    export_model(m, {torch::randn({2, 3}), torch::tensor(int64_t{1})},
                 temp_dir("unsqueeze_runtime_dim_11") + "/model.onnx", opt);
    FAIL() << "opset 11 cannot unsqueeze at a run-time dim";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("opset 13"), std::string::npos) << e.what();
  }
}

// meshgrid (both indexings), _shape_as_tensor and numel: torchvision's detection models.
TEST(ShapeScripted, MeshgridShapeAsTensorNumel) {
  expect_script_matches(R"JIT(
def forward(self, a, b, c):
    g1 = torch.meshgrid([a, b, c], indexing="ij")
    g2 = torch.meshgrid([a, b], indexing="xy")
    s = torch._shape_as_tensor(c.unsqueeze(0))
    return g1[0] + g1[1] * 2 + g1[2] * 3, g2[0] - g2[1], s, a.numel() + c.numel()
)JIT",
                        {torch::randn({3}), torch::randn({4}), torch::arange(2).to(torch::kFloat)},
                        "script_meshgrid");
}

}  // namespace
}  // namespace tonnx::test
