// The backend's oneDNN kernels against LibTorch's own functions (the oracle): directly, so a
// case that silently fell back to ATen would fail, and through prepare/run.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <ATen/native/ConvUtils.h>

#include <cmath>
#include <functional>
#include <limits>
#include <thread>

#include "backend/kernels/gemm.h"
#include "backend/kernels/conv/onednn_conv.h"
#include "backend/kernels/onednn.h"
#include "expect_close.h"
#include "tonnx/backend.h"
#include "tonnx/compare.h"
#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace {

using tonnx::backend::OneDnnDeconv;
namespace ir = tonnx::ir;
using tonnx::test::expect_close;

// ONNX ConvTranspose on ATen: the full transposed convolution (with output_padding), then
// the begin/end pads cropped.
at::Tensor aten_deconv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                       const OneDnnDeconv::Params& p) {
  size_t d = static_cast<size_t>(x.dim() - 2);
  at::Tensor y = at::convolution(x, w, b, p.strides, std::vector<int64_t>(d, 0), p.dilations, true,
                                 p.output_padding, 1);
  for (size_t i = 0; i < d; ++i)
    y = y.narrow(static_cast<int64_t>(2 + i), p.pads_begin[i],
                 y.size(static_cast<int64_t>(2 + i)) - p.pads_begin[i] - p.pads_end[i]);
  return y;
}

void expect_near(const at::Tensor& got, const at::Tensor& want, double rtol = 1e-4,
                 double atol = 1e-4) {
  tonnx::Comparison c = tonnx::compare(got, want, {rtol, atol});
  EXPECT_TRUE(c.ok) << c.mismatch << ", max abs diff " << c.max_abs;
}

// NaN and inf reach exactly the outputs they reach in the oracle's result.
void expect_same_non_finite(const at::Tensor& got, const at::Tensor& want) {
  expect_near(got, want);
  EXPECT_GT(want.isnan().sum().item<int64_t>(), 0);
  EXPECT_EQ(got.isnan().sum().item<int64_t>(), want.isnan().sum().item<int64_t>());
  EXPECT_EQ(got.isinf().sum().item<int64_t>(), want.isinf().sum().item<int64_t>());
}

// Four threads run one Rep ten times each, thread t on input_of(t) (different shapes share
// the primitive cache); every output must match want_of(input).
void expect_concurrent_runs(const tonnx::backend::Rep& rep,
                            const std::function<at::Tensor(int)>& input_of,
                            const std::function<at::Tensor(const at::Tensor&)>& want_of) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      at::Tensor xi = input_of(t), wi = want_of(xi);
      bool all = true;
      for (int i = 0; i < 10; ++i)
        all = all && tonnx::compare(rep.run({xi})[0], wi, {1e-4, 1e-4}).ok;
      ok[t] = all;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

struct DeconvCase {
  int64_t rank, ci, co, k, stride, dilation, pad_begin, pad_end, output_padding, batch;
  bool bias;
};

TEST(BackendOneDnn, DeconvolutionMatchesATen) {
  torch::manual_seed(11);
  // Fewer than 16 channels on either side take the plain layout, 16 or more the blocked one.
  std::vector<DeconvCase> cases = {
      {4, 4, 3, 4, 2, 1, 1, 1, 0, 1, false},     // DCGAN-like, plain
      {4, 32, 16, 4, 2, 1, 1, 1, 0, 1, false},   // DCGAN-like, blocked
      {4, 100, 64, 4, 1, 1, 0, 0, 0, 2, false},  // 1x1 input, batch 2
      {4, 16, 24, 3, 2, 1, 1, 1, 1, 3, true},    // output_padding, bias, batch 3
      {4, 16, 16, 3, 3, 2, 0, 2, 1, 1, true},    // asymmetric pads, dilation
      {4, 5, 17, 2, 1, 1, 0, 0, 0, 1, true},     // stride 1, odd channels
      {3, 8, 6, 5, 2, 1, 2, 1, 0, 2, true},      // 1-D
      {3, 32, 32, 4, 2, 1, 1, 1, 0, 1, false},   // 1-D blocked
      {5, 4, 3, 3, 2, 1, 1, 1, 1, 1, true},      // 3-D
      {5, 16, 16, 2, 2, 1, 0, 0, 0, 2, false},   // 3-D blocked
  };
  for (const DeconvCase& c : cases) {
    size_t d = static_cast<size_t>(c.rank - 2);
    SCOPED_TRACE("rank " + std::to_string(c.rank) + " ci " + std::to_string(c.ci) + " co " +
                 std::to_string(c.co) + " stride " + std::to_string(c.stride));
    std::vector<int64_t> wshape{c.ci, c.co}, xshape{c.batch, c.ci};
    for (size_t i = 0; i < d; ++i) {
      wshape.push_back(c.k);
      xshape.push_back(c.ci == 100 ? 1 : 5 + static_cast<int64_t>(i));
    }
    at::Tensor w = torch::randn(wshape), x = torch::randn(xshape);
    at::Tensor b = c.bias ? torch::randn({c.co}) : at::Tensor();
    OneDnnDeconv::Params p{std::vector<int64_t>(d, c.stride), std::vector<int64_t>(d, c.dilation),
                           std::vector<int64_t>(d, c.pad_begin), std::vector<int64_t>(d, c.pad_end),
                           std::vector<int64_t>(d, c.output_padding)};
    auto dnn = OneDnnDeconv::make(w, 1, p);
    ASSERT_TRUE(dnn);
    at::Tensor want = aten_deconv(x, w, b, p);
    expect_near(dnn->run(x, b), want);
    // A second call reuses the cached primitive; a non-contiguous input is made contiguous.
    expect_near(dnn->run(x, b), want);
    at::Tensor xt = x.transpose(0, 1).contiguous().transpose(0, 1);
    if (c.batch > 1) {
      EXPECT_FALSE(xt.is_contiguous());
    }
    expect_near(dnn->run(xt, b), want);
  }
}

