// Inference BatchNormalization in one pass (batchnorm_one_pass.h). ATen 1.13's CPU kernel computes
// x * alpha + beta with AVX2 fused multiply-adds on this CPU (Debian's LibTorch dispatches to
// its AVX2 kernels); a Relu after it is one more pass over memory and an allocation. Here
// both run in one pass. Exactness is not assumed: at first use a probe compares this kernel
// with at::batch_norm and at::relu_ bit for bit, in both layouts, and on any difference
// every call returns undefined and the caller runs ATen.
#include "backend/kernels/batchnorm_one_pass.h"

#include "backend/cpu.h"
#include "backend/kernels/blocked_layout.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define TONNX_BN_AVX2 1
#endif

namespace tonnx::backend {

BatchNormTerms batchnorm_terms(const at::Tensor& scale, const at::Tensor& bias,
                               const at::Tensor& mean, const at::Tensor& var, double eps) {
  for (const at::Tensor* t : {&scale, &bias, &mean, &var})
    if (!t->defined() || t->scalar_type() != at::kFloat || t->dim() != 1 ||
        t->numel() != scale.numel())
      return {};
  at::Tensor sc = scale.contiguous(), bi = bias.contiguous(), mu = mean.contiguous(),
             va = var.contiguous();
  int64_t c = sc.numel();
  BatchNormTerms t{at::empty({c}, at::kFloat), at::empty({c}, at::kFloat)};
  const float *ps = sc.data_ptr<float>(), *pb = bi.data_ptr<float>(), *pm = mu.data_ptr<float>(),
              *pv = va.data_ptr<float>();
  float *pa = t.alpha.data_ptr<float>(), *pbeta = t.beta.data_ptr<float>();
  for (int64_t i = 0; i < c; ++i) {
    float invstd = 1 / std::sqrt(pv[i] + static_cast<float>(eps));
    pa[i] = invstd * ps[i];
    pbeta[i] = std::fma(-pm[i], pa[i], pb[i]);
  }
  return t;
}

#if TONNX_BN_AVX2
namespace {

// Relu as ATen's: max(0, v) returns v when v is NaN or a zero of either sign.
__attribute__((target("avx2,fma"))) inline float relu1(float v) { return v < 0.f ? 0.f : v; }

// One channel's plane: y = x * a + b.
__attribute__((target("avx2,fma"))) void affine_plane(const float* x, float* y, int64_t n, float a,
                                                      float b, bool relu) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), va, vb);
    if (relu) v = _mm256_max_ps(zero, v);
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; ++i) {
    float v = std::fma(x[i], a, b);
    y[i] = relu ? relu1(v) : v;
  }
}

// Channels-last rows of C channels: y[r, c] = x[r, c] * a[c] + b[c].
__attribute__((target("avx2,fma"))) void affine_rows(const float* x, float* y, int64_t rows,
                                                     int64_t c, const float* a, const float* b,
                                                     bool relu) {
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t r = 0; r < rows; ++r, x += c, y += c) {
    int64_t i = 0;
    for (; i + 8 <= c; i += 8) {
      __m256 v =
          _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
      if (relu) v = _mm256_max_ps(zero, v);
      _mm256_storeu_ps(y + i, v);
    }
    for (; i < c; ++i) {
      float v = std::fma(x[i], a[i], b[i]);
      y[i] = relu ? relu1(v) : v;
    }
  }
}

// Blocked rows of 16 channels, one block's terms held in registers across its rows; then,
// where z is given, + z (a residual of the same layout), before the Relu.
template <bool kZ>
__attribute__((target("avx2,fma"))) void affine_rows16(const float* x, float* y, int64_t rows,
                                                       const float* a, const float* b, bool relu,
                                                       const float* z) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 a0 = _mm256_loadu_ps(a), a1 = _mm256_loadu_ps(a + 8), b0 = _mm256_loadu_ps(b),
               b1 = _mm256_loadu_ps(b + 8);
  for (int64_t r = 0; r < rows; ++r, x += 16, y += 16) {
    __m256 v0 = _mm256_fmadd_ps(_mm256_loadu_ps(x), a0, b0);
    __m256 v1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8), a1, b1);
    if (kZ) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(z));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(z + 8));
      z += 16;
    }
    if (relu) {
      v0 = _mm256_max_ps(zero, v0);
      v1 = _mm256_max_ps(zero, v1);
    }
    _mm256_storeu_ps(y, v0);
    _mm256_storeu_ps(y + 8, v1);
  }
}

