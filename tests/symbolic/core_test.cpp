// Symbolic functions of the exporter core (conv, pool, norm, linear, shape, math,
// activation), each exported and checked on tonnx's backend and ONNX Runtime against
// LibTorch eager, over the opsets where the symbolics differ.
#include "error_of.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class Opset : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(7); }
  int opset() const { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(Opsets, Opset, ::testing::ValuesIn(key_opsets()));

TEST_P(Opset, Conv2dStridePadDilationGroups) {
  auto w = torch::randn({8, 2, 3, 3}), b = torch::randn({8});
  expect_fn_matches(
      [&](Tensor x) {
        return F::conv2d(
            x, w,
            F::Conv2dFuncOptions().bias(b).stride({2, 1}).padding({1, 2}).dilation({1, 2}).groups(
                2));
      },
      {torch::randn({2, 4, 9, 11})}, opset(), "conv2d_groups");
}

TEST_P(Opset, Conv1dAnd3dNoBias) {
  auto w1 = torch::randn({3, 2, 4}), w3 = torch::randn({2, 2, 2, 3, 2});
  expect_fn_matches([&](Tensor x) { return F::conv1d(x, w1, F::Conv1dFuncOptions().stride(2)); },
                    {torch::randn({1, 2, 10})}, opset(), "conv1d");
  expect_fn_matches([&](Tensor x) { return F::conv3d(x, w3, F::Conv3dFuncOptions().padding(1)); },
                    {torch::randn({1, 2, 4, 5, 6})}, opset(), "conv3d");
}

TEST_P(Opset, ConvSamePaddingEvenKernel) {
  auto w = torch::randn({2, 3, 4, 4});
  expect_fn_matches(
      [&](Tensor x) {
        return F::conv2d(x, w, F::Conv2dFuncOptions().padding(torch::kSame).dilation(2));
      },
      {torch::randn({1, 3, 9, 8})}, opset(), "conv_same");
}

TEST_P(Opset, ConvTranspose2dOutputPadding) {
  torch::nn::ConvTranspose2d m(
      torch::nn::ConvTranspose2dOptions(4, 3, 3).stride(2).padding(1).output_padding(1));
  m->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  expect_export_matches(make_traceable(m), {torch::randn({2, 4, 5, 6})}, opt,
                        "convtranspose_" + std::to_string(opset()));
}

TEST_P(Opset, ConvEmptyBatch) {
  auto w = torch::randn({4, 3, 3, 3});
  expect_fn_matches([&](Tensor x) { return F::conv2d(x, w); }, {torch::randn({0, 3, 8, 8})},
                    opset(), "conv_empty");
}

TEST_P(Opset, ReluWithNanInfAndInplace) {
  auto x = torch::tensor({-1.0f, 0.0f, 2.5f, NAN, INFINITY, -INFINITY}).reshape({2, 3});
  expect_fn_matches([](Tensor x) { return torch::relu(x); }, {x}, opset(), "relu");
  expect_fn_matches(
      [](Tensor x) {
        auto y = x * 1;
        return torch::relu_(y);
      },
      {x}, opset(), "relu_inplace");
}

TEST_P(Opset, MaxPool2dPaddingDilation) {
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

TEST_P(Opset, MaxPoolWithIndices) {
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

TEST_P(Opset, AvgPool2dCountIncludePadAndCeil) {
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
TEST_P(Opset, PoolsWhoseLastCeilWindowPyTorchDrops) {
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

TEST_P(Opset, AdaptivePools) {
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

TEST_P(Opset, FlattenAllForms) {
  auto x = torch::randn({2, 3, 4, 5});
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1); }, {x}, opset(), "flatten1");
  expect_fn_matches([](Tensor x) { return torch::flatten(x); }, {x}, opset(), "flatten0");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1, 2); }, {x}, opset(), "flatten_mid");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, -2, -1); }, {x}, opset(),
                    "flatten_neg");
  expect_fn_matches([](Tensor x) { return torch::flatten(x, 1); }, {torch::randn({0, 3, 2})},
                    opset(), "flatten_empty");
}

