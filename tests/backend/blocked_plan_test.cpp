// The blocked activation layout (kernels/blocked_layout.h, blocked_plan.cpp): chains of
// convolutions with Relu, BatchNormalization, Add, Concat and pooling between them must give the
// NCHW path's results bit for bit (that path is checked against LibTorch elsewhere), with and
// without fusions, at one and two threads, on NaN, inf and signed zeros, batches and odd sizes; the
// layout must never reach a kernel that does not know it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "backend/kernels/pool_vectorized.h"
#include "backend/blocked_plan.h"
#include "backend/kernels/conv/onednn_conv.h"
#include "backend/kernels/onednn.h"
#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::backend::OneDnnBlockedConv;
using tonnx::test::expect_close;
using tonnx::test::GraphBuilder;

ir::AttrValue ints(ir::Ints v) { return ir::AttrValue(std::move(v)); }

// x [N, 8, H, W] through a small DenseNet / Inception / ResNet-like graph.
struct Net {
  GraphBuilder b;
  int k = 0;
  ir::Value* conv(ir::Value* x, int64_t ci, int64_t co, int64_t kernel, int64_t pad,
                  int64_t stride = 1, bool bias = true) {
    std::string n = "w" + std::to_string(++k);
    std::vector<ir::Value*> in{
        x, b.init(n, torch::randn({co, ci, kernel, kernel}) / std::sqrt(ci * kernel * kernel))};
    if (bias) in.push_back(b.init(n + "b", torch::randn({co}) * 0.1));
    return b.op("Conv", in,
                {{"pads", ints({pad, pad, pad, pad})}, {"strides", ints({stride, stride})}});
  }
  ir::Value* bn(ir::Value* x, int64_t c) {
    std::string n = "bn" + std::to_string(++k);
    return b.op(
        "BatchNormalization",
        {x, b.init(n + "s", torch::rand({c}) + 0.5), b.init(n + "b", torch::randn({c})),
         b.init(n + "m", torch::randn({c}) * 0.1), b.init(n + "v", torch::rand({c}) + 0.5)});
  }
  ir::Value* relu(ir::Value* x) { return b.op("Relu", {x}); }
};

