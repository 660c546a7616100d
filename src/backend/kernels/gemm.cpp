// Gemm, MatMul and the fused ai.tonnx::FusedGemm: on oneDNN's matmul where B is an
// initializer (PrepareOptions::onednn_gemm), else on LibTorch (OpenBLAS).
#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <c10/util/accumulate.h>

#include <dlfcn.h>
#include <immintrin.h>

#include <atomic>

#include "backend/cpu.h"
#include "backend/kernels/fused_activation.h"
#include "backend/kernels/gemm.h"
#include "backend/kernels/kernel.h"
#include "backend/kernels/onednn.h"

namespace tonnx::backend {
namespace {
std::atomic<uint64_t> g_batched_runs{0};
std::atomic<uint64_t> g_gemv_runs{0};

// tonnx's GEMV: y[j] = alpha * sum_k x[k] * B[k][j] + beta * c[j], B [K, N] float stored as
// W = B^T row-major ([N, K], a Gemm's transB weight as exported) or row-major itself. A
// single row times a large matrix is bound by reading the matrix once: OpenBLAS's GEMM is 3-10x
// slower than a GEMV there, and its GEMV (sgemv) reached 21-34 GB/s against 24-40 for this
// loop (Zen 4, AlexNet's 9216 x 4096 layer; docs/backend.md, "GEMV for one row"). Each output
// is summed by one thread in one order whatever the thread count: rows form, 16 (AVX-512) or 8
// (AVX2) lanes each over k = lane mod width in k order, then the lanes added pairwise, then
// the tail k in order; columns form, k in order per column.
struct GemvArgs {
  const float* w;  // rows form: W [N, K]; columns form: B [K, N]
  const float* x;  // [K]
  const float* c;  // [N], [1] or null
  bool c_scalar;
  float alpha, beta;
  float* y;  // [N]
  int64_t n, k;
};
inline float gemv_out(const GemvArgs& g, int64_t j, float dot) {
  float v = g.alpha * dot;
  return g.c ? v + g.beta * g.c[g.c_scalar ? 0 : j] : v;
}

// The lanes of a register added pairwise: halves first, down to one. (Stored and added in
// scalar code: GCC 12 warns on the undefined registers of the extracting intrinsics.)
template <int L>
inline float reduce_lanes(float* t) {
  for (int w = L / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) t[i] += t[i + w];
  return t[0];
}
__attribute__((target("avx2,fma"))) inline float reduce8(__m256 v) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  return reduce_lanes<8>(t);
}
__attribute__((target("avx512f,fma"))) inline float reduce16(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  return reduce_lanes<16>(t);
}

// Rows form, outputs [j0, j1), four rows at a time reading x once for all four.
__attribute__((target("avx512f,fma"))) void gemv_rows_avx512(const GemvArgs& g, int64_t j0,
                                                             int64_t j1) {
  const int64_t k = g.k, kv = k / 16 * 16;
  auto tail = [&](const float* w, float s) {
    for (int64_t i = kv; i < k; ++i) s += w[i] * g.x[i];
    return s;
  };
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    const float* w0 = g.w + j * k;
    const float *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < kv; i += 16) {
      __m512 xv = _mm512_loadu_ps(g.x + i);
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), xv, a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), xv, a1);
      a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), xv, a2);
      a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), xv, a3);
    }
    g.y[j] = gemv_out(g, j, tail(w0, reduce16(a0)));
    g.y[j + 1] = gemv_out(g, j + 1, tail(w1, reduce16(a1)));
    g.y[j + 2] = gemv_out(g, j + 2, tail(w2, reduce16(a2)));
    g.y[j + 3] = gemv_out(g, j + 3, tail(w3, reduce16(a3)));
  }
  for (; j < j1; ++j) {
    const float* w = g.w + j * k;
    __m512 a = _mm512_setzero_ps();
    for (int64_t i = 0; i < kv; i += 16)
      a = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(g.x + i), a);
    g.y[j] = gemv_out(g, j, tail(w, reduce16(a)));
  }
}

__attribute__((target("avx2,fma"))) void gemv_rows_avx2(const GemvArgs& g, int64_t j0, int64_t j1) {
  const int64_t k = g.k, kv = k / 8 * 8;
  for (int64_t j = j0; j < j1; j += 2) {
    const bool two = j + 1 < j1;
    const float* w0 = g.w + j * k;
    const float* w1 = two ? w0 + k : w0;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (int64_t i = 0; i < kv; i += 8) {
      __m256 xv = _mm256_loadu_ps(g.x + i);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + i), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + i), xv, a1);
    }
    float s0 = reduce8(a0), s1 = reduce8(a1);
    for (int64_t i = kv; i < k; ++i) {
      s0 += w0[i] * g.x[i];
      s1 += w1[i] * g.x[i];
    }
    g.y[j] = gemv_out(g, j, s0);
    if (two) g.y[j + 1] = gemv_out(g, j + 1, s1);
  }
}

