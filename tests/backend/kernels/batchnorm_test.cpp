// Inference BatchNormalization in one pass (backend/kernels/batchnorm_one_pass.cpp), alone, fused
// with the Relu after it (ai.tonnx::FusedBatchNorm) and inside FusedConv. Oracle: ATen's own
// at::batch_norm and at::relu_, bit for bit (the kernel claims exactly that).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "backend/kernels/batchnorm_one_pass.h"
#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace {

using tonnx::backend::PrepareOptions;
using tonnx::backend::Rep;
namespace ir = tonnx::ir;
using G = tonnx::test::GraphBuilder;
using tonnx::test::has;

// Equal as bits: NaN payloads and the sign of zero too.
bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat &&
         at::equal(a.contiguous().view(at::kInt), b.contiguous().view(at::kInt));
}

at::Tensor awkward_bn(std::vector<int64_t> sizes) {
  at::Tensor x = torch::randn(sizes) * torch::exp(torch::randn(sizes) * 3);
  if (x.numel() >= 12) {
    at::Tensor f = x.view(-1);
    f[0] = std::nanf("");
    f[1] = std::numeric_limits<float>::infinity();
    f[2] = -std::numeric_limits<float>::infinity();
    f[3] = -0.f;
    f[4] = 0.f;
  }
  return x;
}

struct Stats {
  at::Tensor s, b, m, v;
};
Stats stats(int64_t c) {
  return {torch::randn({c}), torch::randn({c}), torch::randn({c}), torch::rand({c}) + 0.01};
}

TEST(BackendBatchNorm, OnePassIsAtenBitForBit) {
  torch::manual_seed(3);
  for (std::vector<int64_t> sz : std::vector<std::vector<int64_t>>{
           {2, 19, 5, 7}, {1, 64, 56, 56}, {3, 5}, {2, 9, 13}, {1, 3, 2, 2, 3}, {0, 4, 3, 3}}) {
    int64_t c = sz[1];
    Stats st = stats(c);
    tonnx::backend::BatchNormTerms t =
        tonnx::backend::batchnorm_terms(st.s, st.b, st.m, st.v, 1e-3);
    ASSERT_TRUE(t.defined());
    at::Tensor x = awkward_bn(sz);
    for (bool cl : {false, true}) {
      if (cl && sz.size() != 4) continue;
      at::Tensor xi = cl ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
      for (bool relu : {false, true}) {
        at::Tensor ref = at::batch_norm(xi, st.s, st.b, st.m, st.v, false, 0, 1e-3, false);
        if (relu) ref.relu_();
        at::Tensor got = tonnx::backend::batchnorm_inference(xi, t, relu);
        if (x.numel() == 0 || !tonnx::backend::batchnorm_kernel_runs()) {
          EXPECT_FALSE(got.defined());  // (the caller runs ATen)
          continue;
        }
        ASSERT_TRUE(got.defined()) << xi.sizes() << " channels-last " << cl;
        EXPECT_TRUE(same_bits(got, ref))
            << xi.sizes() << " channels-last " << cl << " relu " << relu;
        EXPECT_EQ(got.is_contiguous(at::MemoryFormat::ChannelsLast), cl && xi.size(1) > 1);
        // In place, as FusedConv runs it on the convolution's output.
        at::Tensor y = xi.clone();
        ASSERT_TRUE(tonnx::backend::batchnorm_inference(y, t, relu, y).defined());
        EXPECT_TRUE(same_bits(y, ref));
      }
    }
  }
  // What it leaves to ATen: other dtypes and layouts, a channel count not the terms', terms of
  // non-float or mismatched statistics.
  Stats st = stats(4);
  auto t = tonnx::backend::batchnorm_terms(st.s, st.b, st.m, st.v, 1e-5);
  EXPECT_FALSE(tonnx::backend::batchnorm_inference(torch::randn({1, 4, 3}, at::kDouble), t, false)
                   .defined());
  EXPECT_FALSE(
      tonnx::backend::batchnorm_inference(torch::randn({1, 3, 4}).transpose(1, 2), t, false)
          .defined());
  EXPECT_FALSE(tonnx::backend::batchnorm_inference(torch::randn({1, 5, 3}), t, false).defined());
  EXPECT_FALSE(tonnx::backend::batchnorm_inference(torch::randn({4}), t, false).defined());
  EXPECT_FALSE(tonnx::backend::batchnorm_terms(st.s, st.b, st.m, torch::rand({5}), 1e-5).defined());
  EXPECT_FALSE(
      tonnx::backend::batchnorm_terms(st.s.to(at::kDouble), st.b, st.m, st.v, 1e-5).defined());
}

