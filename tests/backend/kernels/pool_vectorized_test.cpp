// 2-D max and average pooling (backend/kernels/pool_vectorized.cpp), alone and as the MaxPool and
// AveragePool kernels run them. Oracle: ATen's at::max_pool2d and at::avg_pool2d, bit for bit
// but for NaN payloads (the kernels claim exactly that), at one and two threads.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <limits>

#include "backend/kernels/blocked_layout.h"
#include "backend/kernels/pool_vectorized.h"
#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace {

using tonnx::backend::Pool2d;
using tonnx::backend::PrepareOptions;
namespace ir = tonnx::ir;
using G = tonnx::test::GraphBuilder;

// Equal as bits (the sign of zero too), except that any NaN equals any NaN: which of two NaNs
// a sum keeps depends on the order the compiler gives an add's operands (clang, for the
// sanitizer build, swaps them where GCC does not), in ATen's loop as in this kernel.
bool same_bits_up_to_nan(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || a.sizes() != b.sizes() || a.scalar_type() != at::kFloat) return false;
  at::Tensor nan = a.isnan();
  return at::equal(nan, b.isnan()) && at::equal(a.contiguous().view(at::kInt).masked_fill(nan, 0),
                                                b.contiguous().view(at::kInt).masked_fill(nan, 0));
}

// Magnitudes over many decades, runs of equal values and of zeros of both signs, NaN of both
// signs, inf and -inf, scattered over the planes (edges and interior).
at::Tensor awkward(std::vector<int64_t> sizes) {
  at::Tensor x = torch::randn(sizes) * torch::exp(torch::randn(sizes) * 3);
  at::Tensor f = x.view(-1);
  int64_t n = f.numel();
  if (n < 64) return x;
  f.narrow(0, 0, 24).fill_(-0.f);
  f.narrow(0, 12, 12).zero_();
  f.narrow(0, n / 3, 20).fill_(2.5f);
  for (int64_t i = 5; i < n; i += n / 7) f[i] = std::nanf("");
  for (int64_t i = 11; i < n; i += n / 5) f[i] = -std::nanf("");
  for (int64_t i = 17; i < n; i += n / 6) f[i] = std::numeric_limits<float>::infinity();
  for (int64_t i = 23; i < n; i += n / 4) f[i] = -std::numeric_limits<float>::infinity();
  return x;
}

struct Shape {
  std::vector<int64_t> x;
  int64_t kh, kw, sh, sw, ph, pw;
};

// Inception's, ResNet's and DenseNet's pools, and awkward ones: rectangular kernels, unequal
// strides, widths that leave edge columns on both sides of the sixteen-wide interior, one
// column, stride 3 (no vector path), pads of half the kernel.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {{1, 64, 147, 147}, 3, 3, 2, 2, 0, 0}, {{1, 192, 35, 35}, 3, 3, 1, 1, 1, 1},
      {{1, 64, 112, 112}, 3, 3, 2, 2, 1, 1}, {{1, 128, 56, 56}, 2, 2, 2, 2, 0, 0},
      {{2, 3, 19, 53}, 3, 2, 1, 2, 1, 1},    {{2, 5, 7, 1}, 3, 1, 2, 1, 1, 0},
      {{1, 2, 33, 40}, 5, 5, 3, 3, 2, 2},    {{3, 4, 9, 34}, 2, 4, 2, 1, 0, 2},
      {{1, 1, 2, 2}, 2, 2, 2, 2, 1, 1}};
  return s;
}

// Whether the kernels run here is the backend's decision (pool_kernel_runs: AVX-512 for the
// NCHW kernel and B = 16, AVX2 for B = 8, as TONNX_MAX_ISA caps it, behind a probe against
// ATen); elsewhere they decline every call and the callers' other paths run (the last test
// still checks those against ATen).
bool have_avx512() { return tonnx::backend::pool_kernel_runs(0); }

TEST(BackendPool, KernelsAreAtenBitForBit) {
  if (!have_avx512()) GTEST_SKIP() << "the NCHW kernel does not run on this CPU (tonnx cpu)";
  torch::manual_seed(7);
  int prev = at::get_num_threads();
  uint64_t before = tonnx::backend::exact_pool_runs();
  int expected_runs = 0;
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (const Shape& sh : shapes()) {
      at::Tensor x = awkward(sh.x);
      for (bool ceil_mode : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "threads " << threads << " x " << x.sizes() << " k " << sh.kh << "x"
                     << sh.kw << " s " << sh.sh << "x" << sh.sw << " p " << sh.ph << "x" << sh.pw
                     << " ceil " << ceil_mode);
        Pool2d p{sh.kh, sh.kw, sh.sh, sh.sw, sh.ph, sh.pw, ceil_mode};
        at::Tensor want =
            at::max_pool2d(x, {sh.kh, sh.kw}, {sh.sh, sh.sw}, {sh.ph, sh.pw}, {1, 1}, ceil_mode);
        EXPECT_TRUE(same_bits_up_to_nan(tonnx::backend::max_pool2d_exact(x, p), want));
        for (bool include_pad : {false, true}) {
          want = at::avg_pool2d(x, {sh.kh, sh.kw}, {sh.sh, sh.sw}, {sh.ph, sh.pw}, ceil_mode,
                                include_pad);
          EXPECT_TRUE(
              same_bits_up_to_nan(tonnx::backend::avg_pool2d_exact(x, p, include_pad), want))
              << "count_include_pad " << include_pad;
        }
        expected_runs += 3;
      }
    }
  }
  at::set_num_threads(prev);
  EXPECT_EQ(tonnx::backend::exact_pool_runs() - before, static_cast<uint64_t>(expected_runs));
}

