// MatMul and Gemm by an initializer on oneDNN's matmul (PrepareOptions::onednn_gemm), and the
// GELU fusion. Oracles: LibTorch's own matmul/addmm/gelu, and the same graph with the option
// off (LibTorch's BLAS, bit for bit).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "backend/kernels/gemm.h"
#include "backend/kernels/onednn.h"
#include "tonnx/backend.h"
#include "tonnx/compare.h"
#include "graph_builder.h"
#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace {

using tonnx::backend::OneDnnMatmul;
using tonnx::backend::PrepareOptions;
using tonnx::backend::Rep;
namespace ir = tonnx::ir;

using G = tonnx::test::GraphBuilder;
using tonnx::test::expect_close;
using tonnx::test::has;

Rep prepare(G& b, bool onednn_gemm, bool optimize = true) {
  PrepareOptions o;
  o.onednn_gemm = onednn_gemm;
  o.optimize = optimize;
  o.profile = true;
  return tonnx::backend::prepare(tonnx::model_to_proto(b.m), "CPU", o);
}

std::vector<std::string> ops_of(const Rep& r) {
  std::vector<std::string> ops;
  for (const auto& p : r.profile()) ops.push_back(p.op_type);
  return ops;
}

ir::Attr attr_i(const char* n, int64_t v) { return {n, ir::AttrValue(v)}; }
ir::Attr attr_f(const char* n, float v) { return {n, ir::AttrValue(v)}; }

TEST(OneDnnGemm, MatMulByAnInitializerMatchesLibTorch) {
  torch::manual_seed(0);
  for (std::vector<int64_t> kn : {std::vector<int64_t>{5, 4}, {64, 96}, {300, 7}}) {
    at::Tensor w = torch::randn(kn);
    for (std::vector<int64_t> shape : {std::vector<int64_t>{3, kn[0]},
                                       {2, 3, kn[0]},
                                       {2, 1, 4, kn[0]},
                                       {1, kn[0]},
                                       {kn[0]},
                                       {0, kn[0]}}) {
      SCOPED_TRACE(c10::str(at::IntArrayRef(kn), " A ", at::IntArrayRef(shape)));
      G b;
      b.out(b.op("MatMul", {b.in("a"), b.init("w", w)}), "y");
      at::Tensor a = torch::randn(shape);
      uint64_t before = OneDnnMatmul::runs();
      at::Tensor y = prepare(b, true).run({a})[0];
      at::Tensor want = at::matmul(a, w);
      EXPECT_EQ(y.sizes(), want.sizes());
      expect_close(y, want);
      // Rank 1 (a vector), one row and zero rows are ATen's.
      int64_t rows = 1;
      for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
      bool dnn = shape.size() >= 2 && rows >= 2;
      EXPECT_EQ(OneDnnMatmul::runs() - before, dnn ? 1u : 0u);
      // Off: LibTorch's BLAS, bit for bit.
      EXPECT_TRUE(at::equal(prepare(b, false).run({a})[0], want));
    }
  }
}

TEST(OneDnnGemm, GemmTakesOneDnnOnlyWhereItComputesTheSame) {
  torch::manual_seed(1);
  const int64_t m = 3, k = 6, n = 5;
  struct Case {
    const char* what;
    float alpha, beta;
    bool ta, tb;
    std::vector<int64_t> c;  // empty: no C
    bool dnn;
  };
  for (const Case& c : {Case{"plain", 1, 1, false, false, {}, true},
                        Case{"transB, bias [N]", 1, 1, false, true, {n}, true},
                        Case{"bias [1, N]", 1, 1, false, false, {1, n}, true},
                        Case{"bias [M, N]", 1, 1, false, false, {m, n}, false},
                        Case{"bias [M, 1]", 1, 1, false, false, {m, 1}, false},
                        Case{"scalar bias", 1, 1, false, false, {1}, n == 1},
                        Case{"beta 2", 1, 2, false, false, {n}, false},
                        Case{"beta 0 ignores C", 1, 0, false, false, {n}, true},
                        Case{"alpha 0.5", 0.5, 1, false, false, {n}, false},
                        Case{"transA", 1, 1, true, false, {n}, false}}) {
    SCOPED_TRACE(c.what);
    G b;
    at::Tensor w = c.tb ? torch::randn({n, k}) : torch::randn({k, n});
    std::vector<ir::Value*> ins{b.in("a"), b.init("w", w)};
    at::Tensor bias = c.c.empty() ? at::Tensor() : torch::randn(c.c);
    if (bias.defined()) ins.push_back(b.init("c", bias));
    b.out(b.op("Gemm", ins,
               {attr_f("alpha", c.alpha), attr_f("beta", c.beta), attr_i("transA", c.ta),
                attr_i("transB", c.tb)}),
          "y");
    at::Tensor a = c.ta ? torch::randn({k, m}) : torch::randn({m, k});
    at::Tensor want = c.alpha * at::mm(c.ta ? a.t() : a, c.tb ? w.t() : w);
    if (bias.defined()) want = want + c.beta * bias;
    uint64_t before = OneDnnMatmul::runs();
    at::Tensor y = prepare(b, true).run({a})[0];
    EXPECT_EQ(OneDnnMatmul::runs() - before, c.dnn ? 1u : 0u);
    expect_close(y, want);
  }
}