// Blocked rows of 8 channels (oneDNN's layout on CPUs without AVX-512).
template <bool kZ>
__attribute__((target("avx2,fma"))) void affine_rows8(const float* x, float* y, int64_t rows,
                                                      const float* a, const float* b, bool relu,
                                                      const float* z) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 a0 = _mm256_loadu_ps(a), b0 = _mm256_loadu_ps(b);
  for (int64_t r = 0; r < rows; ++r, x += 8, y += 8) {
    __m256 v0 = _mm256_fmadd_ps(_mm256_loadu_ps(x), a0, b0);
    if (kZ) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(z));
      z += 8;
    }
    if (relu) v0 = _mm256_max_ps(zero, v0);
    _mm256_storeu_ps(y, v0);
  }
}

// Rows of `width` (8 or 16) channels, + z where z is not null.
void affine_rows(const float* x, float* y, int64_t rows, const float* a, const float* b, bool relu,
                 int64_t width, const float* z = nullptr) {
  if (width == 16)
    z ? affine_rows16<true>(x, y, rows, a, b, relu, z)
      : affine_rows16<false>(x, y, rows, a, b, relu, z);
  else
    z ? affine_rows8<true>(x, y, rows, a, b, relu, z)
      : affine_rows8<false>(x, y, rows, a, b, relu, z);
}

at::Tensor run(const at::Tensor& x, const BatchNormTerms& t, bool relu, at::Tensor out) {
  if (!t.defined() || x.scalar_type() != at::kFloat || x.dim() < 2 || x.size(1) != t.alpha.numel())
    return {};
  bool nchw = x.is_contiguous();
  bool nhwc = !nchw && x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast);
  if (!nchw && !nhwc) return {};
  if (!out.defined())
    out = at::empty_like(x, nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  else if (out.sizes() != x.sizes() || out.strides() != x.strides() ||
           out.scalar_type() != at::kFloat)
    return {};
  const float* px = x.data_ptr<float>();
  float* py = out.data_ptr<float>();
  const float *pa = t.alpha.data_ptr<float>(), *pb = t.beta.data_ptr<float>();
  const int64_t c = x.size(1);
  // Floats per task. Bound by memory: a second thread gained nothing measurable on
  // DenseNet-121's BatchNormalizations, whose inputs the convolution before left in both cores'
  // caches.
  constexpr int64_t kGrain = 256 << 10;
  if (nchw) {
    const int64_t plane = c == 0 ? 0 : x.numel() / (x.size(0) * c);
    const int64_t planes = x.size(0) * c;
    at::parallel_for(0, planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane, 1)),
                     [&](int64_t b, int64_t e) {
                       for (int64_t p = b; p < e; ++p)
                         affine_plane(px + p * plane, py + p * plane, plane, pa[p % c], pb[p % c],
                                      relu);
                     });
  } else {
    const int64_t rows = c == 0 ? 0 : x.numel() / c;
    at::parallel_for(
        0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1)),
        [&](int64_t b, int64_t e) { affine_rows(px + b * c, py + b * c, e - b, c, pa, pb, relu); });
  }
  return out;
}

