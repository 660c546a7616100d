// Pooling (src/symbolic/pool.cpp): max and average pooling with pads, dilation, ceil_mode and
// indices, adaptive pools, in 1d, 2d and 3d (with 1d and 3d interpolation beside them), and the
// errors for what ONNX cannot express.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class PoolSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, PoolSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(PoolSymbolic, MaxPool2dPaddingDilation) {
  auto x = torch::randn({2, 3, 10, 9});
  expect_fn_matches(
      [](Tensor x) { return F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1)); },
      {x}, opset(), "maxpool_pad");
  if (opset() >= 10) {
    expect_fn_matches(
        [](Tensor x) {
          return F::max_pool2d(x, F::MaxPool2dFuncOptions({2, 3}).stride(2).ceil_mode(true));
        },
        {x}, opset(), "maxpool_ceil");
    expect_fn_matches(
        [](Tensor x) { return F::max_pool2d(x, F::MaxPool2dFuncOptions(2).dilation(2)); }, {x},
        opset(), "maxpool_dilation");
  }
}

TEST(MaxPool, CeilModeBelowOpset10NamesTheOpset) {
  ExportOptions opt;
  opt.opset_version = 9;
  auto m = make_traceable_fn(
      [](Tensor x) { return F::max_pool2d(x, F::MaxPool2dFuncOptions(2).ceil_mode(true)); });
  try {
    export_traceable(m, {torch::randn({1, 1, 5, 5})}, temp_dir("maxpool9") + "/m.onnx", opt);
    FAIL() << "expected an error";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("opset_version=10"), std::string::npos) << e.what();
  }
}

TEST_P(PoolSymbolic, MaxPoolWithIndices) {
  auto x = torch::randn({2, 3, 6, 6});
  if (opset() < 10) {
    // MaxPool-8's Indices cannot be rebased without Slice-10; the error names the opset.
    auto m = make_traceable_fn(
        [](Tensor x) { return F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2)); });
    try {
      export_traceable(m, {x}, temp_dir("maxpool_idx9") + "/m.onnx", [] {
        ExportOptions o;
        o.opset_version = 9;
        return o;
      }());
      FAIL();
    } catch (const ExportError& e) {
      EXPECT_NE(std::string(e.what()).find("it can be exported with opset_version=10"),
                std::string::npos)
          << e.what();
    }
    return;
  }
  expect_fn_matches(
      [](Tensor x) { return F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2)); }, {x},
      opset(), "maxpool_indices");
}

TEST_P(PoolSymbolic, AvgPool2dCountIncludePadAndCeil) {
  auto x = torch::randn({1, 2, 7, 8});
  expect_fn_matches(
      [](Tensor x) { return F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(2).padding(1)); },
      {x}, opset(), "avgpool_include_pad");
  expect_fn_matches(
      [](Tensor x) {
        return F::avg_pool2d(
            x, F::AvgPool2dFuncOptions(3).stride(2).padding(1).count_include_pad(false));
      },
      {x}, opset(), "avgpool_exclude_pad");
  if (opset() >= 10)
    expect_fn_matches(
        [](Tensor x) {
          return F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).stride(2).ceil_mode(true));
        },
        {x}, opset(), "avgpool_ceil");
}

// ceil_mode where PyTorch drops a last window that would start in the end padding (3 -> 2
// windows at kernel 2, stride 2, pad 1; 5 -> 3): ONNX 1.12's shape inference counts it, and
// its checker refused the model. Exported with explicit end pads instead, at every opset.
TEST_P(PoolSymbolic, PoolsWhoseLastCeilWindowPyTorchDrops) {
  for (int64_t n : {3, 5}) {
    SCOPED_TRACE("size " + std::to_string(n));
    auto x = torch::randn({1, 2, n, n});
    x.index_put_({0, 0, n - 1, n - 1}, INFINITY);  // (not NaN: ONNX Runtime's MaxPool drops it)
    x.index_put_({0, 1, 0, 0}, -INFINITY);
    auto opts = [] { return F::MaxPool2dFuncOptions(2).stride(2).padding(1).ceil_mode(true); };
    expect_fn_matches([&](Tensor x) { return F::max_pool2d(x, opts()); }, {x}, opset(),
                      "maxpool_ceil_drop");
    expect_fn_matches(
        [](Tensor x) {
          return F::max_pool1d(x, F::MaxPool1dFuncOptions(2).stride(2).padding(1).ceil_mode(true));
        },
        {x[0]}, opset(), "maxpool1d_ceil_drop");
    expect_fn_matches(
        [](Tensor x) {
          return F::max_pool3d(x, F::MaxPool3dFuncOptions(2).stride(2).padding(1).ceil_mode(true));
        },
        {x.unsqueeze(0)}, opset(), "maxpool3d_ceil_drop");
    for (bool include_pad : {true, false})
      expect_fn_matches(
          [&](Tensor x) {
            return F::avg_pool2d(
                x,
                F::AvgPool2dFuncOptions(2).stride(2).padding(1).ceil_mode(true).count_include_pad(
                    include_pad));
          },
          {x}, opset(), include_pad ? "avgpool_ceil_drop_pads" : "avgpool_ceil_drop");
    if (opset() >= 10)
      expect_fn_matches([&](Tensor x) { return F::max_pool2d_with_indices(x, opts()); }, {x},
                        opset(), "maxpool_indices_ceil_drop");
  }
  // A dim where a window is dropped and another whose last window reaches past the padding:
  // with count_include_pad the divisors have no ONNX form; the error says what to change.
  auto m = make_traceable_fn([](Tensor x) {
    return F::avg_pool2d(x, F::AvgPool2dFuncOptions({2, 3}).stride(2).padding(1).ceil_mode(true));
  });
  ExportOptions o;
  o.opset_version = opset();
  std::string e = error_of([&] {
    export_traceable(m, {torch::randn({1, 1, 3, 6})}, temp_dir("avgpool_ceil_refused") + "/m.onnx",
                     o);
  });
  EXPECT_NE(e.find("export with count_include_pad=False or ceil_mode=False"), std::string::npos)
      << e;
}

