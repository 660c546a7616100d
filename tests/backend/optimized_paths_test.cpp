// The backend's speed work must not change results: prepare-time fusions (FusedConv,
// FusedGemm), the GEMV and oneDNN pooling paths, the memory arena and profiling. Oracles:
// the same graph prepared without optimizations (the unfused kernels pass ONNX's
// conformance data) and LibTorch's own functions.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <thread>

#include "backend/arena.h"
#include "tonnx/backend.h"
#include "tonnx/compare.h"
#include "run_both.h"
#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace {

using tonnx::backend::PrepareOptions;
using tonnx::backend::Rep;
namespace ir = tonnx::ir;

using G = tonnx::test::GraphBuilder;
using tonnx::test::expect_close;
using tonnx::test::has;

using tonnx::test::Both;
using tonnx::test::run_both;

ir::Attr ints(const std::string& n, ir::Ints v) { return {n, ir::AttrValue(std::move(v))}; }

TEST(BackendFusion, ResNetBlockConvBatchNormAddRelu) {
  torch::manual_seed(0);
  G b;
  ir::Value* x = b.in("x");
  ir::Value* conv =
      b.op("Conv", {x, b.init("w", torch::randn({4, 4, 3, 3})), b.init("cb", torch::randn({4}))},
           {ints("pads", {1, 1, 1, 1})});
  ir::Value* bn = b.op("BatchNormalization",
                       {conv, b.init("s", torch::rand({4}) + 0.5), b.init("sh", torch::randn({4})),
                        b.init("mu", torch::randn({4})), b.init("var", torch::rand({4}) + 0.1)},
                       {{"epsilon", ir::AttrValue(1e-3f)}});
  ir::Value* add = b.op("Add", {x, bn});  // the residual on the left: order must not matter
  b.out(b.op("Relu", {add}), "y");
  at::Tensor xin = torch::randn({2, 4, 5, 5});
  for (bool fold : {false, true}) {
    Both r = run_both(b, {xin}, fold);
    EXPECT_TRUE(has(r.ops, "FusedConv"));
    EXPECT_FALSE(has(r.ops, "BatchNormalization"));
    EXPECT_FALSE(has(r.ops, "Relu"));
    // Unfolded, the fused node makes the same ATen calls: bit-identical results.
    if (!fold) {
      EXPECT_TRUE(at::equal(r.fast[0], r.plain[0]));
    }
    expect_close(r.fast[0], r.plain[0]);
    EXPECT_GE(r.fast[0].min().item<float>(), 0.0f);
  }
}

TEST(BackendFusion, ConvTransposeBatchNormActivations) {
  torch::manual_seed(6);
  for (const char* act : {"Relu", "LeakyRelu", "Sigmoid", "Tanh"}) {
    for (int64_t group : {1, 2}) {
      for (bool fold : {false, true}) {
        SCOPED_TRACE(std::string(act) + " group " + std::to_string(group) + " fold " +
                     std::to_string(fold));
        G b;
        ir::Value* ct = b.op(
            "ConvTranspose", {b.in("x"), b.init("w", torch::randn({4, 3, 4, 4}))},
            {ints("strides", {2, 2}), ints("pads", {1, 1, 1, 1}), {"group", ir::AttrValue(group)}});
        int64_t c = 3 * group;
        ir::Value* bn =
            b.op("BatchNormalization",
                 {ct, b.init("s", torch::rand({c}) + 0.5), b.init("sh", torch::randn({c})),
                  b.init("mu", torch::randn({c})), b.init("var", torch::rand({c}) + 0.1)});
        std::vector<ir::Attr> attrs;
        if (std::string(act) == "LeakyRelu") attrs.push_back({"alpha", ir::AttrValue(0.2f)});
        b.out(b.op(act, {bn}, attrs), "y");
        Both r = run_both(b, {torch::randn({2, 4, 5, 5})}, fold);
        EXPECT_TRUE(has(r.ops, "FusedConv"));
        EXPECT_FALSE(has(r.ops, act));
        EXPECT_EQ(r.fast[0].sizes(), (std::vector<int64_t>{2, c, 10, 10}));
        if (!fold) {
          EXPECT_TRUE(at::equal(r.fast[0], r.plain[0]));
        }
        expect_close(r.fast[0], r.plain[0], 1e-4, 1e-5);
      }
    }
  }
}