// The blocked layout (kernels/blocked_layout.h): rows of B channels, block k's channels B k...
at::Tensor run_blocked(const at::Tensor& x, const BatchNormTerms& t, bool relu, at::Tensor out,
                       const at::Tensor& z) {
  if (!t.defined() || x.scalar_type() != at::kFloat || x.dim() != 5 || !blocked_width(x.size(4)) ||
      !x.is_contiguous() || x.size(1) * x.size(4) != t.alpha.numel())
    return {};
  if (z.defined() &&
      (z.sizes() != x.sizes() || !z.is_contiguous() || z.scalar_type() != at::kFloat))
    return {};
  const int64_t width = x.size(4);
  if (!out.defined())
    out = at::empty_like(x);
  else if (out.sizes() != x.sizes() || !out.is_contiguous() || out.scalar_type() != at::kFloat)
    return {};
  const float* px = x.data_ptr<float>();
  const float* pz = z.defined() ? z.data_ptr<float>() : nullptr;
  float* py = out.data_ptr<float>();
  const float *pa = t.alpha.data_ptr<float>(), *pb = t.beta.data_ptr<float>();
  const int64_t blocks = x.size(1), rows = x.size(2) * x.size(3), plane = rows * width;
  constexpr int64_t kGrain = 256 << 10;
  at::parallel_for(
      0, x.size(0) * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane, 1)),
      [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p)
          affine_rows(px + p * plane, py + p * plane, rows, pa + (p % blocks) * width,
                      pb + (p % blocks) * width, relu, width, pz ? pz + p * plane : nullptr);
      });
  return out;
}

// batchnorm_concat: each output channel plane (NCHW) or block (blocked) of each image, from
// the input that holds it.
at::Tensor run_concat(const std::vector<at::Tensor>& xs, const BatchNormTerms& t, bool relu,
                      bool blocked) {
  if (!t.defined() || xs.empty()) return {};
  const at::Tensor& x0 = xs[0];
  const int64_t rank = blocked ? 5 : x0.dim();
  if (rank < 2) return {};
  int64_t groups = 0;  // channels (NCHW) or blocks (blocked) in all
  // channels per group: 1, or the block width (kernels/blocked_layout.h), the same for every input
  const int64_t width = blocked && x0.defined() && x0.dim() == 5 ? x0.size(4) : 1;
  if (blocked && !blocked_width(width)) return {};
  for (const at::Tensor& x : xs) {
    if (!x.defined() || x.scalar_type() != at::kFloat || x.dim() != rank || !x.is_contiguous())
      return {};
    if (blocked && x.size(4) != width) return {};
    for (int64_t d = 0; d < rank; ++d)
      if (d != 1 && x.size(d) != x0.size(d)) return {};
    groups += x.size(1);
  }
  if (groups * width != t.alpha.numel()) return {};
  std::vector<int64_t> sizes = x0.sizes().vec();
  sizes[1] = groups;
  at::Tensor out = at::empty(sizes, x0.options());
  if (out.numel() == 0) return out;
  const int64_t plane = out.numel() / (sizes[0] * groups);  // floats per group of one image
  struct Group {
    const float* src;      // the input holding it
    int64_t count, index;  // that input's groups per image, and this one's among them
  };
  std::vector<Group> group;
  for (const at::Tensor& x : xs)
    for (int64_t k = 0; k < x.size(1); ++k) group.push_back({x.data_ptr<float>(), x.size(1), k});
  float* py = out.data_ptr<float>();
  const float *pa = t.alpha.data_ptr<float>(), *pb = t.beta.data_ptr<float>();
  // Floats per task: smaller than run()'s, so that DenseNet's concatenations (0.2-3 MB)
  // split over two threads.
  constexpr int64_t kGrain = 32 << 10;
  at::parallel_for(0, sizes[0] * groups, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t p = b; p < e; ++p) {
                       const int64_t n = p / groups, k = p % groups;
                       const Group& gr = group[k];
                       const float* x = gr.src + (n * gr.count + gr.index) * plane;
                       if (blocked)
                         affine_rows(x, py + p * plane, plane / width, pa + k * width,
                                     pb + k * width, relu, width);
                       else
                         affine_plane(x, py + p * plane, plane, pa[k], pb[k], relu);
                     }
                   });
  return out;
}

bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.sizes() == cb.sizes() &&
         std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.numel() * sizeof(float)) == 0;
}