TEST(OneDnnGemm, FusedMatMulBiasReluAndNanInf) {
  torch::manual_seed(2);
  G b;
  at::Tensor w = torch::randn({8, 4}), bias = torch::randn({4});
  b.out(b.op("Relu",
             {b.op("Add", {b.op("MatMul", {b.in("a"), b.init("w", w)}), b.init("bias", bias)})}),
        "y");
  Rep rep = prepare(b, true);
  at::Tensor a = torch::randn({2, 3, 8});
  float inf = std::numeric_limits<float>::infinity();
  a[0][1][2] = std::nanf("");
  a[1][2][5] = inf;
  uint64_t before = OneDnnMatmul::runs();
  at::Tensor y = rep.run({a})[0];
  EXPECT_TRUE(has(ops_of(rep), "FusedGemm"));
  EXPECT_EQ(OneDnnMatmul::runs() - before, 1u);
  at::Tensor want = at::relu(at::matmul(a, w) + bias);
  // NaN rows stay NaN, inf rows +inf or NaN exactly where LibTorch has them.
  EXPECT_TRUE(at::equal(y.isnan(), want.isnan()));
  EXPECT_TRUE(at::equal(y.isinf(), want.isinf()));
  at::Tensor finite = want.isfinite();
  expect_close(y.masked_select(finite), want.masked_select(finite));
}

TEST(OneDnnGemm, IntegerAndRunTimeWeightsStayOnATen) {
  G b;
  b.out(b.op("MatMul", {b.in("a"), b.init("w", torch::arange(12, torch::kLong).view({3, 4}))}),
        "y");
  b.out(b.op("MatMul", {b.in("f"), b.in("rw")}), "z");
  at::Tensor a = torch::arange(6, torch::kLong).view({2, 3});
  at::Tensor f = torch::randn({2, 3}), rw = torch::randn({3, 4});
  uint64_t before = OneDnnMatmul::runs();
  auto out = prepare(b, true).run({a, f, rw});
  EXPECT_EQ(OneDnnMatmul::runs(), before);
  EXPECT_TRUE(at::equal(out[0], at::matmul(a, torch::arange(12, torch::kLong).view({3, 4}))));
  EXPECT_TRUE(at::equal(out[1], at::matmul(f, rw)));
}

TEST(OneDnnGemm, NarrowWeightsAreNotPaddedUpToBlocks) {
  // oneDNN pads B's columns to 64: a 400000 x 1 B (1.6 MB) would take 100 MB packed.
  G b;
  at::Tensor w = torch::randn({400000, 1});
  b.out(b.op("MatMul", {b.in("a"), b.init("w", w)}), "y");
  at::Tensor a = torch::randn({3, 400000});
  uint64_t before = OneDnnMatmul::runs();
  at::Tensor y = prepare(b, true).run({a})[0];
  // With AVX-512 oneDNN packs B, padded: declined. Without it (AVX2) its GEMM reads B as
  // stored, no copy: taken. Either way no copy much larger than B.
  auto mm = OneDnnMatmul::make(w);
  EXPECT_TRUE(!mm || mm->packed_bytes() <= w.numel() * sizeof(float) * 5 / 4 + (1 << 20));
  if (OneDnnMatmul::runs() == before) {
    EXPECT_TRUE(at::equal(y, at::matmul(a, w)));
  } else {  // another order of 400000 float terms: within 1e-5 of their absolute sum
    at::Tensor exact = at::matmul(a.to(at::kDouble), w.to(at::kDouble));
    at::Tensor bound = at::matmul(a.abs().to(at::kDouble), w.abs().to(at::kDouble)) * 1e-5;
    EXPECT_TRUE(((y.to(at::kDouble) - exact).abs() <= bound).all().item<bool>());
  }
}

