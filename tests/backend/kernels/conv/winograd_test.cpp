// 3x3 stride-1 convolutions on a Winograd algorithm (PrepareOptions::winograd): the
// oracle is the convolution computed in double precision. Winograd's results must be as close
// to it as LibTorch's own float convolution is (within a small factor) and within the tests'
// tolerance of LibTorch's; non-finite values must come out exactly where the direct
// convolution puts them; `exact` and `winograd = false` must keep ATen's results bit for bit;
// the blocked layout must not change a bit of it. Which kernel runs (oneDNN's F(2x2), tonnx's
// own, or the direct one) depends on the CPU: every expectation asks the code that decides
// (OneDnnBlockedConv::algorithm), never this machine.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backend/arena.h"
#include "backend/kernels/conv/onednn_conv.h"
#include "backend/kernels/onednn.h"
#include "backend/kernels/conv/winograd.h"
#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::backend::OneDnnBlockedConv;
using tonnx::backend::Winograd2x3;
using tonnx::test::expect_close;
using tonnx::test::GraphBuilder;

using Algorithm = OneDnnBlockedConv::Algorithm;

// The algorithm the backend takes on this CPU, at the current thread count, for a 3x3 stride-1
// convolution of `out` channels (pads `pad`) on X of `x` sizes: asked of the code that decides.
// It depends on the shapes alone, not on the weights' values.
Algorithm chosen(at::IntArrayRef x, int64_t out, int64_t pad, bool bias) {
  auto conv = OneDnnBlockedConv::make(torch::ones({out, x[1], 3, 3}),
                                      {{1, 1}, {1, 1}, {pad, pad}, 1, /*winograd=*/true});
  return conv ? conv->algorithm(x, bias) : Algorithm::direct;
}

ir::AttrValue int_attr(ir::Ints v) { return ir::AttrValue(std::move(v)); }

struct Case {
  std::vector<int64_t> x;  // N, C, H, W
  int64_t out_channels, pad;
  bool bias;
};

onnx::ModelProto conv_model(const at::Tensor& w, const at::Tensor& b, int64_t pad,
                            int64_t stride = 1) {
  GraphBuilder g;
  std::vector<ir::Value*> in{g.in("x"), g.init("w", w)};
  if (b.defined()) in.push_back(g.init("b", b));
  g.out(g.op("Conv", in,
             {{"pads", int_attr({pad, pad, pad, pad})}, {"strides", int_attr({stride, stride})}}),
        "y");
  return tonnx::model_to_proto(g.m);
}

at::Tensor run(const onnx::ModelProto& p, const at::Tensor& x,
               tonnx::backend::PrepareOptions o = {}) {
  return tonnx::backend::prepare(p, "CPU", o).run({x}).at(0);
}

double rms(const at::Tensor& a) { return a.to(at::kDouble).pow(2).mean().sqrt().item<double>(); }

