// The activations of MobileNet, EfficientNet and their kin fused into the producing node
// (passes/fuse/walk.h's activation_after): Clip, HardSigmoid, HardSwish, x * Sigmoid(x), after
// Conv, Conv + BatchNormalization, BatchNormalization and Gemm. Oracle: the same graph prepared
// without optimizations (the unfused kernels pass ONNX's conformance data), bit for bit but for
// SiLU (ATen's silu); NaN, inf and the sign of zero included. Split from
// optimized_paths_test.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "run_both.h"

namespace {

namespace ir = tonnx::ir;
using G = tonnx::test::GraphBuilder;
using tonnx::test::Both;
using tonnx::test::expect_close;
using tonnx::test::has;
using tonnx::test::run_both;

// Equal values, bit for bit but for NaN's payload: NaN where the other has NaN, and zeros of
// the same sign.
void expect_same_values(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  at::Tensor gn = got.isnan(), wn = want.isnan();
  EXPECT_TRUE(at::equal(gn, wn));
  at::Tensor g0 = got.masked_fill(gn, 0), w0 = want.masked_fill(wn, 0);
  EXPECT_TRUE(at::equal(g0, w0));
  EXPECT_TRUE(at::equal(at::signbit(g0), at::signbit(w0)));
}

// The activations of MobileNet, EfficientNet and their kin, as torch.onnx writes them.
struct ActivationCase {
  const char* name;
  int opset;
  bool exact;  // the fused node gives the unfused nodes' bits (Swish: ATen's silu instead)
  std::function<ir::Value*(G&, ir::Value*)> apply;
};
std::vector<ActivationCase> activation_cases() {
  auto clip11 = [](bool nodes, bool lo, bool hi) {
    return [=](G& b, ir::Value* x) {
      b.constant_nodes = nodes;
      return b.op("Clip", {x, lo ? b.scalar(0.0) : nullptr, hi ? b.scalar(6.0) : nullptr});
    };
  };
  return {
      {"Relu6 (Clip-13, Constant bounds)", 13, true, clip11(true, true, true)},
      {"Clip-13, min only, initializer", 13, true, clip11(false, true, false)},
      {"Clip-13, max only", 13, true, clip11(false, false, true)},
      {"Clip-6, attributes", 6, true,
       [](G& b, ir::Value* x) {
         return b.op("Clip", {x}, {{"min", ir::AttrValue(-1.0f)}, {"max", ir::AttrValue(2.5f)}});
       }},
      {"Clip-6, default bounds (the float range)", 6, true,
       [](G& b, ir::Value* x) {
         return b.op("Clip", {x}, {{"min", ir::AttrValue(-1.0f)}});
       }},
      {"HardSigmoid", 13, true,
       [](G& b, ir::Value* x) {
         return b.op("HardSigmoid", {x},
                     {{"alpha", ir::AttrValue(1.0f / 6)}, {"beta", ir::AttrValue(0.5f)}});
       }},
      {"HardSwish", 14, true, [](G& b, ir::Value* x) { return b.op("HardSwish", {x}); }},
      {"SiLU as x * Sigmoid(x)", 13, false,
       [](G& b, ir::Value* x) {
         return b.op("Mul", {x, b.op("Sigmoid", {x})});
       }},
      {"SiLU as Sigmoid(x) * x", 13, false,
       [](G& b, ir::Value* x) {
         return b.op("Mul", {b.op("Sigmoid", {x}), x});
       }},
  };
}

// Edge values for a 1x1 convolution with an identity weight: NaN, +-inf, -0, values at and
// past the bounds, and large ones.
at::Tensor activation_edge_input() {
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  at::Tensor x = torch::randn({1, 4, 3, 3}) * 4;
  at::Tensor e = torch::tensor({nan, inf, -inf, -0.0f, 0.0f, 6.0f, -3.0f, 3.0f, 1e30f});
  x[0][0] = e.reshape({3, 3});
  x[0][1] = -e.reshape({3, 3});
  return x;
}

TEST(BackendFusion, MobileNetActivationsFuseIntoConvBatchNormAndGemm) {
  torch::manual_seed(11);
  for (const ActivationCase& c : activation_cases()) {
    for (const char* producer : {"Conv", "Conv+BatchNormalization", "BatchNormalization", "Gemm"}) {
      SCOPED_TRACE(std::string(c.name) + " after " + producer);
      G b;
      b.m.opsets = {{"", c.opset}};
      std::string p = producer;
      ir::Value* x = b.in("x");
      auto bn = [&](ir::Value* v) {
        return b.op("BatchNormalization",
                    {v, b.init("s", torch::rand({4}) + 0.5), b.init("sh", torch::randn({4})),
                     b.init("mu", torch::randn({4})), b.init("var", torch::rand({4}) + 0.1)});
      };
      ir::Value* y = nullptr;
      at::Tensor in;
      if (p == "Gemm") {
        y = b.op("Gemm", {x, b.init("w", torch::randn({4, 4})), b.init("c", torch::randn({4}))});
        in = torch::randn({3, 4}) * 4;
        in[0] = torch::tensor({std::nanf(""), std::numeric_limits<float>::infinity(), 0.f, 1.f});
      } else {
        in = activation_edge_input();
        if (p == "BatchNormalization") {
          y = bn(x);
        } else {
          at::Tensor w = (torch::eye(4) + 0.1 * torch::randn({4, 4})).reshape({4, 4, 1, 1});
          w[0] = torch::eye(4)[0].reshape({4, 1, 1});  // channel 0 passes the edge values on
          y = b.op("Conv", {x, b.init("w", w), b.init("cb", torch::zeros({4}))});
          if (p != "Conv") y = bn(y);
        }
      }
      b.out(c.apply(b, y), "y");
      Both r = run_both(b, {in});
      const char* fused = p == "Gemm"                 ? "FusedGemm"
                          : p == "BatchNormalization" ? "FusedBatchNorm"
                                                      : "FusedConv";
      EXPECT_TRUE(has(r.ops, fused));
      for (const char* op : {"Clip", "HardSigmoid", "HardSwish", "Sigmoid", "Mul", "Constant"})
        EXPECT_FALSE(has(r.ops, op)) << op;
      if (c.exact && p != "Gemm")
        expect_same_values(r.fast[0], r.plain[0]);
      else
        expect_close(r.fast[0], r.plain[0], 1e-5, 1e-6);
    }
  }
}

TEST(BackendFusion, ActivationsThatReadMoreThanTheConvAreNotFused) {
  torch::manual_seed(12);
  auto conv = [](G& b) {
    return b.op("Conv", {b.in("x"), b.init("w", torch::randn({2, 2, 1, 1}))});
  };
  at::Tensor x = torch::randn({1, 2, 3, 3});
  {  // Clip whose bound is a graph input
    G b;
    b.out(b.op("Clip", {conv(b), b.in("lo")}), "y");
    Both r = run_both(b, {x, torch::tensor(0.5f)});
    EXPECT_TRUE(has(r.ops, "Clip"));
    expect_same_values(r.fast[0], r.plain[0]);
  }
  {  // x * Sigmoid(x) where x is read a third time
    G b;
    ir::Value* c = conv(b);
    b.out(b.op("Mul", {c, b.op("Sigmoid", {c})}), "y");
    b.out(b.op("Neg", {c}), "z");
    Both r = run_both(b, {x});
    EXPECT_TRUE(has(r.ops, "Sigmoid"));
    EXPECT_TRUE(has(r.ops, "Mul"));
    for (int i = 0; i < 2; ++i) expect_same_values(r.fast[i], r.plain[i]);
  }
  {  // Mul(Sigmoid(x), y) of another value
    G b;
    ir::Value* c = conv(b);
    b.out(b.op("Mul", {b.op("Sigmoid", {c}), b.in("other")}), "y");
    Both r = run_both(b, {x, torch::randn({1, 2, 3, 3})});
    EXPECT_TRUE(has(r.ops, "Mul"));
    expect_same_values(r.fast[0], r.plain[0]);
  }
  {  // Clip-11 with no bounds is the identity there, but not before 11: left as it is
    G b;
    b.out(b.op("Clip", {conv(b)}), "y");
    Both r = run_both(b, {x});
    expect_same_values(r.fast[0], r.plain[0]);
  }
}

}  // namespace