TEST(OneDnnGemm, ConcurrentRunsAndManyRowCounts) {
  torch::manual_seed(3);
  G b;
  at::Tensor w = torch::randn({32, 48});
  b.out(b.op("MatMul", {b.in("a"), b.init("w", w)}), "y");
  Rep rep = prepare(b, true);
  // More row counts than a node caches primitives for (16).
  for (int64_t rows = 1; rows <= 20; ++rows) {
    at::Tensor a = torch::randn({rows, 32});
    expect_close(rep.run({a})[0], at::matmul(a, w));
  }
  std::vector<at::Tensor> as, got(4);
  for (int i = 0; i < 4; ++i) as.push_back(torch::randn({7 + i, 32}));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 20; ++r) got[i] = rep.run({as[i]})[0];
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) expect_close(got[i], at::matmul(as[i], w));
}

// GELU as tonnx writes it, and as torch.onnx 1.13 does (other factor orders).
ir::Value* gelu_erf(G& b, ir::Value* x, bool torch_order) {
  ir::Value* erf = b.op("Erf", {b.op("Div", {x, b.scalar(std::sqrt(2.0))})});
  if (torch_order)
    return b.op("Mul", {b.op("Mul", {x, b.op("Add", {erf, b.scalar(1)})}), b.scalar(0.5)});
  return b.op("Mul", {b.op("Mul", {x, b.scalar(0.5)}), b.op("Add", {b.scalar(1), erf})});
}
ir::Value* gelu_tanh(G& b, ir::Value* x, bool torch_order) {
  ir::Value* cube =
      torch_order ? b.op("Mul", {x, b.op("Mul", {x, x})}) : b.op("Mul", {b.op("Mul", {x, x}), x});
  ir::Value* inner = torch_order ? b.op("Add", {x, b.op("Mul", {b.scalar(0.044715), cube})})
                                 : b.op("Add", {x, b.op("Mul", {cube, b.scalar(0.044715)})});
  ir::Value* t = b.op("Tanh", {b.op("Mul", {inner, b.scalar(std::sqrt(2.0 / M_PI))})});
  if (torch_order)
    return b.op("Mul", {b.scalar(0.5), b.op("Mul", {x, b.op("Add", {b.scalar(1), t})})});
  return b.op("Mul", {b.op("Mul", {x, b.scalar(0.5)}), b.op("Add", {b.scalar(1), t})});
}

TEST(GeluFusion, BothExportersFormsBecomeOneGelu) {
  at::Tensor x = torch::randn({3, 50}) * 4;
  float inf = std::numeric_limits<float>::infinity();
  x[0][0] = std::nanf("");
  x[0][1] = inf;
  x[0][2] = -inf;
  x[0][3] = 0;
  for (bool tanh : {false, true}) {
    for (bool torch_order : {false, true}) {
      for (bool constant_nodes : {false, true}) {
        SCOPED_TRACE(std::string(tanh ? "tanh" : "erf") + (torch_order ? " torch.onnx" : " tonnx") +
                     (constant_nodes ? " Constant nodes" : " initializers"));
        G b;
        b.constant_nodes = constant_nodes;
        ir::Value* in = b.in("x");
        b.out(tanh ? gelu_tanh(b, in, torch_order) : gelu_erf(b, in, torch_order), "y");
        Rep fast = prepare(b, true);
        at::Tensor y = fast.run({x})[0];
        std::vector<std::string> ops = ops_of(fast);
        ops.erase(std::remove(ops.begin(), ops.end(), "Constant"), ops.end());
        EXPECT_EQ(ops, std::vector<std::string>{"Gelu"});
        at::Tensor want = at::gelu(x, tanh ? "tanh" : "none");
        EXPECT_TRUE(at::equal(y.isnan(), want.isnan()));
        at::Tensor ok = ~want.isnan();
        EXPECT_TRUE(at::equal(y.masked_select(ok).isinf(), want.masked_select(ok).isinf()));
        at::Tensor finite = want.isfinite() & y.isfinite();
        expect_close(y.masked_select(finite), want.masked_select(finite), 1e-5, 1e-6);
        // The written-out form, unoptimized, agrees with it.
        at::Tensor plain = prepare(b, true, false).run({x})[0];
        at::Tensor both = finite & plain.isfinite();
        expect_close(y.masked_select(both), plain.masked_select(both), 1e-5, 1e-6);
      }
    }
  }
}