// Columns form, outputs [j0, j1) (j0 a multiple of kGemvCols): 128 columns at a time down
// all of B's rows, in eight AVX-512 accumulators (masked at the right edge).
constexpr int64_t kGemvCols = 128;
__attribute__((target("avx512f,fma"))) void gemv_cols_avx512(const GemvArgs& g, int64_t j0,
                                                             int64_t j1) {
  for (int64_t c0 = j0; c0 < j1; c0 += kGemvCols) {
    const int64_t width = std::min(kGemvCols, j1 - c0);
    const int vecs = static_cast<int>((width + 15) / 16);
    __mmask16 mask[8];
    for (int v = 0; v < vecs; ++v) {
      int64_t left = width - v * 16;
      mask[v] = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
    }
    __m512 acc[8];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < g.k; ++i) {
      const float* row = g.w + i * g.n + c0;
      __m512 xv = _mm512_set1_ps(g.x[i]);
      for (int v = 0; v < vecs; ++v)
        acc[v] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask[v], row + v * 16), xv, acc[v]);
    }
    alignas(64) float out[kGemvCols];
    for (int v = 0; v < vecs; ++v) _mm512_store_ps(out + v * 16, acc[v]);
    for (int64_t j = 0; j < width; ++j) g.y[c0 + j] = gemv_out(g, c0 + j, out[j]);
  }
}

__attribute__((target("avx2,fma"))) void gemv_cols_avx2(const GemvArgs& g, int64_t j0, int64_t j1) {
  for (int64_t c0 = j0; c0 < j1; c0 += kGemvCols) {
    const int64_t width = std::min(kGemvCols, j1 - c0), vecs = width / 8;
    __m256 acc[16];
    float rest[8] = {};
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t i = 0; i < g.k; ++i) {
      const float* row = g.w + i * g.n + c0;
      const float xi = g.x[i];
      __m256 xv = _mm256_set1_ps(xi);
      for (int64_t v = 0; v < vecs; ++v)
        acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(row + v * 8), xv, acc[v]);
      for (int64_t j = vecs * 8; j < width; ++j) rest[j - vecs * 8] += row[j] * xi;
    }
    alignas(32) float out[kGemvCols];
    for (int64_t v = 0; v < vecs; ++v) _mm256_store_ps(out + v * 8, acc[v]);
    for (int64_t j = vecs * 8; j < width; ++j) out[j] = rest[j - vecs * 8];
    for (int64_t j = 0; j < width; ++j) g.y[c0 + j] = gemv_out(g, c0 + j, out[j]);
  }
}

}  // namespace

GemvIsa gemv_isa() {
  switch (cpu::isa()) {
    case cpu::Isa::avx512:
      return GemvIsa::Avx512;
    case cpu::Isa::avx2:
      return GemvIsa::Avx2;
    case cpu::Isa::none:
      break;
  }
  return GemvIsa::None;
}

at::Tensor gemv(const at::Tensor& x, const at::Tensor& b, const at::Tensor& c, double alpha,
                double beta, GemvIsa isa) {
  if (isa == GemvIsa::None || isa > gemv_isa() || x.scalar_type() != at::kFloat ||
      b.scalar_type() != at::kFloat || x.dim() != 1 || b.dim() != 2 || x.size(0) != b.size(0))
    return {};
  const int64_t k = b.size(0), n = b.size(1);
  const bool rows = b.t().is_contiguous();
  if (k == 0 || n == 0 || (!rows && !b.is_contiguous())) return {};
  at::Tensor cc;
  if (c.defined()) {
    if (c.scalar_type() != at::kFloat || (c.numel() != n && c.numel() != 1)) return {};
    cc = c.contiguous();
  }
  g_gemv_runs.fetch_add(1, std::memory_order_relaxed);
  at::Tensor xc = x.contiguous(), y = at::empty({n}, x.options());
  GemvArgs g{b.data_ptr<float>(),
             xc.data_ptr<float>(),
             cc.defined() ? cc.data_ptr<float>() : nullptr,
             cc.defined() && cc.numel() == 1 && n != 1,
             static_cast<float>(alpha),
             static_cast<float>(beta),
             y.data_ptr<float>(),
             n,
             k};
  const bool wide = isa == GemvIsa::Avx512;
  // Tasks of at least 64K multiply-adds: smaller ones cost more to hand out than they save.
  const int64_t unit = rows ? 4 : kGemvCols, units = (n + unit - 1) / unit;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / (unit * k));
  at::parallel_for(0, units, grain, [&](int64_t u0, int64_t u1) {
    const int64_t j0 = u0 * unit, j1 = std::min(n, u1 * unit);
    if (rows)
      wide ? gemv_rows_avx512(g, j0, j1) : gemv_rows_avx2(g, j0, j1);
    else
      wide ? gemv_cols_avx512(g, j0, j1) : gemv_cols_avx2(g, j0, j1);
  });
  return y;
}