TEST(BackendFusion, ConvTransposeAsymmetricPadsAndOutputShape) {
  torch::manual_seed(7);
  for (std::vector<ir::Attr> attrs :
       {std::vector<ir::Attr>{ints("strides", {2, 2}), ints("pads", {0, 1, 1, 0})},
        std::vector<ir::Attr>{ints("strides", {2, 2}), ints("output_shape", {9, 10})},
        std::vector<ir::Attr>{ints("strides", {2, 2}),
                              {"auto_pad", ir::AttrValue("SAME_LOWER")}}}) {
    G b;
    b.out(b.op("Relu", {b.op("ConvTranspose", {b.in("x"), b.init("w", torch::randn({2, 3, 3, 3}))},
                             attrs)}),
          "y");
    Both r = run_both(b, {torch::randn({1, 2, 4, 5})});
    EXPECT_TRUE(has(r.ops, "FusedConv"));
    EXPECT_TRUE(at::equal(r.fast[0], r.plain[0]));
  }
}

TEST(BackendFusion, ConvWithoutBiasFoldsBatchNormIntoANewBias) {
  torch::manual_seed(1);
  G b;
  ir::Value* conv = b.op("Conv", {b.in("x"), b.init("w", torch::randn({3, 2, 1, 1}))});
  b.out(b.op("BatchNormalization",
             {conv, b.init("s", torch::randn({3})), b.init("sh", torch::randn({3})),
              b.init("mu", torch::randn({3})), b.init("var", torch::rand({3}) + 0.1)}),
        "y");
  Both r = run_both(b, {torch::randn({1, 2, 4, 4})}, /*fold_batchnorm=*/true);
  EXPECT_TRUE(has(r.ops, "FusedConv"));
  expect_close(r.fast[0], r.plain[0]);
}

TEST(BackendFusion, BatchNormWithRunTimeStatisticsIsFusedButNotFolded) {
  G b;
  ir::Value* conv = b.op("Conv", {b.in("x"), b.init("w", torch::randn({3, 2, 1, 1}))});
  b.out(b.op("BatchNormalization",
             {conv, b.in("s"), b.init("sh", torch::randn({3})), b.init("mu", torch::randn({3})),
              b.init("var", torch::rand({3}) + 0.1)}),
        "y");
  Both r = run_both(b, {torch::randn({1, 2, 4, 4}), torch::randn({3})}, /*fold_batchnorm=*/true);
  EXPECT_TRUE(has(r.ops, "FusedConv"));
  EXPECT_TRUE(at::equal(r.fast[0], r.plain[0]));
}

TEST(BackendFusion, IntermediateThatIsAGraphOutputIsNotFused) {
  G b;
  ir::Value* conv = b.op("Conv", {b.in("x"), b.init("w", torch::randn({2, 1, 3, 3}))});
  b.out(b.op("Relu", {conv}), "y");
  b.out(conv, "conv_out");
  Both r = run_both(b, {torch::randn({1, 1, 6, 6})});
  EXPECT_FALSE(has(r.ops, "FusedConv"));
  expect_close(r.fast[0], r.plain[0]);
  expect_close(r.fast[1], r.plain[1]);
  EXPECT_LT(r.fast[1].min().item<float>(), 0.0f);  // the conv output kept its negatives
}

TEST(BackendFusion, ValueReadByTwoNodesIsNotFused) {
  G b;
  ir::Value* conv = b.op("Conv", {b.in("x"), b.init("w", torch::randn({2, 1, 3, 3}))});
  ir::Value* relu = b.op("Relu", {conv});
  b.out(b.op("Add", {conv, relu}), "y");  // conv read by Relu and Add
  Both r = run_both(b, {torch::randn({1, 1, 6, 6})});
  EXPECT_FALSE(has(r.ops, "FusedConv"));
  expect_close(r.fast[0], r.plain[0]);
}