TEST(BackendOneDnn, DeconvolutionTakesEachAxisItsOwnParameters) {
  torch::manual_seed(14);
  for (int64_t ci : {3, 16}) {  // plain and blocked
    at::Tensor w = torch::randn({ci, 17, 3, 2}), x = torch::randn({2, ci, 5, 4});
    OneDnnDeconv::Params p{{2, 3}, {2, 1}, {1, 0}, {2, 1}, {1, 0}};
    auto dnn = OneDnnDeconv::make(w, 1, p);
    ASSERT_TRUE(dnn);
    at::Tensor b = torch::randn({17});
    expect_near(dnn->run(x, b), aten_deconv(x, w, b, p));
    at::Tensor cl = x.contiguous(at::MemoryFormat::ChannelsLast);
    EXPECT_FALSE(cl.is_contiguous());
    expect_near(dnn->run(cl, b), aten_deconv(x, w, b, p));
    at::Tensor x1 = torch::randn({1, ci, 3, 6}).contiguous(at::MemoryFormat::ChannelsLast);
    expect_near(dnn->run(x1, {}), aten_deconv(x1, w, {}, p));
  }
}

TEST(BackendOneDnn, DeconvolutionUsesThePreparedWeightsAndManyShapes) {
  at::Tensor w = torch::randn({16, 16, 2, 2});
  at::Tensor original = w.clone();
  OneDnnDeconv::Params p{{2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}};
  auto dnn = OneDnnDeconv::make(w, 1, p);
  ASSERT_TRUE(dnn);
  w.mul_(2);  // the caller's tensor changes after prepare: no shape may see it
  // More shapes than the cache holds, then the first ones again.
  for (int round = 0; round < 2; ++round)
    for (int64_t h = 1; h <= 20; ++h) {
      at::Tensor x = torch::randn({1, 16, h, 2});
      expect_near(dnn->run(x, {}), aten_deconv(x, original, {}, p));
    }
}