TEST_P(PoolSymbolic, AdaptivePools) {
  auto x = torch::randn({2, 3, 12, 8});
  expect_fn_matches(
      [](Tensor x) {
        return F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({1, 1}));
      },
      {x}, opset(), "adaptive_global");
  expect_fn_matches(
      [](Tensor x) {
        return F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({4, 2}));
      },
      {x}, opset(), "adaptive_fixed");
  expect_fn_matches(
      [](Tensor x) {
        return F::adaptive_max_pool2d(x, F::AdaptiveMaxPool2dFuncOptions({3, 4}));
      },
      {x}, opset(), "adaptive_max");
  if (opset() >= 10) {  // (indices: MaxPool's, rebased with Slice-10)
    Tensor y = x.clone();
    y.index_put_({0, 0, 0, 0}, INFINITY);
    y.index_put_({1, 2, 5, 1}, -INFINITY);
    for (std::vector<int64_t> size : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{1, 1}})
      expect_fn_matches(
          [size](Tensor x) {
            return F::adaptive_max_pool2d_with_indices(x, F::AdaptiveMaxPool2dFuncOptions(size));
          },
          {y}, opset(), "adaptive_max_indices");
  }
  expect_fn_matches(
      [](Tensor x) {
        return F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({12, 8}));
      },
      {x}, opset(), "adaptive_identity");
}

TEST(AdaptivePool, NonDivisibleSizeIsAClearError) {
  auto m = make_traceable_fn([](Tensor x) {
    return F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({5, 5}));
  });
  try {
    export_traceable(m, {torch::randn({1, 1, 7, 7})}, temp_dir("adaptive_bad") + "/m.onnx");
    FAIL();
  } catch (const ExportError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("aten::adaptive_avg_pool2d"), std::string::npos) << msg;
    EXPECT_NE(msg.find("from size 7 to 5"), std::string::npos) << msg;
  }
}

class PoolOps : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, PoolOps, ::testing::Values(11, 13, 17));

TEST_P(PoolOps, PoolsAndInterpolationIn1dAnd3d) {
  Tensor x1 = torch::randn({2, 3, 10}), x3 = torch::randn({1, 2, 4, 6, 6});
  check([](Tensor x) { return torch::max_pool1d(x, 3, 2, 1) + torch::avg_pool1d(x, 3, 2, 1); },
        {x1}, "pool1d");
  check([](Tensor x) { return torch::max_pool3d(x, 2) + torch::avg_pool3d(x, 2); }, {x3}, "pool3d");
  check([](Tensor x) { return torch::max_pool1d_with_indices(x, 2); }, {x1}, "pool1d_indices");
  check([](Tensor x) { return torch::max_pool3d_with_indices(x, 2); }, {x3}, "pool3d_indices");
  check(
      [](Tensor x) {
        return torch::adaptive_avg_pool1d(x, 5) + std::get<0>(torch::adaptive_max_pool1d(x, 5));
      },
      {x1}, "adaptive1d");
  check(
      [](Tensor x) {
        return torch::adaptive_avg_pool3d(x, {2, 3, 1}) +
               std::get<0>(torch::adaptive_max_pool3d(x, {2, 3, 1}));
      },
      {x3}, "adaptive3d");
  namespace F = torch::nn::functional;
  check(
      [](Tensor x) {
        return F::interpolate(
            x, F::InterpolateFuncOptions().size(std::vector<int64_t>{15}).mode(torch::kNearest));
      },
      {x1}, "nearest1d");
  check(
      [](Tensor x) {
        return F::interpolate(
            x, F::InterpolateFuncOptions().size(std::vector<int64_t>{17}).mode(torch::kLinear));
      },
      {x1}, "linear1d");
  check(
      [](Tensor x) {
        return F::interpolate(
            x,
            F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 7, 9}).mode(torch::kNearest));
      },
      {x3}, "nearest3d");
  check(
      [](Tensor x) {
        return F::interpolate(x, F::InterpolateFuncOptions()
                                     .size(std::vector<int64_t>{5, 7, 9})
                                     .mode(torch::kTrilinear)
                                     .align_corners(true));
      },
      {x3}, "trilinear3d");
}

}  // namespace
}  // namespace tonnx::test