// The blocked kernels ([N, C/B, H, W, B], B 16 with AVX-512 and 8 with AVX2) on the same
// shapes with 16 or 32 channels: the blocked result of ATen's NCHW pooling, bit for bit.
TEST(BackendPool, BlockedKernelsAreAtenBitForBit) {
  if (!tonnx::backend::pool_kernel_runs(8))
    GTEST_SKIP() << "the blocked kernels do not run on this CPU (tonnx cpu)";
  torch::manual_seed(9);
  int prev = at::get_num_threads();
  uint64_t before = tonnx::backend::blocked_pool_runs();
  int expected_runs = 0;
  using tonnx::backend::plain_to_blocked;
  auto to_plain = [](const at::Tensor& b) {
    return b.defined() && b.dim() == 5 ? tonnx::backend::blocked_to_plain(b) : at::Tensor();
  };
  for (int64_t width : {8, 16}) {
    if (!tonnx::backend::pool_kernel_runs(width)) continue;  // (it declines: below)
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      for (Shape sh : shapes()) {
        sh.x[1] = sh.x[1] > 8 ? 32 : 16;
        at::Tensor x = awkward(sh.x), xb = plain_to_blocked(x, width);
        for (bool ceil_mode : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "width " << width << " threads " << threads << " x " << x.sizes() << " k "
                       << sh.kh << "x" << sh.kw << " s " << sh.sh << "x" << sh.sw << " p " << sh.ph
                       << "x" << sh.pw << " ceil " << ceil_mode);
          Pool2d p{sh.kh, sh.kw, sh.sh, sh.sw, sh.ph, sh.pw, ceil_mode};
          at::Tensor want =
              at::max_pool2d(x, {sh.kh, sh.kw}, {sh.sh, sh.sw}, {sh.ph, sh.pw}, {1, 1}, ceil_mode);
          EXPECT_TRUE(
              same_bits_up_to_nan(to_plain(tonnx::backend::max_pool2d_blocked_exact(xb, p)), want));
          for (bool include_pad : {false, true}) {
            want = at::avg_pool2d(x, {sh.kh, sh.kw}, {sh.sh, sh.sw}, {sh.ph, sh.pw}, ceil_mode,
                                  include_pad);
            EXPECT_TRUE(same_bits_up_to_nan(
                to_plain(tonnx::backend::avg_pool2d_blocked_exact(xb, p, include_pad)), want))
                << "count_include_pad " << include_pad;
          }
          expected_runs += 3;
        }
      }
    }
  }
  if (!tonnx::backend::pool_kernel_runs(16)) {
    EXPECT_FALSE(tonnx::backend::max_pool2d_blocked_exact(
                     plain_to_blocked(torch::randn({1, 32, 9, 9}), 16), {3, 3, 2, 2, 1, 1, false})
                     .defined());
  }
  at::set_num_threads(prev);
  EXPECT_EQ(tonnx::backend::blocked_pool_runs() - before, static_cast<uint64_t>(expected_runs));
  // What it leaves to its caller: not blocked, not a block width, not contiguous, not float,
  // empty, big pads (each of which the AVX2 kernel would otherwise run).
  Pool2d p{3, 3, 2, 2, 1, 1, false};
  at::Tensor xb = plain_to_blocked(torch::randn({1, 32, 9, 9}), 8);
  EXPECT_FALSE(
      tonnx::backend::max_pool2d_blocked_exact(torch::randn({1, 2, 9, 9, 12}), p).defined());
  EXPECT_FALSE(tonnx::backend::max_pool2d_blocked_exact(torch::randn({1, 32, 9, 9}), p).defined());
  EXPECT_FALSE(tonnx::backend::max_pool2d_blocked_exact(xb.transpose(2, 3), p).defined());
  EXPECT_FALSE(tonnx::backend::max_pool2d_blocked_exact(xb.to(at::kDouble), p).defined());
  EXPECT_FALSE(
      tonnx::backend::max_pool2d_blocked_exact(torch::randn({0, 2, 9, 9, 8}), p).defined());
  EXPECT_FALSE(
      tonnx::backend::avg_pool2d_blocked_exact(xb, {3, 3, 1, 1, 2, 2, false}, true).defined());
  EXPECT_FALSE(
      tonnx::backend::avg_pool2d_blocked_exact(xb, {11, 11, 1, 1, 0, 0, false}, true).defined());
}