TEST(BackendOneDnn, DeconvolutionDeclinesWhatItCannotRun) {
  at::Tensor w = torch::randn({4, 3, 3, 3});
  OneDnnDeconv::Params p{{2, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0}};
  EXPECT_FALSE(OneDnnDeconv::make(w, 2, p));                                         // groups
  EXPECT_FALSE(OneDnnDeconv::make(w.to(at::kDouble), 1, p));                         // dtype
  EXPECT_FALSE(OneDnnDeconv::make(torch::randn({4, 3}), 1, p));                      // rank
  EXPECT_FALSE(OneDnnDeconv::make(torch::randn({0, 3, 3, 3}), 1, p));                // empty
  EXPECT_FALSE(OneDnnDeconv::make(w, 1, {{2, 2}, {1, 1}, {1, 1}, {0, 0}, {1, 1}}));  // end < op
  EXPECT_FALSE(OneDnnDeconv::make(w, 1, {{2, 2}, {1, 1}, {1, 1}, {2, 2}, {2, 2}}));  // op >= s
  EXPECT_FALSE(OneDnnDeconv::make(w, 1, {{2}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}));     // wrong arity
  EXPECT_FALSE(OneDnnDeconv::make(w, 1, {{0, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}));  // stride 0
  auto dnn = OneDnnDeconv::make(w, 1, p);
  ASSERT_TRUE(dnn);
  // Run-time inputs it leaves to ATen (whose kernel reports what is wrong).
  EXPECT_FALSE(dnn->run(torch::randn({1, 5, 4, 4}), {}).defined());  // channels
  EXPECT_FALSE(dnn->run(torch::randn({1, 4, 4}), {}).defined());     // rank
  EXPECT_FALSE(dnn->run(torch::randn({1, 4, 4, 4}, at::kDouble), {}).defined());
  EXPECT_FALSE(dnn->run(torch::randn({0, 4, 4, 4}), {}).defined());                 // empty batch
  EXPECT_FALSE(dnn->run(torch::randn({1, 4, 4, 4}), torch::randn({4})).defined());  // bias
  auto big_pads = OneDnnDeconv::make(w, 1, {{1, 1}, {1, 1}, {3, 3}, {3, 3}, {0, 0}});
  ASSERT_TRUE(big_pads);
  EXPECT_FALSE(big_pads->run(torch::randn({1, 4, 1, 1}), {}).defined());  // output size <= 0
}

// A graph with one ConvTranspose whose weight is an initializer.
onnx::ModelProto deconv_model(const at::Tensor& w, std::vector<ir::Attr> attrs,
                              const std::string& act = "") {
  ir::Model m;
  m.opsets = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* y =
      g.add_node("ConvTranspose", {g.add_input("x"), g.add_initializer("w", w)}, std::move(attrs))
          ->output();
  if (!act.empty()) {
    y->set_name("ct");
    y = g.add_node(act, {y}, {})->output();
  }
  y->set_name("y");
  g.add_output(y);
  return tonnx::model_to_proto(m);
}

TEST(BackendOneDnn, ConvTransposeInAModelAcrossShapesNanInfAndThreads) {
  torch::manual_seed(12);
  std::vector<ir::Attr> attrs{{"strides", ir::AttrValue(ir::Ints{2, 2})},
                              {"pads", ir::AttrValue(ir::Ints{1, 1, 1, 1})}};
  OneDnnDeconv::Params p{{2, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 0}};
  for (bool optimize : {true, false}) {
    SCOPED_TRACE("optimize " + std::to_string(optimize));
    // Blocked (16 channels) when optimizing, plain (4 output channels) when not.
    at::Tensor w = torch::randn({16, optimize ? 16 : 4, 4, 4});
    tonnx::backend::PrepareOptions opts;
    opts.optimize = optimize;
    auto rep = tonnx::backend::prepare(deconv_model(w, attrs, "Relu"), "CPU", opts);
    uint64_t before = OneDnnDeconv::runs();
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{1, 16, 4, 4}, {2, 16, 7, 3}, {1, 16, 1, 1}}) {
      at::Tensor x = torch::randn(shape);
      expect_near(rep.run({x})[0], at::relu(aten_deconv(x, w, {}, p)));
    }
    // NaN and inf reach the outputs they touch, as in ATen.
    float inf = std::numeric_limits<float>::infinity();
    at::Tensor x = torch::randn({1, 16, 4, 4});
    x[0][0][0][0] = std::nanf("");
    x[0][3][2][1] = inf;
    x[0][5][3][3] = -inf;
    expect_same_non_finite(rep.run({x})[0], at::relu(aten_deconv(x, w, {}, p)));
    expect_concurrent_runs(
        rep,
        [](int t) {
          return torch::full({1 + t % 2, 16, 3 + t, 4}, 0.25f * static_cast<float>(t + 1));
        },
        [&](const at::Tensor& xi) { return at::relu(aten_deconv(xi, w, {}, p)); });
    EXPECT_GE(OneDnnDeconv::runs() - before, 44u);  // every run above was oneDNN's
  }
}

TEST(BackendOneDnn, ConvTransposeWithBiasOutputPaddingAndBatchNorm) {
  torch::manual_seed(15);
  at::Tensor w = torch::randn({8, 5, 3, 3}), bias = torch::randn({5});
  OneDnnDeconv::Params p{{2, 2}, {1, 1}, {1, 0}, {1, 1}, {1, 1}};
  std::vector<ir::Attr> attrs{{"strides", ir::AttrValue(ir::Ints{2, 2})},
                              {"pads", ir::AttrValue(ir::Ints{1, 0, 1, 1})},
                              {"output_padding", ir::AttrValue(ir::Ints{1, 1})}};
  at::Tensor x = torch::randn({2, 8, 4, 5});
  at::Tensor want = aten_deconv(x, w, bias, p);
  // The bias as an initializer, and as a run-time input.
  for (bool runtime_bias : {false, true}) {
    ir::Model m;
    m.opsets = {{"", 17}};
    ir::Graph& g = *m.graph;
    ir::Value* xv = g.add_input("x");
    ir::Value* b = runtime_bias ? g.add_input("b") : g.add_initializer("b", bias);
    ir::Value* y = g.add_node("ConvTranspose", {xv, g.add_initializer("w", w), b}, attrs)->output();
    y->set_name("y");
    g.add_output(y);
    auto rep = tonnx::backend::prepare(tonnx::model_to_proto(m));
    uint64_t before = OneDnnDeconv::runs();
    at::Tensor got = runtime_bias ? rep.run({x, bias})[0] : rep.run({x})[0];
    EXPECT_EQ(OneDnnDeconv::runs() - before, 1u);
    expect_near(got, want);
  }
  // Fused with an unfolded BatchNormalization: the same BN on ATen's result.
  ir::Model m;
  m.opsets = {{"", 17}};
  ir::Graph& g = *m.graph;
  at::Tensor sc = torch::rand({5}) + 0.5, sh = torch::randn({5}), mu = torch::randn({5}),
             var = torch::rand({5}) + 0.1;
  ir::Value* ct =
      g.add_node("ConvTranspose",
                 {g.add_input("x"), g.add_initializer("w", w), g.add_initializer("b", bias)}, attrs)
          ->output();
  ct->set_name("ct");
  ir::Value* bn = g.add_node("BatchNormalization",
                             {ct, g.add_initializer("s", sc), g.add_initializer("sh", sh),
                              g.add_initializer("mu", mu), g.add_initializer("var", var)},
                             {})
                      ->output();
  bn->set_name("y");
  g.add_output(bn);
  auto rep = tonnx::backend::prepare(tonnx::model_to_proto(m));
  expect_near(rep.run({x})[0], at::batch_norm(want, sc, sh, mu, var, false, 0.0, 1e-5, false));
  // Groups stay on ATen.
  at::Tensor wg = torch::randn({8, 3, 3, 3});
  auto grouped = tonnx::backend::prepare(deconv_model(
      wg, {{"group", ir::AttrValue(int64_t{2})}, {"strides", ir::AttrValue(ir::Ints{2, 2})}}));
  uint64_t before = OneDnnDeconv::runs();
  expect_near(grouped.run({x})[0],
              at::convolution(x, wg, {}, {2, 2}, {0, 0}, {1, 1}, true, {0, 0}, 2));
  EXPECT_EQ(OneDnnDeconv::runs(), before);
}