TEST(BackendWinograd, AsCloseToTheExactResultAsLibTorch) {
  torch::manual_seed(11);
  int prev = at::get_num_threads();
  int ran = 0;  // cases run on a Winograd kernel (oneDNN's F(2x2) where it offers one, or tonnx's)
  for (const Case& c :
       {Case{{1, 64, 56, 56}, 64, 1, true}, Case{{1, 256, 14, 14}, 256, 1, true},
        Case{{1, 512, 7, 7}, 512, 1, false}, Case{{1, 192, 13, 13}, 384, 1, true},
        Case{{2, 64, 13, 13}, 128, 1, true}, Case{{1, 96, 9, 20}, 32, 1, false},
        Case{{1, 128, 16, 16}, 48, 0, true},
        // Shapes oneDNN offers only F(4x4) for on some CPUs (Zen 4): tonnx's own
        // F(2x2) (winograd.h) there. ResNet's 128@28; Inception v3's 80 -> 192 without
        // pads; odd sizes and two images; 840 tiles over two blocks, a block spanning both
        // images; pads of 2 (outputs made of pads and bias alone at the corners).
        Case{{1, 128, 28, 28}, 128, 1, true}, Case{{1, 80, 37, 37}, 192, 0, true},
        Case{{2, 96, 17, 19}, 96, 1, true}, Case{{2, 96, 40, 41}, 96, 1, false},
        Case{{1, 128, 13, 12}, 112, 2, true},
        // 64 output channels: super_resolution's and VGG's 64 -> 64 on 224 x 224.
        Case{{1, 64, 112, 112}, 64, 1, true},
        // Planes smaller than a tile's input (one row, two by two).
        Case{{1, 512, 1, 3}, 512, 1, true}, Case{{1, 512, 2, 2}, 512, 1, false}}) {
    int64_t ic = c.x[1];
    // Post-Relu activations and kaiming-scaled weights, as in the zoo's conv nets.
    at::Tensor x = torch::randn(c.x).relu();
    at::Tensor w = torch::randn({c.out_channels, ic, 3, 3}) * std::sqrt(2.0 / (9.0 * ic));
    at::Tensor b = c.bias ? torch::randn({c.out_channels}) * 0.1 : at::Tensor();
    at::Tensor exact = at::conv2d(x.to(at::kDouble), w.to(at::kDouble),
                                  c.bias ? b.to(at::kDouble) : at::Tensor(), 1, c.pad);
    at::Tensor libtorch = at::conv2d(x, w, b, 1, c.pad);
    onnx::ModelProto p = conv_model(w, b, c.pad);
    for (int threads : {1, 2}) {
      SCOPED_TRACE(c10::str("x ", at::IntArrayRef(c.x), " out ", c.out_channels, " pad ", c.pad,
                            " threads ", threads));
      at::set_num_threads(threads);
      Algorithm a = chosen(c.x, c.out_channels, c.pad, c.bias);
      SCOPED_TRACE(OneDnnBlockedConv::name(a));
      uint64_t before = OneDnnBlockedConv::winograd_runs(), own = Winograd2x3::runs();
      at::Tensor got = run(p, x);
      EXPECT_EQ(OneDnnBlockedConv::winograd_runs() - before, a == Algorithm::direct ? 0u : 1u);
      EXPECT_EQ(Winograd2x3::runs() - own, a == Algorithm::own_winograd ? 1u : 0u);
      ran += a != Algorithm::direct;
      ASSERT_EQ(got.sizes(), libtorch.sizes());
      // Twice LibTorch's error, or 1e-6 of the output's RMS (8 float ulps) where LibTorch's
      // is smaller still (measured: F(2x2, 3x3) 5.2e-7 on 512@7 of RMS 0.91, LibTorch's
      // oneDNN kernel 1.6e-7; the zoo models' outputs are the criterion that matters).
      double err = rms(got - exact), ref = rms(libtorch - exact);
      EXPECT_LE(err, std::max(2 * ref, 1e-6 * rms(exact)))
          << "Winograd's rms error " << err << ", LibTorch's " << ref;
      tonnx::test::expect_close(got, libtorch, 1e-3, 1e-5);  // the zoo tests' tolerance
    }
  }
  // Where tonnx's kernel runs (AVX-512), the 13 shapes it takes (all but 96 -> 32 and
  // 128 -> 48) run a Winograd kernel at both thread counts: tonnx's or oneDNN's.
  if (Winograd2x3::available()) {
    EXPECT_GE(ran, 26);
  }
  at::set_num_threads(prev);
}

// Each input shape gets its own Winograd2x3 (tiles, matmul rows), and they share the one
// transformed weight: a Rep run at three shapes transforms and packs it once.
TEST(BackendWinograd, TonnxsOwnKernelTransformsTheWeightOncePerNode) {
  torch::manual_seed(18);
  at::Tensor w = torch::randn({128, 128, 3, 3}) * 0.03, b = torch::randn({128});
  auto rep = tonnx::backend::prepare(conv_model(w, b, 1), "CPU");
  const std::vector<std::vector<int64_t>> shapes{
      {1, 128, 28, 28}, {2, 128, 28, 28}, {1, 128, 19, 23}};
  uint64_t own = 0;  // shapes the backend runs on tonnx's kernel on this CPU (asked first:
                     // asking makes a kernel, which packs a weight of its own)
  for (const auto& shape : shapes) own += chosen(shape, 128, 1, true) == Algorithm::own_winograd;
  uint64_t runs = Winograd2x3::runs(), packs = Winograd2x3::weight_packs();
  for (const auto& shape : shapes) {
    SCOPED_TRACE(c10::str("x ", at::IntArrayRef(shape)));
    at::Tensor x = torch::randn(shape);
    tonnx::test::expect_close(rep.run({x}).at(0), at::conv2d(x, w, b, 1, 1), 1e-3, 1e-5);
  }
  EXPECT_EQ(Winograd2x3::runs() - runs, own);
  EXPECT_EQ(Winograd2x3::weight_packs() - packs, own ? 1u : 0u);
}