TEST(GeluFusion, SharedIntermediatesStayAndOtherConstantsDoNotMatch) {
  G b;
  ir::Value* x = b.in("x");
  // The Erf's output is also a graph output: it must still be computed.
  ir::Value* erf = b.op("Erf", {b.op("Div", {x, b.scalar(std::sqrt(2.0))})});
  b.out(b.op("Mul", {b.op("Mul", {x, b.scalar(0.5)}), b.op("Add", {erf, b.scalar(1)})}), "y");
  b.out(erf, "e");
  // Not GELU: x / 1.5. And a GELU whose 0.5 is a [1, 1] tensor broadcasts x to rank 2.
  ir::Value* erf3 = b.op("Erf", {b.op("Div", {x, b.scalar(std::sqrt(2.0))})});
  b.out(b.op("Mul", {b.op("Mul", {x, b.init("half11", torch::full({1, 1}, 0.5f))}),
                     b.op("Add", {erf3, b.scalar(1)})}),
        "r");
  ir::Value* e2 = b.op("Erf", {b.op("Div", {x, b.scalar(1.5)})});
  b.out(b.op("Mul", {b.op("Mul", {x, b.scalar(0.5)}), b.op("Add", {e2, b.scalar(1)})}), "z");
  Rep fast = prepare(b, true);
  at::Tensor xin = torch::randn({24});
  auto out = fast.run({xin});
  std::vector<std::string> ops = ops_of(fast);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Gelu"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Erf"), 3);
  expect_close(out[0], at::gelu(xin), 1e-5, 1e-6);
  expect_close(out[1], at::erf(xin / std::sqrt(2.0)));
  // x is [24]: with the [1, 1] constant ONNX's result is [1, 24], which Gelu(x) would not be.
  EXPECT_EQ(out[2].sizes(), (std::vector<int64_t>{1, 24}));
  expect_close(out[2], at::gelu(xin).unsqueeze(0), 1e-5, 1e-6);
  expect_close(out[3], xin * 0.5 * (1 + at::erf(xin / 1.5)));
}

}  // namespace

namespace {

// x -> LayerNormalization(scale, bias?) at `axis`; `stats`: Mean and InvStdDev outputs too.
Rep layer_norm_rep(at::Tensor scale, at::Tensor bias, int64_t axis, bool stats) {
  G b;
  std::vector<ir::Value*> ins{b.in("x"), b.init("scale", scale)};
  if (bias.defined()) ins.push_back(b.init("bias", bias));
  ir::Node* n = b.g.add_node("LayerNormalization", ins, {attr_i("axis", axis)}, stats ? 3 : 1);
  b.out(n->output(0), "y");
  if (stats) {
    b.out(n->output(1), "mean");
    b.out(n->output(2), "inv_std");
  }
  return prepare(b, true);
}

}  // namespace

TEST(LayerNormFast, OnlyYIsLibTorchsLayerNormBitForBit) {
  // Both exporters write LayerNormalization with Y alone: LibTorch's layer_norm, the function
  // the model ran, so the backend reproduces it exactly. Negative and positive axes, with and
  // without bias, several normalized dims.
  torch::manual_seed(3);
  at::Tensor x = torch::randn({2, 5, 6}) * 4 + 1;
  for (int64_t axis : {-1, 2, -2, 1}) {
    std::vector<int64_t> shape(x.sizes().begin() + (axis < 0 ? axis + 3 : axis), x.sizes().end());
    at::Tensor scale = torch::randn(shape), bias = torch::randn(shape);
    for (bool with_bias : {true, false}) {
      Rep rep = layer_norm_rep(scale, with_bias ? bias : at::Tensor(), axis, false);
      at::Tensor want = at::layer_norm(x, shape, scale, with_bias ? bias : at::Tensor(), 1e-5);
      EXPECT_TRUE(at::equal(rep.run({x})[0], want)) << "axis " << axis << " bias " << with_bias;
    }
  }
}