TEST(BackendOneDnn, ConvTransposeWithRunTimeWeightOrAutoPadStaysOnATen) {
  torch::manual_seed(13);
  // auto_pad resolves per input shape: ATen's path, which must agree with ONNX's rule.
  at::Tensor w = torch::randn({16, 16, 3, 3});
  auto rep = tonnx::backend::prepare(
      deconv_model(w, {{"strides", ir::AttrValue(ir::Ints{2, 2})},
                       {"auto_pad", ir::AttrValue(std::string("SAME_UPPER"))}}));
  at::Tensor x = torch::randn({1, 16, 5, 5});
  at::Tensor y = rep.run({x})[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 16, 10, 10}));
  // SAME_UPPER: total pad 1 of the 11-wide full output, at the end.
  expect_near(y, aten_deconv(x, w, {}, {{2, 2}, {1, 1}, {0, 0}, {1, 1}, {0, 0}}));
  // A weight that is a graph input: ATen at run time.
  ir::Model m;
  m.opsets = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* out = g.add_node("ConvTranspose", {g.add_input("x"), g.add_input("w")}, {})->output();
  out->set_name("y");
  g.add_output(out);
  auto rep2 = tonnx::backend::prepare(tonnx::model_to_proto(m));
  at::Tensor w2 = torch::randn({16, 8, 2, 2});
  expect_near(rep2.run({x, w2})[0],
              aten_deconv(x, w2, {}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, {0, 0}}));
}

}  // namespace

namespace {

using tonnx::backend::OneDnnConv;

at::Tensor aten_conv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                     const OneDnnConv::Params& p) {
  at::Tensor xp =
      at::constant_pad_nd(x, {p.pads_begin[1], p.pads_end[1], p.pads_begin[0], p.pads_end[0]}, 0);
  return at::convolution(xp, w, b, p.strides, {0, 0}, p.dilations, false, {0, 0}, p.group);
}

struct ConvCase {
  int64_t ci, co, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, group, batch, h, w;
  bool bias;
};

TEST(BackendOneDnn, ConvolutionMatchesATen) {
  torch::manual_seed(21);
  std::vector<ConvCase> cases = {
      {64, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 14, 14, false},  // 1x1
      {16, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 2, 9, 9, true},     // 3x3 stride 2, batch 2
      {3, 16, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 20, 20, true},    // a stem: 3 channels
      {8, 8, 3, 2, 1, 2, 2, 1, 2, 0, 1, 1, 1, 1, 9, 8, true},       // per-axis params, asymmetric
      {8, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 6, 6, true},      // groups
      {16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16, 1, 7, 7, false},   // depthwise
      {4, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 3, 1, 1, true},       // 1x1 plane
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE("ci " + std::to_string(c.ci) + " co " + std::to_string(c.co) + " k " +
                 std::to_string(c.kh) + "x" + std::to_string(c.kw) + " group " +
                 std::to_string(c.group));
    at::Tensor w = torch::randn({c.co, c.ci / c.group, c.kh, c.kw});
    at::Tensor x = torch::randn({c.batch, c.ci, c.h, c.w});
    at::Tensor b = c.bias ? torch::randn({c.co}) : at::Tensor();
    OneDnnConv::Params p{{c.sh, c.sw}, {c.dh, c.dw}, {c.pt, c.pl}, {c.pb, c.pr}, c.group};
    auto dnn = OneDnnConv::make(w, p, {});
    ASSERT_TRUE(dnn);
    at::Tensor want = aten_conv(x, w, b, p);
    OneDnnConv::Done done;
    at::Tensor got = dnn->run(x, b, {}, done);
    expect_near(got, want);
    EXPECT_TRUE(got.is_contiguous(at::MemoryFormat::ChannelsLast));
    // Channels-last and non-contiguous inputs.
    expect_near(dnn->run(x.contiguous(at::MemoryFormat::ChannelsLast), b, {}, done), want);
    at::Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);
    expect_near(dnn->run(xt, b, {}, done), want);
  }
}