onnx::ModelProto dense_net() {
  torch::manual_seed(5);
  Net t;
  ir::Value* x = t.b.in("x");
  ir::Value* c1 = t.relu(t.bn(t.conv(x, 8, 32, 3, 1, 1, false), 32));
  ir::Value* p1 = t.b.op(
      "MaxPool", {c1},
      {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  // Dense layers: BN -> Relu -> 1x1 -> BN -> Relu -> 3x3 (16 channels), concatenated.
  ir::Value* feat = p1;
  int64_t c = 32;
  for (int i = 0; i < 3; ++i) {
    ir::Value* h = t.relu(t.bn(feat, c));
    h = t.relu(t.bn(t.conv(h, c, 64, 1, 0, 1, false), 64));
    h = t.conv(h, 64, 16, 3, 1, 1, false);
    feat = t.b.op("Concat", {feat, h}, {{"axis", ir::AttrValue(int64_t{i == 1 ? -3 : 1})}});
    c += 16;
  }
  // Transition: average pool; an Inception-like block: branches of 16/32 channels and an
  // average pool with ceil_mode and count_include_pad, concatenated.
  ir::Value* tr = t.b.op("AveragePool", {t.conv(t.relu(t.bn(feat, c)), c, 64, 1, 0)},
                         {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  ir::Value* br1 = t.relu(t.conv(tr, 64, 16, 1, 0));
  ir::Value* br2 = t.relu(t.conv(t.relu(t.conv(tr, 64, 32, 1, 0)), 32, 32, 3, 1));
  ir::Value* br3 = t.b.op("AveragePool", {tr},
                          {{"kernel_shape", ints({3, 3})},
                           {"strides", ints({1, 1})},
                           {"pads", ints({1, 1, 1, 1})},
                           {"ceil_mode", ir::AttrValue(int64_t{1})},
                           {"count_include_pad", ir::AttrValue(int64_t{1})}});
  ir::Value* cat = t.b.op("Concat", {br1, br2, br3}, {{"axis", ir::AttrValue(int64_t{1})}});
  // A residual block: conv -> BN -> relu -> conv -> BN, + identity, relu.
  ir::Value* r = t.relu(t.bn(t.conv(cat, 112, 112, 3, 1, 1, false), 112));
  r = t.bn(t.conv(r, 112, 112, 3, 1, 1, false), 112);
  ir::Value* y = t.relu(t.b.op("Add", {r, cat}));
  // A 24-channel convolution (not a multiple of 16: NCHW) read by a blocked Concat, and a
  // strided max pool; the end leaves the layout for a kernel that does not know it.
  ir::Value* odd = t.conv(y, 112, 24, 1, 0);
  ir::Value* mix = t.b.op("Concat", {y, odd}, {{"axis", ir::AttrValue(int64_t{1})}});
  ir::Value* pooled = t.b.op("MaxPool", {mix},
                             {{"kernel_shape", ints({2, 2})},
                              {"strides", ints({2, 2})},
                              {"ceil_mode", ir::AttrValue(int64_t{1})}});
  ir::Value* gap = t.b.op("GlobalAveragePool", {pooled});
  t.b.out(gap, "y");
  t.b.out(t.b.op("Flatten", {y}), "mid");  // read by Flatten and by Conv: stays NCHW
  return tonnx::model_to_proto(t.b.m);
}

tonnx::backend::Rep prepare(const onnx::ModelProto& p, bool blocked, bool optimize) {
  tonnx::backend::PrepareOptions o;
  o.blocked_layout = blocked;
  o.optimize = optimize;
  return tonnx::backend::prepare(p, "CPU", o);
}

void expect_same_bits(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].sizes(), want[i].sizes()) << "output " << i;
    EXPECT_TRUE(got[i].is_contiguous()) << "output " << i;
    at::Tensor a = got[i].contiguous(), b = want[i].contiguous();
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * sizeof(float)), 0)
        << "output " << i << " max abs diff " << (a - b).abs().nan_to_num(0).max().item<double>();
  }
}

TEST(BackendBlocked, ChainsGiveTheNchwResultsBitForBit) {
  onnx::ModelProto p = dense_net();
  int prev = at::get_num_threads();
  for (bool optimize : {true, false}) {
    auto blocked = prepare(p, true, optimize), plain = prepare(p, false, optimize);
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      for (auto shape : {std::vector<int64_t>{1, 8, 64, 64}, {3, 8, 23, 19}, {2, 8, 9, 40}}) {
        SCOPED_TRACE("optimize " + std::to_string(optimize) + " threads " +
                     std::to_string(threads) + " shape " + c10::str(at::IntArrayRef(shape)));
        at::Tensor x = torch::randn(shape);
        uint64_t before = OneDnnBlockedConv::runs();
        uint64_t pools_before = tonnx::backend::blocked_pool_runs();
        expect_same_bits(blocked.run({x}), plain.run({x}));
        EXPECT_GE(OneDnnBlockedConv::runs() - before, 8u);  // the chain ran blocked
        // so did its pools (tonnx's blocked kernels: AVX-512 for nChw16c, AVX2 for nChw8c) but
        // the last, whose input concatenates y, which Flatten reads, and is NCHW
        if (tonnx::backend::pool_kernel_runs(tonnx::backend::cpu_info().blocked_width)) {
          EXPECT_EQ(tonnx::backend::blocked_pool_runs() - pools_before, 3u);
        }
        // NaN, inf and zeros of both signs go where the NCHW path sends them.
        x[0][0][1][1] = std::nanf("");
        x[0][3][4][5] = std::numeric_limits<float>::infinity();
        x[0][5][2][2] = -std::numeric_limits<float>::infinity();
        x[0][1].narrow(0, 0, 3).fill_(-0.f);
        auto got = blocked.run({x}), want = plain.run({x});
        for (size_t i = 0; i < got.size(); ++i)
          expect_close(got[i], want[i], {0, 0}, std::string("output ") + c10::str(i));
      }
    }
  }
  at::set_num_threads(prev);
}