// BatchNormalization -> Relu (DenseNet's order) becomes one FusedBatchNorm; results are the
// unfused graph's, bit for bit, at one and two threads, in both layouts.
TEST(BackendBatchNorm, FusedWithTheReluAfterIt) {
  torch::manual_seed(4);
  for (const char* act : {"Relu", "LeakyRelu", "Sigmoid"}) {
    G b;
    ir::Value* x = b.in("x");
    Stats st = stats(6);
    ir::Value* bn =
        b.op("BatchNormalization",
             {x, b.init("s", st.s), b.init("b", st.b), b.init("m", st.m), b.init("v", st.v)},
             {{"epsilon", ir::AttrValue(1e-3f)}});
    b.out(b.op(act, {bn}), "y");
    onnx::ModelProto proto = tonnx::model_to_proto(b.m);
    PrepareOptions plain;
    plain.optimize = false;
    Rep ref = tonnx::backend::prepare(proto, "CPU", plain);
    for (int threads : {1, 2}) {
      PrepareOptions o;
      o.profile = true;
      o.num_threads = threads;
      Rep rep = tonnx::backend::prepare(proto, "CPU", o);
      for (at::Tensor in : {awkward_bn({2, 6, 9, 11}),
                            awkward_bn({1, 6, 30, 30}).contiguous(at::MemoryFormat::ChannelsLast),
                            awkward_bn({3, 6}), torch::randn({0, 6, 2, 2})}) {
        at::Tensor got = rep.run({in})[0], want = ref.run({in})[0];
        EXPECT_TRUE(same_bits(got, want)) << act << " " << in.sizes();
      }
      std::vector<std::string> ops;
      for (const auto& p : rep.profile()) ops.push_back(p.op_type);
      EXPECT_TRUE(has(ops, "FusedBatchNorm")) << act;
      EXPECT_FALSE(has(ops, "BatchNormalization"));
      // A channel count that disagrees with the statistics: ATen's error, as unfused.
      EXPECT_ANY_THROW(rep.run({torch::randn({1, 5, 3, 3})}));
    }
  }
}

// Statistics given at run time: fused, on ATen's path; and a Conv -> BN -> Relu chain, whose
// FusedConv runs the BN and Relu in place in one pass: both bit for bit as unfused.
TEST(BackendBatchNorm, RunTimeStatisticsAndInsideFusedConv) {
  torch::manual_seed(5);
  G b;
  ir::Value* x = b.in("x");
  Stats st = stats(4);
  ir::Value* bn = b.op("BatchNormalization",
                       {x, b.in("s"), b.init("b", st.b), b.init("m", st.m), b.init("v", st.v)});
  b.out(b.op("Relu", {bn}), "y");
  ir::Value* conv =
      b.op("Conv", {x, b.init("w", torch::randn({8, 4, 3, 3})), b.init("cb", torch::randn({8}))},
           {{"pads", ir::AttrValue(ir::Ints{1, 1, 1, 1})}});
  Stats st8 = stats(8);
  ir::Value* bn2 = b.op("BatchNormalization", {conv, b.init("s8", st8.s), b.init("b8", st8.b),
                                               b.init("m8", st8.m), b.init("v8", st8.v)});
  b.out(b.op("Relu", {bn2}), "z");
  onnx::ModelProto proto = tonnx::model_to_proto(b.m);
  PrepareOptions plain;
  plain.optimize = false;
  PrepareOptions fast;
  fast.profile = true;
  Rep ref = tonnx::backend::prepare(proto, "CPU", plain);
  Rep rep = tonnx::backend::prepare(proto, "CPU", fast);
  at::Tensor in = awkward_bn({2, 4, 7, 9});
  std::vector<at::Tensor> got = rep.run({in, st.s}), want = ref.run({in, st.s});
  EXPECT_TRUE(same_bits(got[0], want[0]));
  EXPECT_TRUE(same_bits(got[1], want[1]));
  std::vector<std::string> ops;
  for (const auto& p : rep.profile()) ops.push_back(p.op_type);
  EXPECT_TRUE(has(ops, "FusedBatchNorm"));
  EXPECT_TRUE(has(ops, "FusedConv"));
}