// oneDNN 2.6 has jit kernels for NHWC convolutions with binary post-ops on AVX-512; without
// it (an AVX2-only CPU) only its reference kernels, which OneDnnConv declines (ATen runs the
// node). Where it declines without AVX-512, the tests below check the decline and stop.
// (oneDNN's effective ISA, as TONNX_MAX_ISA caps it: asked, not assumed from this CPU.)
bool cpu_has_avx512() { return tonnx::backend::cpu_info().onednn.rfind("avx512", 0) == 0; }

TEST(BackendOneDnn, ConvolutionPostOpsStopAtTheFirstStageTheyCannotMatch) {
  torch::manual_seed(22);
  at::Tensor w = torch::randn({16, 8, 3, 3}), b = torch::randn({16});
  at::Tensor x = torch::randn({2, 8, 6, 6});
  OneDnnConv::Params p{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  at::Tensor alpha = torch::rand({16}) + 0.5, beta = torch::randn({16});
  at::Tensor conv = aten_conv(x, w, b, p);
  at::Tensor bn = conv * alpha.view({1, 16, 1, 1}) + beta.view({1, 16, 1, 1});
  at::Tensor z = torch::randn({2, 16, 6, 6});
  OneDnnConv::Done done;
  // BN, Z and LeakyRelu all inside.
  using Act = tonnx::passes::FusedActivation;
  OneDnnConv::Fused all{true, alpha, beta, true, Act::LeakyRelu, 0.2f};
  at::Tensor y = OneDnnConv::make(w, p, all)->run(x, b, z, done);
  if (!y.defined() && !cpu_has_avx512()) {
    EXPECT_FALSE(done.batchnorm || done.add || done.activation);
    GTEST_SKIP() << "no AVX-512: oneDNN has only reference kernels for these post-ops, declined";
  }
  EXPECT_TRUE(done.batchnorm && done.add && done.activation);
  expect_near(y, at::leaky_relu(bn + z, 0.2));
  // A broadcast Z stops the chain after BN.
  y = OneDnnConv::make(w, p, all)->run(x, b, torch::randn({1, 16, 1, 1}), done);
  EXPECT_TRUE(done.batchnorm);
  EXPECT_FALSE(done.add || done.activation);
  expect_near(y, bn);
  // Relu is left to ATen (oneDNN's turns NaN into 0); so are Sigmoid and Tanh.
  for (Act act : {Act::Relu, Act::Sigmoid, Act::Tanh}) {
    OneDnnConv::Fused f{true, alpha, beta, true, act, 0.01f};
    y = OneDnnConv::make(w, p, f)->run(x, b, z, done);
    EXPECT_TRUE(done.batchnorm && done.add);
    EXPECT_FALSE(done.activation) << static_cast<int>(act);
    expect_near(y, bn + z);
  }
  // A BN with run-time statistics: nothing after the convolution runs inside.
  OneDnnConv::Fused runtime_bn{true, {}, {}, true, Act::LeakyRelu, 0.2f};
  y = OneDnnConv::make(w, p, runtime_bn)->run(x, b, z, done);
  EXPECT_FALSE(done.batchnorm || done.add || done.activation);
  expect_near(y, conv);
}

TEST(BackendOneDnn, ConvolutionDeclinesWhatItCannotRun) {
  at::Tensor w = torch::randn({4, 4, 3, 3});
  OneDnnConv::Params p{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
  EXPECT_FALSE(OneDnnConv::make(w.to(at::kDouble), p, {}));
  EXPECT_FALSE(OneDnnConv::make(torch::randn({4, 4, 3}), p, {}));              // 1-D
  EXPECT_FALSE(OneDnnConv::make(w, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 3}, {}));  // 4 % 3
  EXPECT_FALSE(OneDnnConv::make(w, {{0, 1}, {1, 1}, {1, 1}, {1, 1}, 1}, {}));  // stride 0
  EXPECT_FALSE(OneDnnConv::make(w, {{1}, {1, 1}, {1, 1}, {1, 1}, 1}, {}));     // arity
  auto dnn = OneDnnConv::make(w, p, {});
  ASSERT_TRUE(dnn);
  OneDnnConv::Done done;
  EXPECT_FALSE(dnn->run(torch::randn({1, 5, 4, 4}), {}, {}, done).defined());  // channels
  EXPECT_FALSE(dnn->run(torch::randn({1, 4, 4, 4}, at::kDouble), {}, {}, done).defined());
  EXPECT_FALSE(dnn->run(torch::randn({0, 4, 4, 4}), {}, {}, done).defined());  // empty
  EXPECT_FALSE(dnn->run(torch::randn({1, 4, 4, 4}), torch::randn({3}), {}, done).defined());
  auto no_pad = OneDnnConv::make(w, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, {});
  EXPECT_FALSE(no_pad->run(torch::randn({1, 4, 2, 2}), {}, {}, done).defined());  // 3x3 > 2x2
}

// ResNet's block, prepared with and without onednn_conv.
TEST(BackendOneDnn, ResNetBlockOnOneDnnNanInfAndThreads) {
  torch::manual_seed(23);
  ir::Model m;
  m.opsets = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x");
  auto conv_bn = [&](ir::Value* in, const std::string& name) {
    ir::Value* c =
        g.add_node("Conv", {in, g.add_initializer(name + "w", torch::randn({16, 16, 3, 3}) * 0.1)},
                   {{"pads", ir::AttrValue(ir::Ints{1, 1, 1, 1})}})
            ->output();
    c->set_name(name + "c");
    ir::Value* bn = g.add_node("BatchNormalization",
                               {c, g.add_initializer(name + "s", torch::rand({16}) + 0.5),
                                g.add_initializer(name + "b", torch::randn({16})),
                                g.add_initializer(name + "m", torch::randn({16})),
                                g.add_initializer(name + "v", torch::rand({16}) + 0.1)},
                               {})
                        ->output();
    bn->set_name(name + "bn");
    return bn;
  };
  ir::Value* r1 = g.add_node("Relu", {conv_bn(x, "a")}, {})->output();
  r1->set_name("r1");
  ir::Value* add = g.add_node("Add", {conv_bn(r1, "b"), x}, {})->output();
  add->set_name("add");
  ir::Value* y = g.add_node("Relu", {add}, {})->output();
  y->set_name("y");
  g.add_output(y);
  onnx::ModelProto proto = tonnx::model_to_proto(m);
  tonnx::backend::PrepareOptions fast;
  fast.onednn_conv = true;
  auto ref = tonnx::backend::prepare(proto);
  auto rep = tonnx::backend::prepare(proto, "CPU", fast);
  at::Tensor in = torch::randn({2, 16, 8, 8});
  uint64_t before = OneDnnConv::runs();
  at::Tensor got = rep.run({in})[0];
  if (cpu_has_avx512())
    EXPECT_EQ(OneDnnConv::runs() - before, 2u);
  else  // (each convolution declines where its post-ops have only reference kernels)
    EXPECT_LE(OneDnnConv::runs() - before, 2u);
  EXPECT_TRUE(got.is_contiguous());  // outputs come back in the usual layout
  expect_near(got, ref.run({in})[0]);
  // NaN and inf flow as in ATen (through the Relu that oneDNN does not run).
  float inf = std::numeric_limits<float>::infinity();
  in[0][0][0][0] = std::nanf("");
  in[1][2][3][4] = inf;
  in[1][5][6][7] = -inf;
  expect_same_non_finite(rep.run({in})[0], ref.run({in})[0]);
  expect_concurrent_runs(
      rep,
      [](int t) {
        return torch::full({1 + t % 2, 16, 4 + t, 5}, 0.1f * static_cast<float>(t + 1));
      },
      [&](const at::Tensor& xi) { return ref.run({xi})[0]; });
  // Off by default; SAME_UPPER pads and run-time weights stay on ATen when on.
  before = OneDnnConv::runs();
  ref.run({in});
  EXPECT_EQ(OneDnnConv::runs(), before);
  ir::Model m2;
  m2.opsets = {{"", 17}};
  ir::Graph& g2 = *m2.graph;
  ir::Value* xin = g2.add_input("x");
  ir::Value* c1 = g2.add_node("Conv", {xin, g2.add_initializer("w", torch::randn({4, 16, 3, 3}))},
                              {{"auto_pad", ir::AttrValue(std::string("SAME_UPPER"))},
                               {"strides", ir::AttrValue(ir::Ints{2, 2})}})
                      ->output();
  c1->set_name("same");
  g2.add_output(c1);
  ir::Value* c2 = g2.add_node("Conv", {xin, g2.add_input("w_runtime")}, {})->output();
  c2->set_name("runtime");
  g2.add_output(c2);
  auto rep2 = tonnx::backend::prepare(tonnx::model_to_proto(m2), "CPU", fast);
  at::Tensor w2 = torch::randn({2, 16, 1, 1});
  auto outs = rep2.run({in, w2});
  EXPECT_EQ(OneDnnConv::runs(), before);
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{2, 4, 4, 4}));
  expect_near(outs[1], at::conv2d(in, w2));
}

}  // namespace