namespace {

// alpha * a @ b + beta * c (c broadcast to the result, or undefined). A single row times a
// matrix of 2^18 elements or more runs as tonnx's GEMV (above; LibTorch's addmv where the CPU
// has neither AVX-512 nor AVX2), which sums in another order than LibTorch's GEMM (about 1e-6
// relative; docs/backend.md): every batch-1 classifier of the zoo takes it (ResNet-18's 512 x
// 1000 and up); only smaller matrices, where the gain is a few microseconds, and every one with
// `exact` (PrepareOptions::exact) keep the GEMM and LibTorch's result bit for bit.
constexpr int64_t kGemvMinElements = int64_t{1} << 18;
at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha,
                double beta, bool exact) {
  int64_t n = b.size(1);
  if (!exact && a.size(0) == 1 && b.numel() >= kGemvMinElements && a.scalar_type() == at::kFloat &&
      b.scalar_type() == at::kFloat &&
      (!c.defined() || (c.scalar_type() == at::kFloat && (c.numel() == n || c.numel() == 1)))) {
    at::Tensor y = gemv(a[0], b, c, alpha, beta, gemv_isa());
    if (y.defined()) return y.unsqueeze(0);
    y = c.defined() ? at::addmv(c.reshape({-1}).expand({n}), b.t(), a[0], beta, alpha)
                    : at::mv(b.t(), a[0]);
    if (!c.defined() && alpha != 1.0) y.mul_(alpha);
    return y.unsqueeze(0);
  }
  if (c.defined()) return at::addmm(c, a, b, beta, alpha);
  at::Tensor y = at::mm(a, b);
  if (alpha != 1.0) y.mul_(alpha);
  return y;
}

at::Tensor run_gemm(const ir::Node& n, double alpha, double beta, bool ta, bool tb,
                    const Tensors& in, bool exact) {
  at::Tensor a = ta ? in.at(0).t() : in.at(0);
  at::Tensor b = tb ? in.at(1).t() : in.at(1);
  if (a.dim() != 2 || b.dim() != 2) kernel_fail(n, "A and B must be matrices");
  if (a.size(1) != b.size(0))
    kernel_fail(n, "A' is " + std::to_string(a.size(0)) + "x" + std::to_string(a.size(1)) +
                       " but B' is " + std::to_string(b.size(0)) + "x" + std::to_string(b.size(1)));
  return gemm(a, b, in.size() > 2 && beta != 0 ? in[2] : at::Tensor(), alpha, beta, exact);
}

// oneDNN's matmul for a node whose B (input 1) is an initializer, multiplied as the node
// does (transposed for transB); null where it does not apply (PrepareOptions::onednn_gemm).
std::shared_ptr<const OneDnnMatmul> make_onednn_matmul(const KernelSpec& s, bool tb) {
  if (!s.choices.onednn_gemm || s.constant_inputs.size() < 2 || !s.constant_inputs[1].defined() ||
      s.constant_inputs[1].dim() != 2)
    return nullptr;
  return OneDnnMatmul::make(tb ? s.constant_inputs[1].t() : s.constant_inputs[1]);
}

// A bias oneDNN adds as ATen would broadcast it: undefined, or one row of n values.
bool bias_row(const at::Tensor& c, int64_t n) {
  return !c.defined() || (c.dim() == 1 && c.size(0) == n) ||
         (c.dim() == 2 && c.size(0) == 1 && c.size(1) == n);
}

// The sizes of a product of A [..., K]: A's with the last one replaced by n.
std::vector<int64_t> last_dim_as(const at::Tensor& a, int64_t n) {
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end() - 1);
  shape.push_back(n);
  return shape;
}