// This kernel against ATen on awkward sizes (planes and channel counts not multiples of 8),
// values over many magnitudes, zeros of both signs, in both layouts; and in the blocked
// layouts, with and without a residual.
bool matches_aten() {
  if (!cpu::has(cpu::Isa::avx2)) return false;
  at::Generator gen = at::detail::createCPUGenerator(1234);
  auto randn = [&](at::IntArrayRef sz) { return at::randn(sz, gen, at::kFloat); };
  at::Tensor x = randn({2, 19, 5, 7}) * at::exp(randn({2, 19, 5, 7}) * 3);
  x.view(-1).narrow(0, 0, 4).zero_();
  x.view(-1).narrow(0, 4, 4).fill_(-0.f);
  at::Tensor scale = randn({19}), bias = randn({19}), mean = randn({19}),
             var = at::rand({19}, gen, at::kFloat) + 0.01;
  BatchNormTerms t = batchnorm_terms(scale, bias, mean, var, 1e-5);
  for (bool relu : {false, true})
    for (bool cl : {false, true}) {
      at::Tensor xi = cl ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
      at::Tensor ref = at::batch_norm(xi, scale, bias, mean, var, false, 0.0, 1e-5, false);
      if (relu) ref.relu_();
      at::Tensor got = run(xi, t, relu, {});
      if (!got.defined() || !same_bits(got, ref)) return false;
    }
  // Blocked, with and without a residual z added before the Relu (FusedConv's stages).
  at::Tensor xb = randn({2, 32, 5, 7}) * 4, z = randn({2, 32, 5, 7});
  at::Tensor sb = randn({32}), bb = randn({32}), mb = randn({32}),
             vb = at::rand({32}, gen, at::kFloat) + 0.01;
  BatchNormTerms tb = batchnorm_terms(sb, bb, mb, vb, 1e-5);
  for (int64_t width : kBlockWidths)
    for (bool relu : {false, true})
      for (bool with_z : {false, true}) {
        at::Tensor ref = at::batch_norm(xb, sb, bb, mb, vb, false, 0.0, 1e-5, false);
        if (with_z) ref.add_(z);
        if (relu) ref.relu_();
        at::Tensor got = run_blocked(plain_to_blocked(xb, width), tb, relu, {},
                                     with_z ? plain_to_blocked(z, width) : at::Tensor());
        if (!got.defined() || !same_bits(blocked_to_plain(got), ref)) return false;
      }
  return true;
}

}  // namespace
#endif

#if TONNX_BN_AVX2
namespace {
// Whether the probe at first use found this code equal to ATen's on this CPU.
bool probe_passed() {
  static const bool ok = matches_aten();
  return ok;
}
}  // namespace

at::Tensor batchnorm_inference(const at::Tensor& x, const BatchNormTerms& t, bool relu,
                               at::Tensor out) {
  if (!probe_passed() || x.numel() == 0) return {};
  return run(x, t, relu, std::move(out));
}

at::Tensor batchnorm_blocked(const at::Tensor& x, const BatchNormTerms& t, bool relu,
                             at::Tensor out, const at::Tensor& z) {
  if (!probe_passed() || x.numel() == 0) return {};
  return run_blocked(x, t, relu, std::move(out), z);
}
at::Tensor batchnorm_concat(const std::vector<at::Tensor>& xs, const BatchNormTerms& t, bool relu,
                            bool blocked) {
  if (!probe_passed()) return {};
  return run_concat(xs, t, relu, blocked);
}
bool batchnorm_kernel_runs() { return probe_passed(); }
#else
bool batchnorm_kernel_runs() { return false; }
at::Tensor batchnorm_concat(const std::vector<at::Tensor>&, const BatchNormTerms&, bool, bool) {
  return {};
}
at::Tensor batchnorm_inference(const at::Tensor&, const BatchNormTerms&, bool, at::Tensor) {
  return {};
}
at::Tensor batchnorm_blocked(const at::Tensor&, const BatchNormTerms&, bool, at::Tensor,
                             const at::Tensor&) {
  return {};
}
#endif

}  // namespace tonnx::backend