// tonnx's kernel on its own (whatever channel counts and planes the conv node's rules let
// through): planes smaller than a tile's input, odd sizes, pads 0 to 2, several images,
// against LibTorch's convolution at the zoo tests' tolerance.
TEST(BackendWinograd, TonnxsOwnKernelOnTinyAndOddPlanes) {
  if (!Winograd2x3::available()) GTEST_SKIP() << "no AVX-512 on this CPU";
  torch::manual_seed(17);
  struct Shape {
    int64_t n, c, k, h, w, pad;
  };
  for (const Shape& s :
       {Shape{1, 16, 16, 1, 1, 1}, Shape{2, 32, 16, 1, 3, 1}, Shape{1, 16, 32, 2, 2, 1},
        Shape{3, 16, 16, 3, 3, 0}, Shape{1, 48, 32, 5, 4, 2}, Shape{2, 16, 48, 7, 9, 1}}) {
    SCOPED_TRACE(
        c10::str("n ", s.n, " c ", s.c, " k ", s.k, " plane ", s.h, "x", s.w, " pad ", s.pad));
    at::Tensor w = torch::randn({s.k, s.c, 3, 3}) * 0.2, b = torch::randn({s.k});
    at::Tensor x = torch::randn({s.n, s.c, s.h, s.w});
    auto wg = Winograd2x3::make(w, s.n, s.h, s.w, s.pad, s.pad);
    ASSERT_TRUE(wg);
    at::Tensor want = at::conv2d(x, w, b, 1, s.pad);
    at::Tensor xb = x.view({s.n, s.c / 16, 16, s.h, s.w}).permute({0, 1, 3, 4, 2}).contiguous();
    at::Tensor yb = at::full({s.n, s.k / 16, want.size(2), want.size(3), 16}, std::nanf(""));
    wg->run(xb.data_ptr<float>(), b.data_ptr<float>(), yb.data_ptr<float>());
    at::Tensor got = yb.permute({0, 1, 4, 2, 3}).reshape(want.sizes());
    tonnx::test::expect_close(got, want, 1e-3, 1e-5);  // every element written, none NaN
  }
  // No output (planes under 3x3 without pads): nothing to make.
  EXPECT_FALSE(Winograd2x3::make(torch::randn({16, 16, 3, 3}), 1, 1, 1, 0, 0));
  EXPECT_FALSE(Winograd2x3::make(torch::randn({16, 16, 3, 3}), 1, 2, 5, 0, 0));
  EXPECT_FALSE(Winograd2x3::make(torch::randn({16, 8, 3, 3}), 1, 4, 4, 1, 1));  // C % 16
}

// 64 and 128 channels, on whichever Winograd kernel this CPU takes for each.
TEST(BackendWinograd, NonFiniteValuesComeOutWhereTheDirectConvolutionPutsThem) {
  torch::manual_seed(12);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t ch : {64, 128}) {
    at::Tensor w = torch::randn({ch, ch, 3, 3}) * 0.05, b = torch::randn({ch});
    onnx::ModelProto p = conv_model(w, b, 1);
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE(c10::str("channels ", ch, " variant ", variant));
      at::Tensor x = torch::randn({1, ch, 28, 28});
      if (variant == 0) x[0][3][10][10] = std::nanf("");
      if (variant == 1) x[0][7][0][27] = inf;
      if (variant == 2) {  // both signs: NaN where they meet, +-inf around
        x[0][1][5][5] = inf;
        x[0][2][5][7] = -inf;
      }
      if (variant == 3) {  // a tile's edge, and the last channel block
        x[0][ch - 1][13][14] = std::nanf("");
        x[0][5][27][0] = -inf;
      }
      Algorithm a = chosen(x.sizes(), ch, 1, true);
      SCOPED_TRACE(OneDnnBlockedConv::name(a));
      uint64_t before = OneDnnBlockedConv::winograd_runs(), own = Winograd2x3::runs();
      at::Tensor got = run(p, x);
      EXPECT_EQ(OneDnnBlockedConv::winograd_runs() - before, a == Algorithm::direct ? 0u : 1u);
      EXPECT_EQ(Winograd2x3::runs() - own, a == Algorithm::own_winograd ? 1u : 0u);
      // ATen picks oneDNN for this shape: the direct primitive, bit for bit.
      at::Tensor direct = at::mkldnn_convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1);
      expect_close(got, direct, {0, 0}, "");
      // The non-finite outputs lie in the 3x3 neighbourhoods of the non-finite inputs only.
      int64_t bad = (~at::isfinite(got)).sum().item<int64_t>();
      EXPECT_EQ(bad, (~at::isfinite(at::conv2d(x, w, b, 1, 1))).sum().item<int64_t>());
      EXPECT_LE(bad, (variant >= 2 ? 2 : 1) * 9 * ch);
    }
  }
}