// A [..., K] times a K x n matrix by `mm` on A's leading axes flattened into rows:
// [..., n]; undefined where `mm` gives an undefined result (then ATen runs the node).
template <class MatrixProduct>
at::Tensor over_rows(const at::Tensor& a, int64_t n, MatrixProduct mm) {
  // The row count spelled out: reshape({-1, 0}) of an empty A is ambiguous to ATen.
  int64_t rows = c10::multiply_integers(a.sizes().begin(), a.sizes().end() - 1);
  at::Tensor y = mm(a.reshape({rows, a.size(-1)}));
  return y.defined() ? y.view(last_dim_as(a, n)) : y;
}

// A Gemm (alpha 1, A not transposed) on oneDNN; undefined where the call does not fit.
at::Tensor onednn_gemm(const OneDnnMatmul* dnn, double beta, const Tensors& in) {
  if (!dnn) return {};
  at::Tensor c = in.size() > 2 && beta != 0 ? in[2] : at::Tensor();
  if (c.defined() && beta != 1.0) return {};
  const at::Tensor& a = in.at(0);
  int64_t n = dnn->cols();
  if (!bias_row(c, n)) return {};
  return dnn->run(a, c);
}

TONNX_KERNEL("Gemm", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  double alpha = n.attr_f("alpha", 1.0f), beta = n.attr_f("beta", 1.0f);
  bool ta = n.attr_i("transA", 0), tb = n.attr_i("transB", 0);
  auto dnn = alpha == 1.0 && !ta ? make_onednn_matmul(s, tb) : nullptr;
  bool exact = s.choices.exact;
  return [alpha, beta, ta, tb, dnn, exact, &n](const Tensors& in) -> Tensors {
    at::Tensor y = onednn_gemm(dnn.get(), beta, in);
    return {y.defined() ? y : run_gemm(n, alpha, beta, ta, tb, in, exact)};
  };
});

// ai.tonnx::FusedGemm: a Gemm (or, with batched=1, MatMul(A, B) + C over A's last axis, C
// a vector of B's columns) followed by the activation.
TONNX_KERNEL_DOMAIN(
    "FusedGemm", passes::kFusedDomain, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
      const ir::Node& n = s.node;
      double alpha = n.attr_f("alpha", 1.0f), beta = n.attr_f("beta", 1.0f);
      bool ta = n.attr_i("transA", 0), tb = n.attr_i("transB", 0);
      bool batched = n.attr_i("batched", 0) != 0;
      // (A model file may name this internal op: check what it reads.)
      size_t n_in = n.inputs().size();
      if (n_in < (batched ? 3u : 2u) || n_in > 3 || n.outputs().size() != 1)
        kernel_fail(n, std::string("takes A, B and ") + (batched ? "C" : "C?") +
                           " and 1 output, got " + std::to_string(n_in) + " inputs and " +
                           std::to_string(n.outputs().size()) + " outputs");
      FusedActivation act(n);
      auto dnn = alpha == 1.0 && !ta ? make_onednn_matmul(s, tb) : nullptr;
      bool exact = s.choices.exact;
      return [alpha, beta, ta, tb, batched, act, dnn, exact, &n](const Tensors& in) -> Tensors {
        at::Tensor y;
        if (batched) {
          const at::Tensor &a = in.at(0), &b = in.at(1), &c = in.at(2);
          if (a.dim() < 1 || b.dim() != 2 || a.size(-1) != b.size(0))
            kernel_fail(n, "MatMul of " + std::to_string(a.dim()) + "-D A (last dim " +
                               (a.dim() ? std::to_string(a.size(-1)) : std::string("-")) +
                               ") with B of shape " + c10::str(b.sizes()) +
                               ": A's last dim must equal B's rows");
          y = over_rows(a, b.size(1), [&](const at::Tensor& rows) {
            at::Tensor r = dnn && bias_row(c, b.size(1)) ? dnn->run(rows, c) : at::Tensor();
            return r.defined() ? r : gemm(rows, b, c, 1.0, 1.0, exact);
          });
        } else {
          y = onednn_gemm(dnn.get(), beta, in);
          if (!y.defined()) y = run_gemm(n, alpha, beta, ta, tb, in, exact);
        }
        act(y);
        return {y};
      };
    });

}  // namespace

bool batched_matmul_available() {
#ifdef _OPENMP
  // LibTorch's BLAS must be OpenBLAS built with OpenMP (openblas_get_parallel() == 2), which
  // runs single-threaded inside an OpenMP parallel region; looked up at run time, as LibTorch
  // may be linked with another BLAS.
  static const bool yes = [] {
    auto* f = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
    return f && f() == 2;
  }();
  return yes;
#else
  return false;
#endif
}