TEST(BackendPool, LeavesToItsCallerWhatItDoesNotCompute) {
  Pool2d p{3, 3, 2, 2, 1, 1, false};
  at::Tensor x = torch::randn({1, 4, 9, 9});
  EXPECT_FALSE(tonnx::backend::max_pool2d_exact(x.to(at::kDouble), p).defined());
  EXPECT_FALSE(tonnx::backend::max_pool2d_exact(x.transpose(2, 3), p).defined());
  EXPECT_FALSE(
      tonnx::backend::max_pool2d_exact(x.contiguous(at::MemoryFormat::ChannelsLast), p).defined());
  EXPECT_FALSE(tonnx::backend::max_pool2d_exact(torch::randn({4, 9, 9}), p).defined());
  EXPECT_FALSE(tonnx::backend::max_pool2d_exact(torch::randn({0, 4, 9, 9}), p).defined());
  EXPECT_FALSE(tonnx::backend::avg_pool2d_exact(x, {3, 3, 1, 1, 2, 2, false}, true).defined());
  EXPECT_FALSE(tonnx::backend::avg_pool2d_exact(x, {11, 11, 1, 1, 0, 0, false}, true).defined());
  EXPECT_FALSE(tonnx::backend::max_pool2d_exact(x, {0, 3, 1, 1, 0, 0, false}).defined());
  // A wide row under a wide kernel: its per-block masks would outgrow the output; ATen's.
  EXPECT_FALSE(tonnx::backend::max_pool2d_exact(torch::randn({1, 1, 1, 40000}),
                                                {1, 30000, 1, 1, 0, 0, false})
                   .defined());
}

// The MaxPool and AveragePool kernels run it where it applies and where oneDNN's pooling is
// not the faster path, and give ATen's results everywhere, at one and two threads.
TEST(BackendPool, OnnxPoolsRunItAndMatchAten) {
  torch::manual_seed(8);
  auto ints = [](std::vector<int64_t> v) { return ir::AttrValue(ir::Ints(v)); };
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* op;
    std::vector<ir::Attr> attrs;
    bool exact_kernel;
    std::function<at::Tensor(const at::Tensor&)> aten;
  };
  std::vector<Case> cases = {
      {"MaxPool",
       {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}},
       true,
       [](const at::Tensor& x) {
         return at::max_pool2d(x, {3, 3}, {2, 2});
       }},
      {"MaxPool",
       {{"kernel_shape", ints({3, 3})},
        {"strides", ints({2, 2})},
        {"pads", ints({1, 1, 1, 1})},
        {"ceil_mode", ir::AttrValue(int64_t{1})}},
       true,
       [](const at::Tensor& x) {
         return at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
       }},
      {"MaxPool",  // asymmetric pads: -inf padding first, then the kernel
       {{"kernel_shape", ints({3, 3})}, {"pads", ints({0, 1, 2, 1})}},
       true,
       [inf](const at::Tensor& x) {
         return at::max_pool2d(at::constant_pad_nd(x, {1, 1, 0, 2}, -inf), {3, 3}, {1, 1});
       }},
      {"MaxPool",
       {{"kernel_shape", ints({3, 3})}, {"dilations", ints({2, 2})}},
       false,
       [](const at::Tensor& x) {
         return at::max_pool2d(x, {3, 3}, {1, 1}, {0, 0}, {2, 2});
       }},
      {"AveragePool",
       {{"kernel_shape", ints({3, 3})},
        {"pads", ints({1, 1, 1, 1})},
        {"count_include_pad", ir::AttrValue(int64_t{1})}},
       true,
       [](const at::Tensor& x) {
         return at::avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}, false, true);
       }},
      {"AveragePool",
       {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}},
       true,
       [](const at::Tensor& x) {
         return at::avg_pool2d(x, {2, 2}, {2, 2});
       }},
      {"AveragePool",
       {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}},
       true,
       [](const at::Tensor& x) {
         return at::avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}, false, false);
       }},
  };
  for (const Case& c : cases) {
    G b;
    b.out(b.op(c.op, {b.in("x")}, c.attrs), "y");
    onnx::ModelProto proto = tonnx::model_to_proto(b.m);
    for (int threads : {1, 2}) {
      PrepareOptions o;
      o.num_threads = threads;
      auto rep = tonnx::backend::prepare(proto, "CPU", o);
      for (at::Tensor x : {awkward({2, 5, 23, 41}), awkward({1, 3, 147, 147})}) {
        SCOPED_TRACE(::testing::Message() << c.op << " threads " << threads << " " << x.sizes());
        uint64_t before = tonnx::backend::exact_pool_runs();
        at::Tensor got = rep.run({x})[0];
        // (Average pooling with an output plane of at most 56x56 stays on oneDNN, faster there;
        // so does max pooling then, on inputs whose sum is finite: these have NaN.)
        bool used = have_avx512() && c.exact_kernel && (c.op[0] == 'M' || x.size(2) == 147);
        EXPECT_EQ(tonnx::backend::exact_pool_runs() - before, used ? 1u : 0u);
        EXPECT_TRUE(same_bits_up_to_nan(got, c.aten(x)));
      }
    }
  }
}

}  // namespace