TEST(LayerNormFast, StatisticsBroadcastAndEdgeCases) {
  torch::manual_seed(4);
  at::Tensor x = torch::randn({3, 8});
  float inf = std::numeric_limits<float>::infinity();
  x[1][2] = std::nanf("");
  x[2][5] = inf;
  at::Tensor scale = torch::randn({8}), bias = torch::randn({8});
  at::Tensor want = at::layer_norm(x, {8}, scale, bias, 1e-5);
  // Mean and InvStdDev wanted: the double-precision path, the same Y within float rounding.
  std::vector<at::Tensor> got = layer_norm_rep(scale, bias, -1, true).run({x});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(at::equal(got[0].isnan(), want.isnan()));
  expect_close(got[0][0], want[0]);
  expect_close(got[1].squeeze(), x.to(at::kDouble).mean(-1).to(at::kFloat));
  // The fast path: a NaN or inf in a row makes that row NaN, as in LibTorch; others exact.
  at::Tensor fast = layer_norm_rep(scale, bias, -1, false).run({x})[0];
  EXPECT_TRUE(at::equal(fast.isnan(), want.isnan()));
  EXPECT_TRUE(at::equal(fast[0], want[0]));
  // A scale that broadcasts over the normalized dims ([1] for [8]) and no rows at all.
  at::Tensor one = torch::full({1}, 2.0f);
  at::Tensor y = layer_norm_rep(one, at::Tensor(), -1, false).run({x.slice(0, 0, 1)})[0];
  expect_close(y, at::layer_norm(x.slice(0, 0, 1), {8}) * 2);
  at::Tensor empty = layer_norm_rep(scale, bias, -1, false).run({torch::randn({0, 8})})[0];
  EXPECT_EQ(empty.sizes(), (std::vector<int64_t>{0, 8}));
}