namespace {

// A batch of small products (attention's Q K^T and P V: 12 heads of 128 x 64 x 128) over the
// threads, one matrix product each, where at::matmul would run them one after the other
// (ATen 1.13's bmm without MKL loops over the batch, and OpenBLAS's GEMM gains little from a
// second thread on such sizes). Each is the call bmm makes for its matrix (addmm on the same
// slices: at::matmul reshapes both operands as here, expand to the same sizes keeping their
// strides), so the same sums; with the OpenMP build of OpenBLAS (Debian's libopenblas0-openmp,
// which scripts/setup.sh installs) each runs single-threaded inside the parallel region, so
// the result is LibTorch's one-thread one. Undefined where it does not apply: one thread, a
// build without OpenMP (at::parallel_for would run the products one by one on a threaded
// BLAS), another BLAS, other dtypes or ranks, batch dims that broadcast, larger matrices, or
// sizes where bmm takes its own naive loops.
at::Tensor batched_over_threads(const at::Tensor& a, const at::Tensor& b) {
  if (!batched_matmul_available()) return {};
  const int64_t d = a.dim();
  if (d < 3 || b.dim() != d || a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat ||
      at::get_num_threads() < 2 || at::in_parallel_region() || at::hasMKL())
    return {};
  if (a.sizes().slice(0, d - 2) != b.sizes().slice(0, d - 2) || a.size(-1) != b.size(-2)) return {};
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  if (a.numel() == 0 || b.numel() == 0) return {};
  int64_t mk = 0, mkn = 0;
  if (__builtin_mul_overflow(m, k, &mk) || __builtin_mul_overflow(mk, n, &mkn)) return {};
  const int64_t batch = a.numel() / mk;
  // bmm's own loops below 400 multiply-adds; a product of more than 4M runs well threaded alone
  if (batch < 2 || mkn < 400 || mkn > (int64_t{1} << 22)) return {};
  at::Tensor a3 = a.reshape({batch, m, k}), b3 = b.reshape({batch, k, n});
  g_batched_runs.fetch_add(1, std::memory_order_relaxed);
  at::Tensor y = at::empty({batch, m, n}, a.options());
  const at::ThreadLocalState state;  // InferenceMode and the rest, for the worker threads
  at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    at::ThreadLocalStateGuard guard(state);
    for (int64_t i = begin; i < end; ++i) {
      at::Tensor r = y.select(0, i);
      at::mm_out(r, a3.select(0, i), b3.select(0, i));
    }
  });
  return y.view(last_dim_as(a, n));
}

// Whether A [..., K] is one row of K > 0 floats times a float matrix B [K, N] of the size
// that gemm() runs as tonnx's GEMV.
bool one_row_gemv(const at::Tensor& a, const at::Tensor& b) {
  return a.dim() >= 1 && b.dim() == 2 && a.size(-1) > 0 && a.size(-1) == b.size(0) &&
         a.numel() == a.size(-1) && b.numel() >= kGemvMinElements &&
         a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat;
}

// MatMul; with B an initializer matrix, A's rows (all leading axes) times B on oneDNN. One row
// (a batch-1 head, a decoder's step) times a large matrix: tonnx's GEMV, as Gemm's, where
// oneDNN's matmul declines and at::matmul would run OpenBLAS's GEMM at M = 1 (3-10x slower).
TONNX_KERNEL("MatMul", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  auto dnn = make_onednn_matmul(s, false);
  bool exact = s.choices.exact;
  return [dnn, exact](const Tensors& in) -> Tensors {
    const at::Tensor& a = in.at(0);
    if (dnn && a.dim() >= 2 && a.size(-1) == dnn->rows()) {
      at::Tensor y =
          over_rows(a, dnn->cols(), [&](const at::Tensor& rows) { return dnn->run(rows, {}); });
      if (y.defined()) return {y};
    }
    if (!exact && one_row_gemv(a, in.at(1)))
      return {over_rows(a, in.at(1).size(1), [&](const at::Tensor& row) {
        return gemm(row, in.at(1), at::Tensor(), 1.0, 0.0, false);
      })};
    at::Tensor y = batched_over_threads(a, in.at(1));
    return {y.defined() ? y : at::matmul(a, in.at(1))};
  };
});

}  // namespace

uint64_t batched_matmul_runs() { return g_batched_runs.load(); }
uint64_t gemv_runs() { return g_gemv_runs.load(); }

}  // namespace tonnx::backend