TEST(BackendFusion, AddOfTheConvWithItselfAndBroadcastAdds) {
  torch::manual_seed(2);
  G b;
  ir::Value* x = b.in("x");
  ir::Value* c1 =
      b.op("Conv", {x, b.init("w1", torch::randn({3, 2, 3, 3}))}, {ints("pads", {1, 1, 1, 1})});
  ir::Value* twice = b.op("Add", {c1, c1});
  // A per-channel Z broadcast over H and W, and one that broadcasts the conv output up.
  ir::Value* c2 =
      b.op("Conv", {x, b.init("w2", torch::randn({3, 2, 3, 3}))}, {ints("pads", {1, 1, 1, 1})});
  ir::Value* per_channel = b.op("Add", {c2, b.init("z", torch::randn({1, 3, 1, 1}))});
  ir::Value* c3 =
      b.op("Conv", {x, b.init("w3", torch::randn({1, 2, 3, 3}))}, {ints("pads", {1, 1, 1, 1})});
  ir::Value* widened = b.op("Add", {c3, b.in("wide")});
  b.out(twice, "twice");
  b.out(b.op("Relu", {per_channel}), "per_channel");
  b.out(widened, "widened");
  Both r = run_both(b, {torch::randn({2, 2, 4, 4}), torch::randn({2, 5, 4, 4})});
  EXPECT_TRUE(has(r.ops, "FusedConv"));
  for (int i = 0; i < 3; ++i) expect_close(r.fast[i], r.plain[i]);
  EXPECT_EQ(r.fast[2].sizes(), (std::vector<int64_t>{2, 5, 4, 4}));
}

TEST(BackendFusion, NanAndInfFlowThroughFusedConv) {
  G b;
  ir::Value* conv = b.op(
      "Conv", {b.in("x"), b.init("w", torch::ones({1, 1, 1, 1})), b.init("cb", torch::zeros({1}))});
  b.out(b.op("Relu", {b.op("Add", {conv, b.in("z")})}), "y");
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  at::Tensor x = torch::tensor({1.f, -2.f, nan, inf, -inf, 0.f}).reshape({1, 1, 2, 3});
  at::Tensor z = torch::tensor({0.f, 1.f, 0.f, -inf, 0.f, -0.f}).reshape({1, 1, 2, 3});
  Both r = run_both(b, {x, z});
  EXPECT_TRUE(has(r.ops, "FusedConv"));
  expect_close(r.fast[0], r.plain[0]);
  EXPECT_TRUE(std::isnan(r.fast[0].flatten()[2].item<float>()));
  EXPECT_TRUE(std::isnan(r.fast[0].flatten()[3].item<float>()));  // inf + -inf
}

TEST(BackendFusion, LegacyBatchNormIsLeftAlone) {
  G b;
  b.m.opsets = {{"", 6}};
  ir::Value* conv = b.op("Conv", {b.in("x"), b.init("w", torch::randn({2, 1, 1, 1}))});
  b.out(b.op("BatchNormalization",
             {conv, b.init("s", torch::ones({2})), b.init("sh", torch::zeros({2})),
              b.init("mu", torch::zeros({2})), b.init("var", torch::ones({2}))},
             {{"is_test", ir::AttrValue(int64_t{1})}}),
        "y");
  Both r = run_both(b, {torch::randn({1, 1, 3, 3})});
  EXPECT_TRUE(has(r.ops, "BatchNormalization"));
  expect_close(r.fast[0], r.plain[0]);
}

TEST(BackendFusion, GemmReluAtOneAndManyRows) {
  torch::manual_seed(3);
  for (int64_t rows : {1, 3, 0}) {
    // One row times a matrix of 4M elements takes the GEMV path.
    for (int64_t k : {5, 1 << 20}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          for (int64_t c_kind = 0; c_kind < 4; ++c_kind) {  // none, scalar, [N], [M, N]
            SCOPED_TRACE("rows " + std::to_string(rows) + " transA " + std::to_string(ta) +
                         " transB " + std::to_string(tb) + " C kind " + std::to_string(c_kind));
            G b;
            at::Tensor a = ta ? torch::randn({k, rows}) : torch::randn({rows, k});
            at::Tensor w = tb ? torch::randn({4, k}) : torch::randn({k, 4});
            std::vector<ir::Value*> ins{b.in("a"), b.init("w", w)};
            if (c_kind == 1) ins.push_back(b.init("c", torch::randn({1})));
            if (c_kind == 2) ins.push_back(b.init("c", torch::randn({4})));
            if (c_kind == 3) ins.push_back(b.init("c", torch::randn({rows, 4})));
            ir::Value* gemm = b.op("Gemm", ins,
                                   {{"alpha", ir::AttrValue(0.5f)},
                                    {"beta", ir::AttrValue(2.0f)},
                                    {"transA", ir::AttrValue(int64_t{ta})},
                                    {"transB", ir::AttrValue(int64_t{tb})}});
            b.out(b.op("Relu", {gemm}), "y");
            Both r = run_both(b, {a});
            EXPECT_TRUE(has(r.ops, "FusedGemm"));
            expect_close(r.fast[0], r.plain[0], 1e-4, 1e-3);
            at::Tensor want =
                at::relu(0.5 * at::mm(ta ? a.t() : a, tb ? w.t() : w) +
                         (c_kind ? 2.0 * b.g.initializer(ins[2])->clone() : at::zeros({1})));
            expect_close(r.fast[0], want, 1e-4, 1e-3);
          }
        }
      }
    }
  }
}