TEST_P(Opset, ViewReshapeInt64AndBool) {
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
TEST_P(Opset, ReshapeThatCopiesIsNotAView) {
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

// Non-integer scale factors: the output size (5 x 1.4 is 7 in float) and nearest neighbours
// (output 29 at scale 2.9 reads input 10) as LibTorch and ONNX Runtime compute them.
TEST_P(Opset, InterpolateNearestAtNonIntegerScales) {
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

TEST_P(Opset, LinearForms) {
  auto w = torch::randn({5, 4}), b = torch::randn({5});
  expect_fn_matches([&](Tensor x) { return F::linear(x, w, b); }, {torch::randn({3, 4})}, opset(),
                    "linear2d");
  expect_fn_matches([&](Tensor x) { return F::linear(x, w, b); }, {torch::randn({2, 3, 4})},
                    opset(), "linear3d");
  expect_fn_matches([&](Tensor x) { return F::linear(x, w); }, {torch::randn({3, 4})}, opset(),
                    "linear_nobias");
  torch::nn::Linear lin(4, 5);
  ExportOptions opt;
  opt.opset_version = opset();
  auto path = expect_export_matches(make_traceable(lin), {torch::randn({6, 4})}, opt,
                                    "nn_linear" + std::to_string(opset()));
  // The weight stays the parameter: Gemm(transB=1), no transposed copy.
  EXPECT_EQ(op_types(path), std::vector<std::string>{"Gemm"});
}

TEST_P(Opset, AddmmMatmulMmBmmT) {
  auto c = torch::randn({3, 5}), a = torch::randn({3, 4}), b = torch::randn({4, 5});
  expect_fn_matches([](Tensor c, Tensor a, Tensor b) { return torch::addmm(c, a, b, 0.5, 2.0); },
                    {c, a, b}, opset(), "addmm");
  expect_fn_matches([](Tensor c, Tensor a, Tensor b) { return torch::addmm(c.select(0, 0), a, b); },
                    {c, a, b}, opset(), "addmm_broadcast");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::mm(a, b); }, {a, b}, opset(), "mm");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::bmm(a, b); },
                    {torch::randn({2, 3, 4}), torch::randn({2, 4, 2})}, opset(), "bmm");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::matmul(a, b); },
                    {torch::randn({2, 1, 3, 4}), torch::randn({3, 4, 2})}, opset(),
                    "matmul_broadcast");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::matmul(a, b); },
                    {torch::randn({4}), torch::randn({4})}, opset(), "matmul_vec");
  expect_fn_matches([](Tensor a) { return a.t(); }, {torch::randn({3, 4})}, opset(), "t");
  expect_fn_matches([](Tensor a) { return a.t() * 2; }, {torch::randn({3})}, opset(), "t_vec");
}

TEST_P(Opset, BatchNormEvalAndNoAffine) {
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

TEST_P(Opset, BatchNormWithoutRunningStats) {
  torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(3).track_running_stats(false));
  bn->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  expect_export_matches(make_traceable(bn), {torch::randn({4, 3, 2, 2})}, opt,
                        "bn_batchstats" + std::to_string(opset()));
}