// tonnx's own F(2x2) splits the tiles over the threads, each running the matrix products of
// its own (winograd.h): the kernel gives the same bits at one thread and at two, and so does a
// Rep whose first run was at one thread and its second at two (the other way round too),
// whichever kernel the Rep chose: a choice once made for a shape is kept. (oneDNN's F(2x2)
// makes no such claim: on an Intel Xeon its bits differ between one and two threads.)
TEST(BackendWinograd, TonnxsOwnKernelGivesTheSameBitsAtAnyThreadCount) {
  torch::manual_seed(16);
  int prev = at::get_num_threads();
  at::Tensor w = torch::randn({96, 96, 3, 3}) * 0.05, b = torch::randn({96});
  at::Tensor x = torch::randn({2, 96, 40, 41});
  auto same_bits = [](const at::Tensor& a, const at::Tensor& c) {
    return std::memcmp(a.data_ptr(), c.data_ptr(), a.numel() * sizeof(float)) == 0;
  };
  if (Winograd2x3::available()) {
    auto wg = Winograd2x3::make(w, 2, 40, 41, 1, 1);
    ASSERT_TRUE(wg);
    at::Tensor xb = x.view({2, 6, 16, 40, 41}).permute({0, 1, 3, 4, 2}).contiguous();
    at::Tensor y[2];
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      y[threads - 1] = at::empty({2, 6, 40, 41, 16});
      wg->run(xb.data_ptr<float>(), b.data_ptr<float>(), y[threads - 1].data_ptr<float>());
    }
    EXPECT_TRUE(same_bits(y[0], y[1]));
    at::Tensor got = y[0].permute({0, 1, 4, 2, 3}).reshape({2, 96, 40, 41});
    tonnx::test::expect_close(got, at::conv2d(x, w, b, 1, 1), 1e-3, 1e-5);
  }
  onnx::ModelProto p = conv_model(w, b, 1);
  for (int first : {1, 2}) {
    SCOPED_TRACE(c10::str("first run at ", first, " threads"));
    at::set_num_threads(first);
    Algorithm algorithm = chosen(x.sizes(), 96, 1, true);
    SCOPED_TRACE(OneDnnBlockedConv::name(algorithm));
    auto rep = tonnx::backend::prepare(p, "CPU");
    uint64_t before = Winograd2x3::runs();
    at::Tensor a = rep.run({x}).at(0);
    at::set_num_threads(3 - first);
    at::Tensor c = rep.run({x}).at(0);
    EXPECT_EQ(Winograd2x3::runs() - before, algorithm == Algorithm::own_winograd ? 2u : 0u);
    if (algorithm == Algorithm::own_winograd) {
      EXPECT_TRUE(same_bits(a, c));
    }
    tonnx::test::expect_close(a, at::conv2d(x, w, b, 1, 1), 1e-3, 1e-5);
    tonnx::test::expect_close(c, at::conv2d(x, w, b, 1, 1), 1e-3, 1e-5);
  }
  at::set_num_threads(prev);
}