TEST(BackendFusion, GemvPathPropagatesNanAndInf) {
  G b;
  int64_t k = 1 << 21;  // 2 x 2M weights: the GEMV path
  b.out(b.op("Gemm", {b.in("a"), b.init("w", torch::ones({2, k})), b.init("c", torch::zeros({2}))},
             {{"transB", ir::AttrValue(int64_t{1})}}),
        "y");
  float inf = std::numeric_limits<float>::infinity();
  at::Tensor a = torch::ones({1, k});
  a[0][7] = std::nanf("");
  Both r = run_both(b, {a});
  EXPECT_TRUE(r.fast[0].isnan().all().item<bool>());
  a[0][7] = inf;
  r = run_both(b, {a});
  EXPECT_TRUE(r.fast[0].isinf().all().item<bool>());
  EXPECT_GT(r.fast[0][0][0].item<float>(), 0.0f);
}

TEST(BackendFusion, MatMulPlusBiasBecomesOneGemm) {
  torch::manual_seed(4);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{3, 2, 5}, {5}, {1, 5}, {0, 5}}) {
    SCOPED_TRACE(c10::str(at::IntArrayRef(shape)));
    G b;
    ir::Value* mm = b.op("MatMul", {b.in("a"), b.init("w", torch::randn({5, 4}))});
    ir::Value* bias = b.init("bias", torch::randn({4}));
    b.out(b.op("Relu", {b.op("Add", {bias, mm})}), "y");
    at::Tensor a = torch::randn(shape);
    Both r = run_both(b, {a});
    EXPECT_TRUE(has(r.ops, "FusedGemm"));
    EXPECT_FALSE(has(r.ops, "MatMul"));
    expect_close(r.fast[0], r.plain[0]);
  }
}

TEST(BackendFusion, MatMulWithNonConstantOrWideBiasIsNotFused) {
  G b;
  ir::Value* mm = b.op("MatMul", {b.in("a"), b.init("w", torch::randn({5, 4}))});
  b.out(b.op("Add", {mm, b.in("bias")}), "y");  // a run-time bias
  ir::Value* mm2 = b.op("MatMul", {b.g.find_value("a"), b.init("w2", torch::randn({5, 4}))});
  b.out(b.op("Add", {mm2, b.init("full", torch::randn({3, 4}))}), "y2");  // not a row vector
  Both r = run_both(b, {torch::randn({3, 5}), torch::randn({4})});
  EXPECT_FALSE(has(r.ops, "FusedGemm"));
  expect_close(r.fast[0], r.plain[0]);
  expect_close(r.fast[1], r.plain[1]);
}

// Found by review: fusions that fired where the Add or BatchNormalization was not what the
// fused kernel computes. Oracles: the unfused plan, and the ONNX semantics written in torch.
TEST(BackendFusion, AZThatRaisesTheRankIsNeverTakenForTheBlockedLayout) {
  // Conv -> Add(Z of rank 5) -> Add: the FusedConv's output is 5-D and plain, so it must not
  // be planned blocked (it was, and the next Add read it as blocked: scrambled, no error).
  torch::manual_seed(6);
  G b;
  ir::Value* c = b.op("Conv", {b.in("x"), b.init("w", torch::eye(16).reshape({16, 16, 1, 1}))});
  b.out(b.op("Add", {b.op("Add", {c, b.in("z")}), b.scalar(0)}), "y");
  at::Tensor x = torch::randn({1, 16, 4, 16}), z = torch::randn({2, 1, 16, 4, 16});
  Both r = run_both(b, {x, z});
  EXPECT_TRUE(has(r.ops, "FusedConv"));
  EXPECT_EQ(r.fast[0].sizes(), (std::vector<int64_t>{2, 1, 16, 4, 16}));
  expect_close(r.fast[0], x + z);
  expect_close(r.plain[0], x + z);
}