namespace {

// The default Conv path keeps ATen's oneDNN weight reordered once and makes ATen's own call
// wherever ATen with two or more threads would pick oneDNN: results must equal LibTorch's
// multi-threaded at::convolution bit for bit, at one thread and at two. (At one thread ATen
// itself sends 1x1 convolutions to OpenBLAS; tonnx keeps oneDNN's. Small batch-1 inputs that
// ATen runs natively run on oneDNN too: there ATen's at::mkldnn_convolution is the oracle.)
TEST(BackendOneDnn, PrepackedAtenConvolutionIsBitIdentical) {
  torch::manual_seed(31);
  struct Case {
    int64_t ci, co, k, stride, dilation, pad, group, batch, h;
  };
  std::vector<Case> cases = {{64, 64, 3, 1, 1, 1, 1, 1, 14},   {32, 48, 3, 2, 1, 1, 1, 2, 15},
                             {16, 16, 3, 1, 2, 2, 1, 1, 12},   {16, 32, 3, 1, 1, 1, 4, 1, 8},
                             {32, 32, 3, 1, 1, 1, 32, 1, 10},  {64, 128, 1, 1, 1, 0, 1, 1, 7},
                             {3, 16, 7, 2, 1, 3, 1, 1, 32},    {8, 8, 5, 1, 1, 2, 1, 20, 6},
                             {1, 8, 3, 1, 1, 1, 1, 2, 9},      {256, 64, 1, 1, 1, 0, 1, 1, 56},
                             {512, 128, 1, 1, 1, 0, 1, 1, 28}, {1024, 256, 1, 1, 1, 0, 1, 1, 14},
                             {40, 24, 1, 1, 1, 0, 1, 3, 9},    {2048, 512, 1, 1, 1, 0, 1, 1, 7},
                             {96, 32, 1, 1, 1, 0, 2, 2, 11},   {128, 32, 3, 1, 1, 1, 1, 1, 7},
                             {16, 8, 3, 2, 1, 1, 1, 1, 9},     {4, 4, 3, 1, 1, 0, 1, 1, 3}};
  int prev_threads = at::get_num_threads();
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    int prepacked = 0;
    for (const Case& c : cases) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " ci " + std::to_string(c.ci) + " k " +
                   std::to_string(c.k) + " group " + std::to_string(c.group));
      at::Tensor w = torch::randn({c.co, c.ci / c.group, c.k, c.k}), b = torch::randn({c.co});
      ir::Model m;
      m.opsets = {{"", 17}};
      ir::Graph& g = *m.graph;
      ir::Value* y =
          g.add_node("Conv",
                     {g.add_input("x"), g.add_initializer("w", w), g.add_initializer("b", b)},
                     {{"strides", ir::AttrValue(ir::Ints{c.stride, c.stride})},
                      {"dilations", ir::AttrValue(ir::Ints{c.dilation, c.dilation})},
                      {"pads", ir::AttrValue(ir::Ints{c.pad, c.pad, c.pad, c.pad})},
                      {"group", ir::AttrValue(c.group)}})
              ->output();
      y->set_name("y");
      g.add_output(y);
      tonnx::backend::PrepareOptions direct;  // Winograd has its own test
      direct.winograd = false;
      auto rep = tonnx::backend::prepare(tonnx::model_to_proto(m), "CPU", direct);
      at::Tensor x = torch::randn({c.batch, c.ci, c.h, c.h});
      // LibTorch's result: where it runs oneDNN with two threads, that result (the kernel does
      // not depend on the thread count); elsewhere (ATen's GEMM path, whose sums OpenBLAS
      // splits by thread count) the result at this thread count.
      // Where ATen goes native only because the input is small (batch 1, group 1, not 1x1, at
      // most 20480 elements), tonnx runs oneDNN anyway: ATen's own oneDNN call is the oracle
      // bit for bit, and ATen's native result must be close.
      auto aten = [&](const at::Tensor& in, bool* onednn) {
        at::set_num_threads(2);
        auto backend =
            at::native::select_conv_backend(in, w, b, {c.stride, c.stride}, {c.pad, c.pad},
                                            {c.dilation, c.dilation}, false, {0, 0}, c.group);
        bool two = backend == at::native::ConvBackend::Mkldnn;
        bool small = backend == at::native::ConvBackend::Slow2d && c.batch == 1 && c.group == 1 &&
                     c.k != 1 && in.numel() <= 20480;
        if (onednn) *onednn = two || small;
        if (!two) at::set_num_threads(threads);
        at::Tensor r = at::convolution(in, w, b, {c.stride, c.stride}, {c.pad, c.pad},
                                       {c.dilation, c.dilation}, false, {0, 0}, c.group);
        if (small) {
          at::Tensor dnn =
              at::mkldnn_convolution(in.contiguous(), w, b, {c.pad, c.pad}, {c.stride, c.stride},
                                     {c.dilation, c.dilation}, c.group);
          // Another order of the same sums: within 1e-5 of the largest output (measured: 5e-7).
          double scale = r.abs().nan_to_num(0, 0, 0).max().item<double>();
          expect_close(dnn, r, {0, 1e-5 * std::max(1.0, scale)}, "of " + c10::str(scale));
          r = dnn;
        }
        at::set_num_threads(threads);
        return r;
      };
      bool aten_onednn = false;
      at::Tensor want = aten(x, &aten_onednn);
      uint64_t before = tonnx::backend::prepacked_conv_runs();
      at::Tensor got = rep.run({x})[0];
      EXPECT_TRUE(at::equal(got, want))
          << "max abs diff " << (got - want).abs().max().item<double>();
      // Where ATen with two threads picks oneDNN (it depends on sizes), the prepacked weight
      // must have been used; elsewhere ATen's own path runs.
      EXPECT_EQ(tonnx::backend::prepacked_conv_runs() - before, aten_onednn ? 1u : 0u);
      prepacked += aten_onednn;
      if (c.ci == 1) {  // an NHWC [N,1,H,W] input is "contiguous" too; ATen goes channels-last
        at::Tensor nhwc = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
        EXPECT_TRUE(at::equal(rep.run({nhwc})[0], aten(nhwc, nullptr)));
      }
      // NaN and inf as ATen has them.
      x[0][0][1][1] = std::nanf("");
      x[0][c.ci - 1][2][2] = std::numeric_limits<float>::infinity();
      want = aten(x, nullptr);
      got = rep.run({x})[0];
      expect_close(got, want, {0, 0}, "");
    }
    EXPECT_GE(prepacked, 11) << "threads " << threads;
  }
  at::set_num_threads(prev_threads);
}

}  // namespace