namespace {
// Restores the thread count at the end of a scope (also when an assertion returns early).
struct ThreadCount {
  int prev = at::get_num_threads();
  ~ThreadCount() { at::set_num_threads(prev); }
};

// Bit for bit, also telling +0 from -0 and NaN payloads apart.
bool bits_equal(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (a.numel() == 0) return true;  // (an empty tensor's data may be null: no memcmp on it)
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

// MatMul of two run-time batches: at two threads a batch of small products runs one product
// per task (attention's Q K^T and P V; operands with any strides: permuted, transposed,
// expanded over the batch), which must be at::matmul's one-thread result bit for bit (on the
// operands as the kernel receives them); broadcast batches, larger products, bmm's naive
// sizes (under 400 multiply-adds), other ranks, doubles, integers and empty batches stay on
// at::matmul.
TEST(BatchedMatMul, OverTheThreadsIsAtenMatmulBitForBit) {
  torch::manual_seed(17);
  using T = at::Tensor;
  struct Case {
    std::string name;
    std::function<std::pair<T, T>()> make;
    bool transpose_b;  // B reaches the MatMul through a Transpose node (a contiguous copy)
    bool split;        // expected to run over the threads
  };
  auto rn = [](at::IntArrayRef s) { return torch::randn(s); };
  auto special = [](at::Tensor t) {  // NaN, inf and -0 among the values (t contiguous)
    t.view(-1)[1] = std::nanf("");
    t.view(-1)[2] = std::numeric_limits<float>::infinity();
    t.view(-1)[0] = -0.f;
    return t;
  };
  const std::vector<Case> cases = {
      {"q_kt",
       [&] {
         return std::pair{special(rn({1, 12, 128, 64})), rn({1, 12, 128, 64})};
       },
       true, true},
      {"p_v",
       [&] {
         return std::pair{special(rn({1, 12, 128, 128})), rn({1, 12, 128, 64})};
       },
       false, true},
      {"permuted_a",
       [&] {
         return std::pair{special(rn({1, 128, 12, 64})).permute({0, 2, 1, 3}),
                          rn({1, 12, 64, 128})};
       },
       false, true},
      {"transposed_b",
       [&] {
         return std::pair{rn({3, 9, 17}), special(rn({3, 9, 17})).transpose(1, 2)};
       },
       false, true},
      {"expanded_a",
       [&] {
         return std::pair{rn({1, 20, 30}).expand({4, 20, 30}), rn({4, 30, 10})};
       },
       false, true},
      {"one_row",
       [&] {
         return std::pair{rn({5, 1, 64}), rn({5, 64, 100})};
       },
       false, true},
      {"one_col",
       [&] {
         return std::pair{rn({5, 64, 100}), rn({5, 100, 1})};
       },
       false, true},
      {"exactly_400",
       [&] {
         return std::pair{rn({2, 5, 8}), rn({2, 8, 10})};
       },
       false, true},
      {"399_naive",
       [&] {
         return std::pair{rn({2, 3, 7, 3}), rn({2, 3, 3, 19})};
       },
       false, false},
      {"broadcast",
       [&] {
         return std::pair{rn({1, 3, 8, 8}), rn({2, 3, 8, 8})};
       },
       false, false},
      {"large",
       [&] {
         return std::pair{rn({2, 256, 256}), rn({2, 256, 256})};
       },
       false, false},
      {"rank_3_by_4",
       [&] {
         return std::pair{rn({12, 16, 32}), rn({1, 12, 32, 16})};
       },
       false, false},
      {"double",
       [&] {
         return std::pair{rn({4, 33, 17}).to(at::kDouble), rn({4, 17, 9}).to(at::kDouble)};
       },
       false, false},
      {"integer",
       [&] {
         return std::pair{torch::randint(-9, 9, {3, 20, 30}, torch::kLong),
                          torch::randint(-9, 9, {3, 30, 20}, torch::kLong)};
       },
       false, false},
      {"empty",
       [&] {
         return std::pair{rn({0, 16, 16}), rn({0, 16, 16})};
       },
       false, false},
  };
  // Where libtonnx or LibTorch's BLAS lacks OpenMP every case stays on at::matmul (the bits
  // are still compared); on this project's platform (GCC, libopenblas0-openmp) it must run.
  const bool available = tonnx::backend::batched_matmul_available();
#if defined(__GNUC__) && !defined(__clang__)
  EXPECT_TRUE(available) << "LibTorch's BLAS is not OpenBLAS's OpenMP build";
#endif
  ThreadCount restore;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    G b;
    ir::Value* lhs = b.in("a");
    ir::Value* rhs = b.in("b");
    auto [x, y] = c.make();
    if (c.transpose_b) {
      ir::Ints perm(y.dim());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      rhs = b.op("Transpose", {rhs}, {{"perm", ir::AttrValue(perm)}});
    }
    b.out(b.op("MatMul", {lhs, rhs}), "y");
    Rep rep = prepare(b, true);
    // The Transpose kernel hands on a contiguous copy: multiply what the MatMul receives.
    at::Tensor rhs_t = c.transpose_b ? y.transpose(-1, -2).contiguous() : y;
    for (int threads : {2, 1}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      at::set_num_threads(threads);
      uint64_t before = tonnx::backend::batched_matmul_runs();
      at::Tensor got = rep.run({x, y})[0];
      EXPECT_EQ(tonnx::backend::batched_matmul_runs() - before,
                available && c.split && threads > 1 ? 1u : 0u);
      // Split, each product runs single-threaded: LibTorch's one-thread result (its own
      // two-thread GEMM sums 128 x 64 x 128 otherwise, by up to 3e-5).
      if (available && c.split) at::set_num_threads(1);
      at::Tensor want = at::matmul(x, rhs_t);
      EXPECT_TRUE(bits_equal(got, want)) << got.sizes() << " vs " << want.sizes();
    }
  }
}
}  // namespace