TEST(BackendFusion, LegacyBroadcastAddsAreNotFused) {
  // Opset 6: Add with broadcast=1 aligns B at `axis`; the fused kernels add as numpy does.
  G b;
  b.m.opsets = {{"", 6}};
  ir::Attr bc{"broadcast", ir::AttrValue(int64_t{1})};
  at::Tensor z = torch::tensor({0.f, 10.f, 20.f, 30.f});
  ir::Value* c = b.op("Conv", {b.in("x"), b.init("w", torch::eye(4).reshape({4, 4, 1, 1}))});
  b.out(b.op("Add", {c, b.init("z", z)}, {bc, {"axis", ir::AttrValue(int64_t{1})}}), "y");
  ir::Value* mm = b.op("MatMul", {b.in("a"), b.init("eye", torch::eye(4))});
  b.out(b.op("Add", {mm, b.init("z2", z)}, {bc, {"axis", ir::AttrValue(int64_t{0})}}), "y2");
  Both r = run_both(b, {torch::zeros({1, 4, 4, 4}), torch::zeros({4, 4})});
  EXPECT_FALSE(has(r.ops, "FusedConv"));
  EXPECT_FALSE(has(r.ops, "FusedGemm"));
  expect_close(r.fast[0], z.reshape({1, 4, 1, 1}).expand({1, 4, 4, 4}));
  expect_close(r.fast[1], z.reshape({4, 1}).expand({4, 4}));
  expect_close(r.plain[1], r.fast[1]);
}

TEST(BackendFusion, MatMulOverAnEmptyInnerDimensionGivesTheBias) {
  G b;
  ir::Value* mm = b.op("MatMul", {b.in("a"), b.init("w", torch::zeros({0, 4}))});
  at::Tensor bias = torch::tensor({0.f, 1.f, 2.f, 3.f});
  b.out(b.op("Add", {mm, b.init("bias", bias)}), "y");
  Both r = run_both(b, {torch::zeros({3, 0})});
  EXPECT_TRUE(has(r.ops, "FusedGemm"));
  expect_close(r.fast[0], bias.expand({3, 4}));
  expect_close(r.plain[0], bias.expand({3, 4}));
}

TEST(BackendFusion, AConvOutputReadAsBatchNormScaleIsNotItsBatchNorm) {
  // Invalid (the scale would be 4-D), but it once reached an internal error at prepare.
  G b;
  ir::Value* c = b.op("Conv", {b.in("x"), b.init("w", torch::ones({1, 1, 1, 1}))});
  b.out(b.op("BatchNormalization", {b.in("x2"), c, b.init("s", torch::zeros({1})),
                                    b.init("m", torch::zeros({1})), b.init("v", torch::ones({1}))}),
        "y");
  PrepareOptions opts;
  Rep rep = tonnx::backend::prepare(tonnx::model_to_proto(b.m), "CPU", opts);
  try {
    rep.run({torch::ones({1, 1, 2, 2}), torch::ones({1, 1, 2, 2})});
    ADD_FAILURE() << "a 4-D scale ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("BatchNormalization"), std::string::npos) << e.what();
  }
}

TEST(BackendPooling, MaxPoolMatchesATenWithNanInfPadsAndCeilMode) {
  torch::manual_seed(5);
  // Small planes take oneDNN, large ones ATen's channels-last kernel.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3, 8, 7}, {1, 2, 130, 129}}) {
    for (bool ceil : {false, true}) {
      for (bool poison : {false, true}) {
        G b;
        b.out(b.op("MaxPool", {b.in("x")},
                   {ints("kernel_shape", {3, 3}),
                    ints("strides", {2, 2}),
                    ints("pads", {1, 1, 1, 1}),
                    {"ceil_mode", ir::AttrValue(int64_t{ceil})}}),
              "y");
        SCOPED_TRACE(c10::str(at::IntArrayRef(shape), " ceil ", ceil, " poison ", poison));
        at::Tensor x = torch::randn(shape);
        if (poison) {
          x[0][0][1][1] = std::nanf("");
          x[shape[0] - 1][shape[1] - 1][4][4] = std::numeric_limits<float>::infinity();
        }
        Both r = run_both(b, {x});
        at::Tensor want = at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, ceil);
        expect_close(r.fast[0], want, 0, 0);
        if (poison) {
          EXPECT_TRUE(std::isnan(r.fast[0][0][0][0][0].item<float>()));
          EXPECT_TRUE(std::isnan(r.fast[0][0][0][1][1].item<float>()));
        }
      }
    }
  }
  G b;  // an empty batch
  b.out(b.op("MaxPool", {b.in("x")}, {ints("kernel_shape", {2, 2})}), "y");
  Both r = run_both(b, {torch::randn({0, 3, 4, 4})});
  EXPECT_EQ(r.fast[0].sizes(), (std::vector<int64_t>{0, 3, 3, 3}));
}