namespace {

// PrepareOptions::exact keeps LibTorch's kernels where the default takes faster ones that
// round differently: a small batch-1 3x3 convolution (DenseNet-121's 7x7 stage) stays on
// ATen's native path and a single row's Gemm stays a GEMM; by default they run on oneDNN
// (ATen's own at::mkldnn_convolution call) and as a GEMV (tonnx's, gemm.h; at::addmv on a CPU
// without AVX2). Each is compared bit for bit with the call it is meant to be.
TEST(BackendOneDnn, ExactKeepsLibTorchsKernels) {
  torch::manual_seed(37);
  int prev_threads = at::get_num_threads();
  at::set_num_threads(1);
  at::Tensor w = torch::randn({32, 128, 3, 3}), b = torch::randn({32});
  at::Tensor fc = torch::randn({1000, 2048}), fc_b = torch::randn({1000});
  ir::Model m;
  m.opsets = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* conv =
      g.add_node("Conv", {g.add_input("x"), g.add_initializer("w", w), g.add_initializer("b", b)},
                 {{"pads", ir::AttrValue(ir::Ints{1, 1, 1, 1})}})
          ->output();
  conv->set_name("conv");
  g.add_output(conv);
  ir::Value* gemm =
      g.add_node("Gemm",
                 {g.add_input("a"), g.add_initializer("fc", fc), g.add_initializer("fc_b", fc_b)},
                 {{"transB", ir::AttrValue(int64_t{1})}})
          ->output();
  gemm->set_name("gemm");
  g.add_output(gemm);
  at::Tensor x = torch::randn({1, 128, 7, 7}), a = torch::randn({1, 2048});
  x[0][3][2][2] = std::nanf("");
  x[0][5][4][4] = std::numeric_limits<float>::infinity();
  tonnx::backend::PrepareOptions exact;
  exact.exact = true;
  std::vector<at::Tensor> got =
      tonnx::backend::prepare(tonnx::model_to_proto(m), "CPU", exact).run({x, a});
  at::Tensor native = at::convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
  expect_close(got[0], native, {0, 0}, "");
  EXPECT_TRUE(at::equal(got[1], at::addmm(fc_b, a, fc.t())));
  std::vector<at::Tensor> fast = tonnx::backend::prepare(tonnx::model_to_proto(m)).run({x, a});
  at::Tensor dnn = at::mkldnn_convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1);
  expect_close(fast[0], dnn, {0, 0}, "");
  at::Tensor gemv = tonnx::backend::gemv(a[0], fc.t(), fc_b, 1.0, 1.0, tonnx::backend::gemv_isa());
  EXPECT_TRUE(at::equal(fast[1], (gemv.defined() ? gemv : at::addmv(fc_b, fc, a[0])).unsqueeze(0)));
  // Both are the same sums in another order: close to LibTorch's.
  expect_close(fast[0], native, {1e-4, 1e-4}, "");
  expect_close(fast[1], got[1], {1e-4, 1e-4}, "");
  at::set_num_threads(prev_threads);
}

}  // namespace