TEST(BackendWinograd, ExactAndOffKeepTheDirectAlgorithm) {
  torch::manual_seed(13);
  at::Tensor w = torch::randn({64, 64, 3, 3}) * 0.05, b = torch::randn({64});
  at::Tensor x = torch::randn({1, 64, 28, 28});
  onnx::ModelProto p = conv_model(w, b, 1);
  tonnx::backend::PrepareOptions exact, off;
  exact.exact = true;
  off.winograd = false;
  uint64_t before = OneDnnBlockedConv::winograd_runs();
  EXPECT_TRUE(at::equal(run(p, x, exact), at::conv2d(x, w, b, 1, 1)));
  EXPECT_TRUE(
      at::equal(run(p, x, off), at::mkldnn_convolution(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1)));
  // Not a Winograd shape: stride 2, and too few input channels.
  EXPECT_TRUE(at::equal(run(conv_model(w, b, 1, 2), x),
                        at::mkldnn_convolution(x, w, b, {1, 1}, {2, 2}, {1, 1}, 1)));
  at::Tensor w32 = torch::randn({64, 32, 3, 3}) * 0.05, x32 = torch::randn({1, 32, 56, 56});
  EXPECT_TRUE(at::equal(run(conv_model(w32, b, 1), x32),
                        at::mkldnn_convolution(x32, w32, b, {1, 1}, {1, 1}, {1, 1}, 1)));
  EXPECT_EQ(OneDnnBlockedConv::winograd_runs(), before);
}

// conv -> Relu -> conv -> Add(residual) -> Relu -> MaxPool -> conv: the blocked layout
// (the default) against every activation in NCHW, with and without fusions.
TEST(BackendWinograd, TheBlockedLayoutGivesTheNchwResultsBitForBit) {
  torch::manual_seed(14);
  GraphBuilder g;
  auto conv = [&](ir::Value* v, int64_t ci, int64_t co) {
    std::string n = "w" + std::to_string(g.count);
    return g.op("Conv",
                {v, g.init(n, torch::randn({co, ci, 3, 3}) * std::sqrt(2.0 / (9.0 * ci))),
                 g.init(n + "b", torch::randn({co}) * 0.1)},
                {{"pads", int_attr({1, 1, 1, 1})}});
  };
  ir::Value* x = g.in("x");
  ir::Value* r = g.op("Relu", {conv(x, 64, 64)});
  ir::Value* y = g.op("Relu", {g.op("Add", {conv(r, 64, 64), x})});
  ir::Value* pooled =
      g.op("MaxPool", {y}, {{"kernel_shape", int_attr({2, 2})}, {"strides", int_attr({2, 2})}});
  g.out(conv(conv(pooled, 64, 128), 128, 128), "y");  // the last on tonnx's own F(2x2)
  onnx::ModelProto p = tonnx::model_to_proto(g.m);
  for (bool optimize : {true, false}) {
    tonnx::backend::PrepareOptions blocked, plain;
    blocked.optimize = plain.optimize = optimize;
    plain.blocked_layout = false;
    for (auto shape : {std::vector<int64_t>{1, 64, 56, 56}, {2, 64, 19, 23}}) {
      SCOPED_TRACE(c10::str("optimize ", optimize, " shape ", at::IntArrayRef(shape)));
      at::Tensor in = torch::randn(shape);
      // Each convolution on the kernel this CPU takes for its shape, in both runs.
      const int64_t h = shape[2], w = shape[3];
      const std::vector<int64_t> half{shape[0], 64, h / 2, w / 2};
      uint64_t want_any = 0, want_own = 0;
      for (Algorithm a :
           {chosen(shape, 64, 1, true), chosen(shape, 64, 1, true), chosen(half, 128, 1, true),
            chosen({shape[0], 128, h / 2, w / 2}, 128, 1, true)}) {
        want_any += a != Algorithm::direct;
        want_own += a == Algorithm::own_winograd;
      }
      uint64_t before = OneDnnBlockedConv::winograd_runs(), own = Winograd2x3::runs();
      at::Tensor a = run(p, in, blocked), b = run(p, in, plain);
      EXPECT_EQ(Winograd2x3::runs() - own, 2 * want_own);
      EXPECT_EQ(OneDnnBlockedConv::winograd_runs() - before, 2 * want_any);
      // Where tonnx's kernel runs, 128 -> 128 runs a Winograd kernel (tonnx's or oneDNN's).
      if (Winograd2x3::available()) {
        EXPECT_GE(want_any, 1u);
      }
      ASSERT_EQ(a.sizes(), b.sizes());
      EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * sizeof(float)), 0);
    }
  }
}