TEST(BackendPooling, AveragePoolMatchesATenOnEveryPath) {
  torch::manual_seed(8);
  float inf = std::numeric_limits<float>::infinity();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3, 9, 8}, {1, 2, 120, 121}}) {
    for (bool ceil : {false, true}) {
      for (bool include_pad : {false, true}) {
        SCOPED_TRACE(
            c10::str(at::IntArrayRef(shape), " ceil ", ceil, " include_pad ", include_pad));
        G b;
        b.out(b.op("AveragePool", {b.in("x")},
                   {ints("kernel_shape", {3, 3}),
                    ints("strides", {2, 2}),
                    ints("pads", {1, 1, 1, 1}),
                    {"ceil_mode", ir::AttrValue(int64_t{ceil})},
                    {"count_include_pad", ir::AttrValue(int64_t{include_pad})}}),
              "y");
        at::Tensor x = torch::randn(shape);
        x[0][0][2][2] = std::nanf("");
        x[0][1][5][5] = inf;
        x[0][1][5][6] = -inf;
        Both r = run_both(b, {x});
        at::Tensor want = at::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, ceil, include_pad);
        EXPECT_TRUE(at::equal(r.fast[0].nan_to_num(7), want.nan_to_num(7)));
        EXPECT_TRUE(std::isnan(r.fast[0][0][0][1][1].item<float>()));
      }
    }
  }
}

TEST(BackendArena, RepeatedRunsReuseBuffersAndOutputsOutliveTheRep) {
  G b;
  ir::Value* x = b.in("x");
  b.out(b.op("Relu", {b.op("Add", {x, x})}), "y");
  at::Tensor in = torch::randn({64, 1024});  // 256 KiB: large enough for the arena
  at::Tensor kept;
  {
    Rep rep = tonnx::backend::prepare(tonnx::model_to_proto(b.m));
    at::Tensor first = rep.run({in})[0];
    for (int i = 0; i < 3; ++i) {
      at::Tensor y = rep.run({in})[0];
      EXPECT_TRUE(at::equal(y, first));
    }
    kept = rep.run({in})[0];
  }
  // The Rep is gone; its output stays valid (ASan would flag a use after free).
  EXPECT_TRUE(at::equal(kept, at::relu(in + in)));
}

TEST(BackendArena, ServesRepeatSizesAndCapsWhatItKeeps) {
  auto arena = tonnx::backend::make_arena();
  {
    tonnx::backend::ArenaScope scope(arena.get());
    for (int i = 0; i < 4; ++i) {
      at::Tensor a = at::empty({1 << 16});  // 256 KiB
      at::Tensor small = at::empty({4});    // below the arena's threshold
      a.fill_(i);
    }
  }
  auto st = tonnx::backend::arena_stats(*arena);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.hits, 3u);
  EXPECT_LE(st.cached_bytes, 2 * st.peak_live_bytes);
  // Outside a scope, allocations are the system's.
  at::Tensor outside = at::empty({1 << 16});
  EXPECT_EQ(tonnx::backend::arena_stats(*arena).misses, 1u);
}