// Concat -> BatchNormalization [-> activation] (DenseNet's dense layers) becomes one
// ConcatBatchNorm; results are the unfused graph's, bit for bit, at one and two threads: over
// channels in one pass (4-D and 3-D), over the batch (axis -3 of a 3-D input: the unfused
// calls), with run-time statistics, and with an empty batch.
TEST(BackendBatchNorm, FusedWithTheConcatBeforeIt) {
  torch::manual_seed(6);
  struct Case {
    int64_t axis;
    std::string act;
    bool runtime_scale;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases = {
      {1, "Relu", false, {{2, 3, 5, 7}, {2, 2, 5, 7}, {2, 1, 5, 7}}},
      {-3, "", false, {{2, 3, 5, 7}, {2, 3, 5, 7}}},
      {1, "Sigmoid", false, {{3, 4, 10}, {3, 2, 10}}},
      {-3, "Relu", false, {{1, 6, 10}, {2, 6, 10}}},
      {1, "Relu", true, {{2, 3, 4, 4}, {2, 3, 4, 4}}},
      {1, "Relu", false, {{0, 3, 4, 4}, {0, 3, 4, 4}}},
      {1, "Relu", false, {{1, 6, 9, 9}}},
      // Volumes (BatchNorm3d): 5-D like the blocked form, and W = 16 as its last dim.
      {1, "Relu", false, {{2, 4, 3, 5, 16}, {2, 2, 3, 5, 16}}},
      {1, "Relu", false, {{1, 3, 2, 4, 7}, {1, 3, 2, 4, 7}}},
  };
  for (const Case& c : cases) {
    G b;
    std::vector<ir::Value*> xs;
    for (size_t i = 0; i < c.shapes.size(); ++i) xs.push_back(b.in("x" + std::to_string(i)));
    Stats st = stats(6);
    ir::Value* scale = c.runtime_scale ? b.in("s") : b.init("s", st.s);
    ir::Value* y = b.op("BatchNormalization",
                        {b.op("Concat", xs, {{"axis", ir::AttrValue(c.axis)}}), scale,
                         b.init("b", st.b), b.init("m", st.m), b.init("v", st.v)},
                        {{"epsilon", ir::AttrValue(1e-3f)}});
    b.out(c.act.empty() ? y : b.op(c.act, {y}), "y");
    onnx::ModelProto proto = tonnx::model_to_proto(b.m);
    PrepareOptions plain;
    plain.optimize = false;
    Rep ref = tonnx::backend::prepare(proto, "CPU", plain);
    for (int threads : {1, 2}) {
      PrepareOptions o;
      o.profile = true;
      o.num_threads = threads;
      Rep rep = tonnx::backend::prepare(proto, "CPU", o);
      std::vector<at::Tensor> in;
      for (const auto& sh : c.shapes) in.push_back(awkward_bn(sh));
      if (c.runtime_scale) in.push_back(st.s);
      SCOPED_TRACE(::testing::Message() << "axis " << c.axis << " act '" << c.act << "' "
                                        << in[0].sizes() << " threads " << threads);
      EXPECT_TRUE(same_bits(rep.run(in)[0], ref.run(in)[0]));
      std::vector<std::string> ops;
      for (const auto& p : rep.profile()) ops.push_back(p.op_type);
      EXPECT_TRUE(has(ops, "ConcatBatchNorm"));
      EXPECT_FALSE(has(ops, "Concat"));
      // Inputs that disagree off the axis, or channels that disagree with the statistics:
      // what the unfused graph does (an error where it has one), not a read past an input.
      std::vector<at::Tensor> bad = in;
      bad[0] = awkward_bn({c.shapes[0][0] + 1, c.shapes[0][1], 3});
      std::vector<int64_t> more = c.shapes[0];
      more[1] += 1;
      for (const at::Tensor& odd : {bad[0], awkward_bn(more)}) {
        bad[0] = odd;
        bool ref_threw = false;
        at::Tensor want;
        try {
          want = ref.run(bad)[0];
        } catch (const std::exception&) {
          ref_threw = true;
        }
        if (ref_threw) {
          EXPECT_ANY_THROW(rep.run(bad)) << odd.sizes();
        } else {
          EXPECT_TRUE(same_bits(rep.run(bad)[0], want)) << odd.sizes();
        }
      }
    }
  }
}

}  // namespace