TEST_P(Opset, AddSubMulDivPromotionAndBroadcast) {
  auto a = torch::randn({2, 3}), b = torch::randn({3});
  expect_fn_matches([](Tensor a, Tensor b) { return torch::add(a, b, 2.5); }, {a, b}, opset(),
                    "add_alpha");
  expect_fn_matches([](Tensor a, Tensor b) { return torch::sub(a, b, -1); }, {a, b}, opset(),
                    "sub_alpha");
  expect_fn_matches([](Tensor a) { return a + 1; }, {a}, opset(), "add_scalar");
  expect_fn_matches([](Tensor a) { return 3 - a; }, {a}, opset(), "rsub_scalar");
  expect_fn_matches([](Tensor a, Tensor b) { return a * b; },
                    {torch::arange(6, torch::kLong).reshape({2, 3}), torch::tensor({-2L, 0L, 5L})},
                    opset(), "mul_int64");
  expect_fn_matches([](Tensor a, Tensor b) { return a + b; },
                    {torch::arange(6, torch::kInt).reshape({2, 3}), b}, opset(),
                    "add_int_float_promotes");
  expect_fn_matches([](Tensor a, Tensor b) { return a / b; },
                    {torch::tensor({7L, -7L, 9L}), torch::tensor({2L, 2L, -4L})}, opset(),
                    "div_int_true");
  auto div_floor = [](Tensor a, Tensor b) { return torch::div(a, b, "floor"); };
  expect_fn_matches(div_floor, {torch::tensor({7L, -7L, 9L}), torch::tensor({2L, 2L, -4L})},
                    opset(), "div_floor_int");
  std::vector<Tensor> floats{torch::tensor({7.5f, -7.5f, 9.f}), torch::tensor({2.f, 2.f, -4.f})};
  if (opset() >= 10) {
    expect_fn_matches(div_floor, floats, opset(), "div_floor");
  } else {  // LibTorch's floor division of floats needs fmod (Mod); floor(a / b) is not it
    ExportOptions opt;
    opt.opset_version = opset();
    std::string e = error_of([&] {
      export_traceable(make_traceable_fn(div_floor), floats, temp_dir("df9") + "/m.onnx", opt);
    });
    EXPECT_NE(e.find("floor division of floating-point tensors (Mod) needs opset 10"),
              std::string::npos)
        << e;
  }
  expect_fn_matches([](Tensor a, Tensor b) { return torch::div(a, b, "trunc"); },
                    {torch::tensor({7L, -7L, 9L}), torch::tensor({2L, 2L, -4L})}, opset(),
                    "div_trunc_int");
  expect_fn_matches(
      [](Tensor a, Tensor b) { return a + b; },
      {torch::tensor({1.f, NAN, INFINITY}), torch::tensor({-INFINITY, 1.f, INFINITY})}, opset(),
      "add_naninf");
  expect_fn_matches([](Tensor a, Tensor b) { return a * b; },
                    {torch::randn({0, 3}), torch::randn({3})}, opset(), "mul_empty");
}

TEST_P(Opset, DropoutIsIdentityInEval) {
  torch::nn::Sequential m(torch::nn::Linear(4, 4), torch::nn::Dropout(0.5),
                          torch::nn::Dropout2d(0.3));
  m->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  auto path = expect_export_matches(make_traceable(m), {torch::randn({2, 4})}, opt,
                                    "dropout" + std::to_string(opset()));
  for (const auto& op : op_types(path)) EXPECT_NE(op, "Dropout");
}

TEST_P(Opset, CatNegativeDimMixedTypes) {
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b}, -1);
      },
      {torch::randn({2, 3}), torch::randn({2, 1})}, opset(), "cat_neg");
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b}, 0);
      },
      {torch::randn({2, 3}), torch::randn({0, 3})}, opset(), "cat_empty");
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b});
      },
      {torch::ones({2}, torch::kLong), torch::zeros({3}, torch::kLong)}, opset(), "cat_int64");
}

TEST_P(Opset, SoftmaxAnyDim) {
  auto x = torch::randn({2, 3, 4});
  for (int64_t dim : {-1, 0, 1, 2, -2}) {
    expect_fn_matches([dim](Tensor x) { return torch::softmax(x, dim); }, {x}, opset(),
                      "softmax" + std::to_string(dim + 2));
    expect_fn_matches([dim](Tensor x) { return torch::log_softmax(x, dim); }, {x}, opset(),
                      "logsoftmax" + std::to_string(dim + 2));
  }
  expect_fn_matches([](Tensor x) { return torch::softmax(x, 1, torch::kDouble); }, {x}, opset(),
                    "softmax_dtype");
  expect_fn_matches([](Tensor x) { return torch::softmax(x, -1); },
                    {torch::tensor({1.f, INFINITY, 2.f})}, opset(), "softmax_inf");
}

}  // namespace
}  // namespace tonnx::test