// Concat copies rows of contiguous inputs in one parallel region; results are at::cat's at one
// and two threads, for every dtype, axis, empty inputs, and inputs it leaves to at::cat.
TEST(BackendConcat, ParallelCopyIsAtCat) {
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    G b;
    ir::Value* x = b.in("x");
    ir::Value* y = b.in("y");
    ir::Value* z = b.in("z");
    b.out(b.op("Concat", {x, y, z}, {{"axis", ir::AttrValue(axis)}}), "out");
    onnx::ModelProto proto = tonnx::model_to_proto(b.m);
    for (int threads : {1, 2}) {
      PrepareOptions o;
      o.num_threads = threads;
      Rep rep = tonnx::backend::prepare(proto, "CPU", o);
      int64_t a = axis < 0 ? axis + 3 : axis;
      auto sized = [&](int64_t along, at::ScalarType t) {
        std::vector<int64_t> sz = {3, 40, 700};
        sz[a] = along;
        at::Tensor r = torch::randn(sz) * 100;
        if (t == at::kBool) return r > 0;
        return r.to(t);
      };
      for (at::ScalarType t : {at::kFloat, at::kDouble, at::kLong, at::kBool, at::kByte}) {
        std::vector<at::Tensor> in = {sized(2, t), sized(5, t), sized(1, t)};
        at::Tensor got = rep.run(in)[0];
        EXPECT_TRUE(at::equal(got, at::cat(in, a))) << "axis " << axis << " dtype " << t;
        // An input empty along the axis, and all of them empty.
        in = {sized(2, t), sized(0, t), sized(3, t)};
        EXPECT_TRUE(at::equal(rep.run(in)[0], at::cat(in, a)));
        in = {sized(0, t), sized(0, t), sized(0, t)};
        EXPECT_EQ(rep.run(in)[0].sizes(), at::cat(in, a).sizes());
      }
      // NaN and inf are copied as bits.
      std::vector<at::Tensor> in = {sized(2, at::kFloat), sized(3, at::kFloat),
                                    sized(1, at::kFloat)};
      in[1].view(-1)[7] = std::nanf("");
      in[2].view(-1)[0] = -std::numeric_limits<float>::infinity();
      at::Tensor got = rep.run(in)[0];
      EXPECT_TRUE(at::equal(got.isnan(), at::cat(in, a).isnan()));
      EXPECT_TRUE(at::equal(at::nan_to_num(got), at::nan_to_num(at::cat(in, a))));
      // A transposed (non-contiguous) input goes to at::cat.
      at::Tensor tr = sized(4, at::kFloat).transpose(0, 2).contiguous().transpose(0, 2);
      ASSERT_FALSE(tr.is_contiguous());
      in = {sized(2, at::kFloat), tr, sized(1, at::kFloat)};
      EXPECT_TRUE(at::equal(rep.run(in)[0], at::cat(in, a)));
      // Sizes that disagree off the axis: an error, not a read past an input.
      std::vector<int64_t> bad = {3, 40, 700};
      bad[(a + 1) % 3] += 1;
      in = {sized(2, at::kFloat), torch::randn(bad), sized(1, at::kFloat)};
      EXPECT_ANY_THROW(rep.run(in));
    }
  }
}

TEST(BackendArena, RepeatedRunsOfMixedSizesStopMissing) {
  // Each "run": one 1 MiB block, freed, then four 256 KiB blocks live at once. The peak is
  // 1 MiB, but the big block cannot serve the small ones: the arena keeps room for both, so
  // from the second run on every request is served from its cache (a cap at the peak missed
  // four times every run).
  auto arena = tonnx::backend::make_arena();
  tonnx::backend::ArenaScope scope(arena.get());
  auto one_run = [] {
    { at::Tensor big = at::empty({1 << 18}); }
    std::vector<at::Tensor> small;
    for (int i = 0; i < 4; ++i) small.push_back(at::empty({1 << 16}));
  };
  one_run();
  size_t after_first = tonnx::backend::arena_stats(*arena).misses;
  EXPECT_EQ(after_first, 5u);
  for (int i = 0; i < 5; ++i) one_run();
  auto st = tonnx::backend::arena_stats(*arena);
  EXPECT_EQ(st.misses, after_first);
  EXPECT_EQ(st.hits, 25u);
  EXPECT_LE(st.cached_bytes, 2 * st.peak_live_bytes);
}