namespace {

using tonnx::backend::gemv;
using tonnx::backend::gemv_isa;
using tonnx::backend::GemvIsa;

// The ISAs this CPU can run: both kernels are tested where it has AVX-512.
std::vector<GemvIsa> gemv_isas() {
  std::vector<GemvIsa> isas;
  if (gemv_isa() >= GemvIsa::Avx2) isas.push_back(GemvIsa::Avx2);
  if (gemv_isa() >= GemvIsa::Avx512) isas.push_back(GemvIsa::Avx512);
  return isas;
}

// b [k, n] stored as b^T row-major (rows form: a Gemm's transB weight) or row-major itself.
at::Tensor gemv_matrix(int64_t k, int64_t n, bool rows) {
  return rows ? torch::randn({n, k}).t() : torch::randn({k, n});
}

// Each output against the product in double, within the worst-case bound of summing k
// products in float ((k + 2) units of rounding times the sum of their magnitudes).
void expect_within_rounding(const at::Tensor& y, const at::Tensor& x, const at::Tensor& b,
                            const at::Tensor& c, double alpha, double beta) {
  at::Tensor xd = x.to(at::kDouble), bd = b.to(at::kDouble);
  at::Tensor want = alpha * at::mv(bd.t(), xd);
  if (c.defined()) want = want + beta * c.to(at::kDouble).reshape({-1});
  at::Tensor bound = (std::abs(alpha) * at::mv(bd.abs().t(), xd.abs()) +
                      (c.defined() ? std::abs(beta) * c.to(at::kDouble).abs().reshape({-1})
                                   : at::zeros({1}, at::kDouble))) *
                         ((b.size(0) + 4) * std::ldexp(1.0, -24)) +
                     1e-30;
  ASSERT_EQ(y.sizes(), want.sizes());
  EXPECT_TRUE(((y.to(at::kDouble) - want).abs() <= bound).all().item<bool>())
      << "largest error / bound: " << ((y.to(at::kDouble) - want).abs() / bound).max();
}

TEST(Gemv, BothLayoutsAndIsasWithinRoundingOfDouble) {
  torch::manual_seed(51);
  for (GemvIsa isa : gemv_isas()) {
    for (int64_t k : {1, 7, 16, 17, 33, 1000}) {
      for (int64_t n : {1, 3, 4, 5, 130, 257}) {
        for (bool rows : {true, false}) {
          for (int c_kind = 0; c_kind < 3; ++c_kind) {  // none, [1], [n]
            SCOPED_TRACE("isa " + std::to_string(static_cast<int>(isa)) + " k " +
                         std::to_string(k) + " n " + std::to_string(n) + " rows form " +
                         std::to_string(rows) + " c kind " + std::to_string(c_kind));
            at::Tensor b = gemv_matrix(k, n, rows), x = torch::randn({k});
            at::Tensor c = c_kind == 0   ? at::Tensor()
                           : c_kind == 1 ? torch::randn({1})
                                         : torch::randn({n});
            for (auto [alpha, beta] : {std::pair{1.0, 1.0}, std::pair{0.5, -2.0}}) {
              at::Tensor y = gemv(x, b, c, alpha, beta, isa);
              ASSERT_TRUE(y.defined());
              expect_within_rounding(y, x, b, c, alpha, beta);
            }
          }
        }
      }
    }
  }
}

TEST(Gemv, SameBitsAtAnyThreadCountAndForAStridedX) {
  torch::manual_seed(52);
  int prev = at::get_num_threads();
  for (GemvIsa isa : gemv_isas()) {
    for (bool rows : {true, false}) {
      at::Tensor b = gemv_matrix(2049, 1001, rows), c = torch::randn({1001});
      at::Tensor xs = torch::randn({2049, 2}), x = xs.select(1, 1);  // stride 2
      at::set_num_threads(1);
      at::Tensor one = gemv(x, b, c, 1.0, 1.0, isa);
      at::set_num_threads(2);
      at::Tensor two = gemv(x, b, c, 1.0, 1.0, isa);
      EXPECT_TRUE(at::equal(one, two));
      EXPECT_TRUE(at::equal(one, gemv(x.contiguous(), b, c, 1.0, 1.0, isa)));
      expect_within_rounding(one, x, b, c, 1.0, 1.0);
    }
  }
  at::set_num_threads(prev);
}

TEST(Gemv, NanAndInfPropagateAndOtherInputsAreDeclined) {
  float inf = std::numeric_limits<float>::infinity();
  for (GemvIsa isa : gemv_isas()) {
    for (bool rows : {true, false}) {
      for (int64_t k : {5, 40}) {  // the NaN in the vector part and in the tail
        at::Tensor b = rows ? torch::ones({6, k}).t() : torch::ones({k, 6});
        at::Tensor x = torch::ones({k});
        x[k - 1] = std::nanf("");
        EXPECT_TRUE(gemv(x, b, {}, 1.0, 1.0, isa).isnan().all().item<bool>());
        x[k - 1] = 1.0f;
        b[k - 1][2] = inf;
        at::Tensor y = gemv(x, b, torch::zeros({6}), 1.0, 1.0, isa);
        EXPECT_TRUE(std::isinf(y[2].item<float>()) && y[2].item<float>() > 0);
        EXPECT_EQ(y.isfinite().sum().item<int64_t>(), 5);
        b[k - 1][2] = -inf;
        b[0][2] = inf;  // inf - inf
        EXPECT_TRUE(std::isnan(gemv(x, b, {}, 1.0, 1.0, isa)[2].item<float>()));
      }
    }
    at::Tensor b = torch::randn({8, 9}), x = torch::randn({8});
    EXPECT_FALSE(gemv(x, b.t().contiguous().t().slice(1, 0, 9, 2), {}, 1, 1, isa).defined())
        << "a strided matrix";
    EXPECT_FALSE(gemv(x, b.to(at::kDouble), {}, 1, 1, isa).defined()) << "double";
    EXPECT_FALSE(gemv(x.to(at::kLong), b, {}, 1, 1, isa).defined()) << "int64";
    EXPECT_FALSE(gemv(x.slice(0, 0, 7), b, {}, 1, 1, isa).defined()) << "k mismatch";
    EXPECT_FALSE(gemv(x, b, torch::randn({3}), 1, 1, isa).defined()) << "c of 3 for 9 columns";
    EXPECT_FALSE(gemv(torch::randn({0}), torch::randn({0, 9}), {}, 1, 1, isa).defined()) << "k 0";
  }
  EXPECT_FALSE(gemv(torch::randn({4}), torch::randn({4, 4}), {}, 1, 1, GemvIsa::None).defined());
}

// MatMul of one row (a vector, [1, K], [1, 1, K]) by a matrix of 2^18 or more elements, an
// initializer or a graph input: tonnx's GEMV, bit for bit, within rounding of LibTorch's
// matmul (for these sizes the same bits as OpenBLAS's one-row GEMM, in 2-3x less time, so
// gemv_runs() tells the paths apart), NaN and inf propagated; two rows, a small matrix and
// `exact` keep their paths.
TEST(Gemv, MatMulOfOneRowByALargeMatrix) {
  torch::manual_seed(53);
  at::Tensor w = torch::randn({512, 1024});
  for (bool constant : {true, false}) {
    G b;
    b.out(b.op("MatMul", {b.in("a"), constant ? b.init("w", w) : b.in("w")}), "y");
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{512}, {1, 512}, {1, 1, 512}, {2, 512}}) {
      SCOPED_TRACE(c10::str(constant ? "initializer" : "input", " A ", at::IntArrayRef(shape)));
      at::Tensor a = torch::randn(shape);
      a.view({-1})[7] = std::nanf("");
      a.view({-1})[300] = std::numeric_limits<float>::infinity();
      std::vector<at::Tensor> inputs{a};
      if (!constant) inputs.push_back(w);
      Rep rep = prepare(b, true);
      uint64_t before = tonnx::backend::gemv_runs();
      at::Tensor y = rep.run(inputs)[0];
      EXPECT_EQ(tonnx::backend::gemv_runs() - before, shape[0] == 2 ? 0u : 1u);
      at::Tensor want = at::matmul(a, w);
      ASSERT_EQ(y.sizes(), want.sizes());
      expect_close(y, want, {1e-4, 1e-4}, "");
      EXPECT_EQ(y.isnan().sum().item<int64_t>(), want.isnan().sum().item<int64_t>());
      if (shape[0] == 2) continue;  // two rows: oneDNN's matmul or LibTorch's
      at::Tensor gv = gemv(a.reshape({-1}), w, {}, 1.0, 0.0, gemv_isa());
      ASSERT_TRUE(gv.defined());
      expect_close(y.reshape({-1}), gv, {0, 0}, "");
      at::Tensor finite = a.nan_to_num(0, 0, 0);
      std::vector<at::Tensor> finite_inputs{finite};
      if (!constant) finite_inputs.push_back(w);
      expect_within_rounding(prepare(b, true).run(finite_inputs)[0].reshape({-1}),
                             finite.reshape({-1}), w, {}, 1.0, 0.0);
      PrepareOptions exact;
      exact.exact = true;
      Rep exact_rep = tonnx::backend::prepare(tonnx::model_to_proto(b.m), "CPU", exact);
      before = tonnx::backend::gemv_runs();
      at::Tensor e = exact_rep.run(inputs)[0];
      EXPECT_EQ(tonnx::backend::gemv_runs(), before) << "exact: no GEMV";
      expect_close(e, want, {0, 0}, "exact: LibTorch's bits");
    }
  }
  // A matrix below 2^18 elements: LibTorch's matmul, bit for bit.
  at::Tensor small = torch::randn({64, 96}), a = torch::randn({1, 64});
  G s;
  s.out(s.op("MatMul", {s.in("a"), s.init("w", small)}), "y");
  Rep small_rep = prepare(s, true);
  uint64_t before = tonnx::backend::gemv_runs();
  EXPECT_TRUE(at::equal(small_rep.run({a})[0], at::matmul(a, small)));
  EXPECT_EQ(tonnx::backend::gemv_runs(), before);
}

}  // namespace