// oneDNN fixes a primitive's thread count when it makes it (onednn_util.h, ShapeCache): a Rep
// makes its primitives again, once, for each thread count it runs at, and gives at each count
// the bits of a Rep first run at that count.
TEST(BackendBlocked, PrimitivesFollowTheThreadCount) {
  onnx::ModelProto p = dense_net();
  int prev = at::get_num_threads();
  at::Tensor x = torch::randn({1, 8, 64, 64});
  std::vector<at::Tensor> want[3];
  for (int t : {1, 2}) {
    at::set_num_threads(t);
    want[t] = prepare(p, true, true).run({x});
  }
  auto rep = prepare(p, true, true);
  at::set_num_threads(2);
  rep.run({x});
  // (threads, whether this count is new to the Rep)
  for (auto [t, fresh] : {std::pair{1, true}, {2, false}, {1, false}}) {
    SCOPED_TRACE("then at " + std::to_string(t) + " threads");
    at::set_num_threads(t);
    uint64_t before = tonnx::backend::onednn_cache_builds();
    expect_same_bits(rep.run({x}), want[t]);
    uint64_t built = tonnx::backend::onednn_cache_builds() - before;
    if (fresh) {
      EXPECT_GT(built, 0u);
    } else {
      EXPECT_EQ(built, 0u);
    }
  }
  at::set_num_threads(prev);
}

TEST(BackendBlocked, OnlyKernelsThatKnowTheLayoutReadIt) {
  onnx::ModelProto p = dense_net();
  ir::Model m = tonnx::model_from_proto(p);
  std::set<std::string> blocked = tonnx::backend::blocked_values(*m.graph);
  EXPECT_GE(blocked.size(), 20u);
  for (const auto& n : m.graph->nodes()) {
    tonnx::backend::BlockedReader r = tonnx::backend::blocked_reader(*n, *m.graph);
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      if (!n->input(i) || !blocked.count(n->input(i)->name())) continue;
      EXPECT_NE(std::find(r.inputs.begin(), r.inputs.end(), i), r.inputs.end())
          << n->op_type() << " reads blocked input " << i;
    }
  }
  for (const ir::Value* v : m.graph->outputs()) EXPECT_FALSE(blocked.count(v->name()));
  // A Relu of a graph input starts no chain; the value read by Flatten stays NCHW.
  GraphBuilder b;
  ir::Value* r = b.op("Relu", {b.in("x")});
  ir::Value* c = b.op("Conv", {r, b.init("w", torch::randn({16, 16, 1, 1}))});
  ir::Value* c2 = b.op("Conv", {c, b.init("w2", torch::randn({16, 16, 1, 1}))});
  ir::Value* f = b.op("Flatten", {c2});
  b.out(b.op("Conv", {c2, b.init("w3", torch::randn({16, 16, 1, 1}))}), "y");
  b.out(f, "f");
  std::set<std::string> bv = tonnx::backend::blocked_values(b.g);
  EXPECT_FALSE(bv.count(r->name()));
  EXPECT_TRUE(bv.count(c->name()));
  EXPECT_FALSE(bv.count(c2->name()));
}

// A blocked chain whose convolutions ATen sends elsewhere (a 3x3 on a small input: its
// "native is faster" rule), whose pads are not symmetric, or whose weight comes at run time.
TEST(BackendBlocked, ConvolutionsOffTheOneDnnPathStillMatch) {
  torch::manual_seed(9);
  Net t;
  ir::Value* x = t.b.in("x");
  ir::Value* a = t.relu(t.conv(x, 8, 32, 3, 1));
  ir::Value* small = t.conv(a, 32, 32, 3, 1);  // 32 x 4 x 4 input: ATen's native path
  ir::Value* asym = t.b.op("Conv", {small, t.b.init("wa", torch::randn({16, 32, 2, 2}) * 0.1)},
                           {{"pads", ints({0, 1, 1, 0})}});
  ir::Value* rt = t.b.op("Conv", {t.relu(asym), t.b.in("w_runtime")});
  t.b.out(t.relu(rt), "y");
  onnx::ModelProto p = tonnx::model_to_proto(t.b.m);
  for (bool optimize : {true, false}) {
    auto blocked = prepare(p, true, optimize), plain = prepare(p, false, optimize);
    for (int64_t hw : {4, 12}) {
      at::Tensor xi = torch::randn({1, 8, hw, hw}), w = torch::randn({16, 16, 1, 1});
      expect_same_bits(blocked.run({xi, w}), plain.run({xi, w}));
    }
  }
}