TEST(BackendArena, MemoryFromBeforeTheAllocatorIsFreedAsC10Would) {
  // oneDNN (ideep) tensors free through the current CPU allocator's raw deleter. One made
  // before tonnx installs its allocator (at the first prepare in a process; ctest runs each
  // test in its own) must be freed as c10's: this used to crash in free().
  at::Tensor early = torch::randn({64, 64, 3, 3}).to_mkldnn();
  G b;
  b.out(b.op("Relu", {b.in("x")}), "y");
  Rep rep = tonnx::backend::prepare(tonnx::model_to_proto(b.m));
  at::Tensor x = torch::randn({64, 1024});
  EXPECT_TRUE(at::equal(rep.run({x})[0], at::relu(x)));
  // Made after: served by the new allocator, freed through it too.
  at::Tensor late = torch::randn({64, 64, 3, 3}).to_mkldnn();
  EXPECT_EQ(early.to_dense().sizes(), late.to_dense().sizes());
  early.reset();
  late.reset();
}

// The VmFlags of the mapping that holds `addr` (from /proc/self/smaps), or empty.
std::string vm_flags_at(uintptr_t addr) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-'))
      inside = addr >= lo && addr < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return {};
}

TEST(BackendArena, LargeBlocksAskForHugePagesInAScope) {
  // A fresh 4 KiB page costs 12 us to fault in on this project's machine: within a
  // HugePageScope (the exporter's trace), LibTorch's blocks of 2 MiB or more are advised into
  // transparent huge pages, in and out of an arena.
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  auto huge_page_inside = [&](const at::Tensor& t) {
    auto p = reinterpret_cast<uintptr_t>(t.data_ptr());
    return vm_flags_at((p + kHuge - 1) & ~(kHuge - 1));
  };
  tonnx::detail::HugePageScope huge_pages;
  at::Tensor big = at::ones({4 << 20});  // 16 MiB
  EXPECT_NE(huge_page_inside(big).find(" hg"), std::string::npos) << huge_page_inside(big);
  auto arena = tonnx::backend::make_arena();
  tonnx::backend::ArenaScope scope(arena.get());
  at::Tensor pooled = at::ones({4 << 20});
  EXPECT_NE(huge_page_inside(pooled).find(" hg"), std::string::npos);
  EXPECT_EQ(pooled.sum().item<float>(), float(4 << 20));
}

TEST(BackendArena, ConcurrentRunsOfOneRep) {
  G b;
  ir::Value* x = b.in("x");
  b.out(b.op("Mul", {b.op("Relu", {x}), x}), "y");
  Rep rep = tonnx::backend::prepare(tonnx::model_to_proto(b.m));
  std::vector<std::thread> threads;
  // One char per thread: std::vector<bool> packs them into bits of one word, and concurrent
  // writes to neighbouring bits can lose each other (a failure seen once under ctest -j2,
  // not reproduced in 48000 concurrent runs of a stress program, fits that race).
  std::vector<char> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      at::Tensor in = torch::full({128, 256}, static_cast<float>(t + 1));
      bool all = true;
      for (int i = 0; i < 20; ++i) all = all && at::equal(rep.run({in})[0], in * in);
      ok[t] = all;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

TEST(BackendProfile, CountsEveryNodeOfEveryRun) {
  G b;
  ir::Value* x = b.in("x");
  b.out(b.op("Relu", {b.op("Neg", {x})}), "y");
  PrepareOptions opts;
  opts.profile = true;
  Rep rep = tonnx::backend::prepare(tonnx::model_to_proto(b.m), "CPU", opts);
  for (int i = 0; i < 3; ++i) rep.run({torch::randn({4})});
  auto prof = rep.profile();
  ASSERT_EQ(prof.size(), 2u);
  EXPECT_EQ(prof[0].op_type, "Neg");
  EXPECT_EQ(prof[1].op_type, "Relu");
  for (const auto& p : prof) {
    EXPECT_EQ(p.calls, 3);
    EXPECT_GE(p.total_ms, 0.0);
  }
  rep.reset_profile();  // counts from zero again
  rep.run({torch::randn({4})});
  for (const auto& p : rep.profile()) {
    EXPECT_EQ(p.calls, 1);
    EXPECT_EQ(p.plane, "-");  // not an image
  }
  // An image's plane, per op type in the report.
  rep.run({torch::randn({1, 3, 5, 7})});
  for (const auto& p : rep.profile()) EXPECT_EQ(p.plane, "5x7");
  std::string report = tonnx::backend::profile_report(rep.profile());
  EXPECT_NE(report.find("by output plane:\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  Relu 5x7: "), std::string::npos) << report;
  EXPECT_TRUE(tonnx::backend::prepare(tonnx::model_to_proto(b.m)).profile().empty());
}

}  // namespace