// Winograd's scratchpads run to tens of MB and differ from layer to layer (VGG-16: 7 to 51
// MB); blocks kept per size churned, and every run faulted them in anew (one layer took 135
// ms instead of 11). Scratch blocks serve any smaller request, one per call at once.
TEST(BackendArena, ScratchBlocksServeEveryLaterSize) {
  auto arena = tonnx::backend::make_arena();
  tonnx::detail::BlockPool* pool = nullptr;
  void* outlives = nullptr;
  {
    tonnx::backend::ArenaScope scope(arena.get());
    pool = tonnx::detail::thread_block_pool();
    ASSERT_NE(pool, nullptr);
    auto one_run = [&] {
      for (size_t mb : {4, 1, 6, 2}) {
        void* p = pool->take_scratch(mb << 20);
        std::memset(p, 1, mb << 20);  // all of it is usable (ASan checks)
        pool->put_scratch(p);
      }
    };
    one_run();
    auto first = tonnx::backend::arena_stats(*arena);
    EXPECT_EQ(first.misses, 2u);  // 4 MB, then 6 MB (the 4 MB block dropped)
    for (int i = 0; i < 3; ++i) one_run();
    auto st = tonnx::backend::arena_stats(*arena);
    EXPECT_EQ(st.misses, first.misses);
    EXPECT_EQ(st.hits, first.hits + 12);
    // Two at once (two runs of one Rep on two threads): two blocks, each served later.
    void* a = pool->take_scratch(3 << 20);
    void* b = pool->take_scratch(5 << 20);
    EXPECT_NE(a, b);
    std::memset(b, 2, 5 << 20);
    pool->put_scratch(a);
    pool->put_scratch(b);
    outlives = pool->take_scratch(1 << 20);
  }
  arena.reset();                // the Rep is gone ...
  pool->put_scratch(outlives);  // ... and a block comes back late: freed, not cached
}

TEST(BackendArena, BlocksARunLeftUntakenGoBackAtTheNextRun) {
  auto arena = tonnx::backend::make_arena();
  auto run = [&](std::vector<int64_t> elems) {  // one run: a scope, each tensor made and freed
    tonnx::backend::ArenaScope scope(arena.get());
    for (int64_t n : elems) at::empty({n});
  };
  constexpr int64_t kBig = 1 << 18, kSmall = 1 << 16;  // 1 MiB, 256 KiB: neither serves both
  run({kBig, kSmall});
  EXPECT_EQ(tonnx::backend::arena_stats(*arena).cached_bytes, 4u * (kBig + kSmall));
  // The same sizes, run after run: served from the cache, nothing dropped.
  for (int i = 0; i < 3; ++i) run({kBig, kSmall});
  auto st = tonnx::backend::arena_stats(*arena);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.cached_bytes, 4u * (kBig + kSmall));
  // The model stops asking for 1 MiB: the block stays through 8 runs that leave it untaken
  // (input shapes may take turns), and goes back to the system when the 9th starts.
  for (int i = 0; i < 8; ++i) {
    run({kSmall});
    EXPECT_EQ(tonnx::backend::arena_stats(*arena).cached_bytes, 4u * (kBig + kSmall)) << i;
  }
  run({kSmall});
  st = tonnx::backend::arena_stats(*arena);
  EXPECT_EQ(st.cached_bytes, 4u * kSmall);
  EXPECT_EQ(st.misses, 2u);
}

TEST(BackendArena, ARunThatNeverRepeatsASizeIsCapped) {
  // A Loop growing a tensor: every request a little larger than any block cached, so none
  // is served, and what the cache keeps stops at 4x the peak plus 64 MiB.
  auto arena = tonnx::backend::make_arena();
  tonnx::backend::ArenaScope scope(arena.get());
  size_t total = 0;  // bytes asked for, about 220 MiB
  for (int64_t i = 0; i < 200; ++i) {
    int64_t n = (int64_t{1} << 18) + i * 1024;
    at::empty({n});
    total += 4 * static_cast<size_t>(n);
  }
  auto st = tonnx::backend::arena_stats(*arena);
  EXPECT_EQ(st.misses, 200u);
  EXPECT_GT(st.cached_bytes, 0u);
  EXPECT_LE(st.cached_bytes, 4 * st.peak_live_bytes + (size_t{64} << 20));
  EXPECT_LT(st.cached_bytes, total);
}

}  // namespace