// A network's first convolution reads 3 channels and writes blocks: its output goes on blocked
// (before, only a convolution whose input channels were a multiple of the block width handed
// blocks on, so every conv net's stem reordered to NCHW and its pooling ran there).
TEST(BackendBlocked, TheStemHandsBlocksOn) {
  torch::manual_seed(17);
  Net t;
  ir::Value* x = t.b.in("x");
  ir::Value* stem = t.relu(t.bn(t.conv(x, 3, 16, 7, 3, 2, false), 16));
  ir::Value* pooled = t.b.op(
      "MaxPool", {stem},
      {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  ir::Value* c = t.relu(t.conv(pooled, 16, 16, 3, 1));
  t.b.out(t.b.op("GlobalAveragePool", {t.b.op("Add", {c, pooled})}), "y");
  onnx::ModelProto p = tonnx::model_to_proto(t.b.m);
  ir::Model m = tonnx::model_from_proto(p);
  EXPECT_TRUE(tonnx::backend::blocked_values(*m.graph).count(pooled->name()));
  int prev = at::get_num_threads();
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (bool optimize : {true, false}) {
      auto blocked = prepare(p, true, optimize), plain = prepare(p, false, optimize);
      at::Tensor xi = torch::randn({1, 3, 37, 45});
      uint64_t pools_before = tonnx::backend::blocked_pool_runs();
      expect_same_bits(blocked.run({xi}), plain.run({xi}));
      if (tonnx::backend::pool_kernel_runs(tonnx::backend::cpu_info().blocked_width)) {
        EXPECT_EQ(tonnx::backend::blocked_pool_runs() - pools_before, 1u);  // read blocks
      }
    }
  }
  at::set_num_threads(prev);
}

// Sixteen channels (one block: the conversion back to NCHW must still be contiguous), and a
// FusedConv whose Z is not blocked (its output goes back to NCHW mid-chain).
TEST(BackendBlocked, OneBlockAndAnUnblockedResidual) {
  torch::manual_seed(13);
  Net t;
  ir::Value* x = t.b.in("x");
  ir::Value* a = t.relu(t.conv(x, 8, 16, 3, 1));
  ir::Value* side = t.b.op("Sigmoid", {t.conv(x, 8, 16, 1, 0)});
  ir::Value* res = t.relu(t.b.op("Add", {t.bn(t.conv(a, 16, 16, 3, 1, 1, false), 16), side}));
  ir::Value* c = t.conv(res, 16, 16, 1, 0);
  ir::Value* pooled =
      t.b.op("AveragePool", {c}, {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}});
  ir::Value* d = t.conv(pooled, 16, 16, 1, 0);
  t.b.out(t.b.op("GlobalAveragePool", {d}), "y");
  onnx::ModelProto p = tonnx::model_to_proto(t.b.m);
  int prev = at::get_num_threads();
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (bool optimize : {true, false}) {
      auto blocked = prepare(p, true, optimize), plain = prepare(p, false, optimize);
      at::Tensor xi = torch::randn({1, 8, 48, 40});
      uint64_t before = OneDnnBlockedConv::runs();
      expect_same_bits(blocked.run({xi}), plain.run({xi}));
      EXPECT_GE(OneDnnBlockedConv::runs() - before, 3u);
    }
  }
  at::set_num_threads(prev);
}

}  // namespace
