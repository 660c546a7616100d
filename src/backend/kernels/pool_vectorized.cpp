// 2-D pooling as ATen computes it, vectorized (pool.h). Exactness is not assumed: at first use
// a probe compares both kernels with at::max_pool2d and at::avg_pool2d bit for bit (but for
// NaN payloads), over strides 1 to 3, pads, ceil_mode, both count_include_pad and NaN, inf and
// zeros of both signs; on any difference every call returns undefined and the caller runs its
// other path.
#include "backend/kernels/pool_vectorized.h"

#include "backend/cpu.h"

#include "backend/kernels/blocked_layout.h"

#include <ATen/Parallel.h>
#include <ATen/native/Pool.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define TONNX_POOL_AVX512 1
#endif

namespace tonnx::backend {
namespace {

std::atomic<uint64_t> g_runs{0}, g_blocked_runs{0};

// ATen's own output size (dilation 1), so that the kernel's shape cannot drift from ATen's.
int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t s, bool ceil_mode) {
  return at::native::pooling_output_shape_pad_lr<int64_t>(in, k, pad, pad, s, 1, ceil_mode);
}

#if TONNX_POOL_AVX512
// What a call's planes share: the geometry, and per output block of sixteen columns and per
// kernel column, which of the input values a load reads lie inside the input's width (the
// others are padding: the load returns the pad value there and touches no memory). Stride 2
// loads 32 values, two masks; other strides gather.
struct Geometry {
  int64_t h, w, oh, ow, blocks;
  Pool2d p;
  bool is_max, include_pad;
  std::vector<uint16_t> lo, hi;            // [block * kw + kx]; hi for stride 2 only
  std::vector<int32_t> cols_pad, cols_in;  // per output column: ATen's horizontal counts
};

__attribute__((target("avx512f"))) inline __m512 load16(const float* p, const Geometry& g, size_t m,
                                                        __m512 pad) {
  if (g.p.sw == 1) return _mm512_mask_loadu_ps(pad, g.lo[m], p);
  if (g.p.sw == 2) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(_mm512_mask_loadu_ps(pad, g.lo[m], p), even,
                                  _mm512_mask_loadu_ps(pad, g.hi[m], p + 16));
  }
  const __m512i step =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int32_t>(g.p.sw)));
  return _mm512_mask_i32gather_ps(pad, g.lo[m], step, p, 4);
}

// Sixteen outputs: the first input row of their windows (at the window's first column, which
// may lie in the padding), where they go, their block, which lanes exist, average's rows.
struct Block {
  const float* src;
  float* dst;
  int64_t block;
  __mmask16 lanes;
  int32_t rows;
};

// U blocks whose windows have `nrows` input rows, interleaved so that the U chains of
// dependent adds or compares overlap; each lane scans its window in ATen's order. Padding
// reads as -inf for max, which never wins ATen's `v > max || isnan(v)`, and as +0 for
// average, which leaves ATen's float sum unchanged bit for bit (that sum starts at +0 and so
// is never -0): so each lane computes what ATen's clipped loops compute.
template <int U, bool kMax>
__attribute__((target("avx512f"))) void pool_blocks(const Block* bl, int64_t nrows,
                                                    const Geometry& g) {
  const __m512 pad = _mm512_set1_ps(kMax ? -std::numeric_limits<float>::infinity() : 0.f);
  const int64_t kw = g.p.kw;
  __m512 acc[U];
  for (int j = 0; j < U; ++j) acc[j] = pad;
  for (int64_t r = 0; r < nrows; ++r)
    for (int64_t kx = 0; kx < kw; ++kx)
      for (int j = 0; j < U; ++j) {
        __m512 v =
            load16(bl[j].src + r * g.w + kx, g, static_cast<size_t>(bl[j].block * kw + kx), pad);
        if (kMax) {
          __mmask16 take =
              _mm512_cmp_ps_mask(v, acc[j], _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
          acc[j] = _mm512_mask_mov_ps(acc[j], take, v);
        } else {
          acc[j] = _mm512_add_ps(acc[j], v);
        }
      }
  for (int j = 0; j < U; ++j) {
    if (!kMax) {
      // ATen divides by its count; a window with no input is left 0.
      const int64_t ow = bl[j].block * 16;
      __m512i in = _mm512_maskz_loadu_epi32(bl[j].lanes, g.cols_in.data() + ow);
      __m512i cols =
          g.include_pad ? _mm512_maskz_loadu_epi32(bl[j].lanes, g.cols_pad.data() + ow) : in;
      __mmask16 empty = _mm512_cmple_epi32_mask(in, _mm512_setzero_si512());
      if (nrows <= 0) empty = 0xffff;
      __m512 divide = _mm512_mask_cvtepi32_ps(
          _mm512_setzero_ps(), 0xffff, _mm512_mullo_epi32(_mm512_set1_epi32(bl[j].rows), cols));
      acc[j] = _mm512_maskz_div_ps(static_cast<__mmask16>(~empty), acc[j], divide);
    }
    _mm512_mask_storeu_ps(bl[j].dst, bl[j].lanes, acc[j]);
  }
}

// One plane, sixteen output columns at a time, four blocks interleaved where their windows
// have as many rows (rows outside the input are skipped, as ATen's loops skip them).
__attribute__((target("avx512f"))) void pool_plane(const float* x, float* y, const Geometry& g) {
  const Pool2d& p = g.p;
  constexpr int kGroup = 4;
  Block group[kGroup];
  int n = 0;
  int64_t group_rows = 0;
  auto flush = [&] {
    if (n == kGroup) {
      if (g.is_max)
        pool_blocks<kGroup, true>(group, group_rows, g);
      else
        pool_blocks<kGroup, false>(group, group_rows, g);
    } else {
      for (int j = 0; j < n; ++j)
        if (g.is_max)
          pool_blocks<1, true>(group + j, group_rows, g);
        else
          pool_blocks<1, false>(group + j, group_rows, g);
    }
    n = 0;
  };
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    int64_t ih0 = oh * p.sh - p.ph, ih1 = std::min(ih0 + p.kh, g.h + p.ph);
    const int64_t rows_pad = ih1 - ih0;
    ih0 = std::max<int64_t>(ih0, 0);
    ih1 = std::min(ih1, g.h);
    const int64_t nrows = std::max<int64_t>(ih1 - ih0, 0);
    for (int64_t b = 0; b < g.blocks; ++b) {
      if (n > 0 && nrows != group_rows) flush();
      const int64_t ow = b * 16;
      // (The column offset may be negative, into the padding: those lanes are never read.)
      group[n++] = {x + std::min(ih0, g.h - 1) * g.w + (ow * p.sw - p.pw), y + oh * g.ow + ow, b,
                    ow + 16 <= g.ow ? __mmask16(0xffff) : __mmask16((1u << (g.ow - ow)) - 1),
                    static_cast<int32_t>(g.include_pad ? rows_pad : nrows)};
      group_rows = nrows;
      if (n == kGroup) flush();
    }
  }
  if (n > 0) flush();
}

// The geometry of an H x W plane under `p` (the masks and counts left empty), or nullopt
// where the kernels do not apply: a kernel or stride under 1, pads negative or over half the
// kernel (ATen's limit), or an output size under 1.
std::optional<Geometry> window_geometry(int64_t h, int64_t w, const Pool2d& p, bool is_max,
                                        bool include_pad) {
  if (p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1 || p.ph < 0 || p.pw < 0 || 2 * p.ph > p.kh ||
      2 * p.pw > p.kw)
    return std::nullopt;
  Geometry g{h,
             w,
             out_size(h, p.kh, p.ph, p.sh, p.ceil_mode),
             out_size(w, p.kw, p.pw, p.sw, p.ceil_mode),
             0,
             p,
             is_max,
             include_pad,
             {},
             {},
             {},
             {}};
  if (g.oh < 1 || g.ow < 1) return std::nullopt;
  return g;
}

at::Tensor run(const at::Tensor& x, const Pool2d& p, bool is_max, bool include_pad) {
  if (x.scalar_type() != at::kFloat || x.dim() != 4 || !x.is_contiguous() ||
      x.suggest_memory_format() != at::MemoryFormat::Contiguous || x.numel() == 0)
    return {};
  auto geometry = window_geometry(x.size(2), x.size(3), p, is_max, include_pad);
  if (!geometry) return {};
  Geometry& g = *geometry;
  // 32-bit lanes hold counts and gather offsets. (Wider planes and kernels are ATen's.)
  constexpr int64_t kMax = int64_t{1} << 24;
  if (g.w + 2 * p.pw > kMax || p.kh * p.kw > kMax || p.sw * 16 > kMax) return {};
  g.blocks = (g.ow + 15) / 16;
  // The masks grow with blocks x kernel width, not with the output: a wide row under a wide
  // kernel (a hostile model's) is left to ATen rather than allocated here.
  constexpr int64_t kMaxMasks = int64_t{1} << 20;
  if (g.blocks * p.kw > kMaxMasks) return {};
  auto in_width = [&](int64_t col) { return col >= 0 && col < g.w; };
  g.lo.assign(static_cast<size_t>(g.blocks * p.kw), 0);
  if (p.sw == 2) g.hi = g.lo;
  for (int64_t b = 0; b < g.blocks; ++b)
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t first = b * 16 * p.sw - p.pw + kx;  // the load's first input column
      uint16_t lo = 0, hi = 0;
      for (int64_t l = 0; l < 16; ++l) {
        if (p.sw == 2) {  // two contiguous loads of sixteen
          lo |= in_width(first + l) ? uint16_t(1u << l) : 0;
          hi |= in_width(first + 16 + l) ? uint16_t(1u << l) : 0;
        } else {
          lo |= in_width(first + l * p.sw) ? uint16_t(1u << l) : 0;
        }
      }
      g.lo[static_cast<size_t>(b * p.kw + kx)] = lo;
      if (p.sw == 2) g.hi[static_cast<size_t>(b * p.kw + kx)] = hi;
    }
  g.cols_pad.assign(static_cast<size_t>(g.blocks * 16), 0);
  g.cols_in = g.cols_pad;
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    int64_t iw0 = ow * p.sw - p.pw;
    g.cols_pad[ow] = static_cast<int32_t>(std::min(iw0 + p.kw, g.w + p.pw) - iw0);
    g.cols_in[ow] = static_cast<int32_t>(std::min(iw0 + p.kw, g.w) - std::max<int64_t>(iw0, 0));
  }
  at::Tensor y = at::empty({x.size(0), x.size(1), g.oh, g.ow}, x.options());
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  const int64_t planes = x.size(0) * x.size(1), in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  at::parallel_for(0, planes, std::max<int64_t>(1, (int64_t{32} << 10) / out_plane),
                   [&](int64_t b, int64_t e) {
                     for (int64_t c = b; c < e; ++c)
                       pool_plane(px + c * in_plane, py + c * out_plane, g);
                   });
  return y;
}

// The blocked layout (kernels/blocked_layout.h): X [N, C/W, H, W, W], W channels in one vector (16
// with AVX-512, 8 with AVX2: oneDNN's block width on each), so a window is kh x kw plain loads
// per W outputs, clipped to the input (no padding is read). U outputs of one row whose windows
// are whole (all `cols` columns inside the input) go together, so that their U chains of
// dependent adds or compares overlap. Each lane scans its window in ATen's order, from -inf
// (max) or +0 (average), as pool_blocks.
template <int U, bool kMax>
__attribute__((target("avx512f"))) void blocked_window16(const float* src, int64_t rows,
                                                         int64_t cols, int64_t row_step,
                                                         int64_t out_step, float* dst,
                                                         int64_t divide) {
  __m512 acc[U];
  for (int j = 0; j < U; ++j)
    acc[j] = _mm512_set1_ps(kMax ? -std::numeric_limits<float>::infinity() : 0.f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * row_step;
    for (int64_t c = 0; c < cols; ++c)
      for (int j = 0; j < U; ++j) {
        __m512 v = _mm512_loadu_ps(s + c * 16 + j * out_step);
        if (kMax) {
          __mmask16 take =
              _mm512_cmp_ps_mask(v, acc[j], _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
          acc[j] = _mm512_mask_mov_ps(acc[j], take, v);
        } else {
          acc[j] = _mm512_add_ps(acc[j], v);
        }
      }
  }
  for (int j = 0; j < U; ++j) {
    // ATen divides by its count; a window with no input is left 0.
    if (!kMax)
      acc[j] = rows > 0 && cols > 0
                   ? _mm512_div_ps(acc[j], _mm512_set1_ps(static_cast<float>(divide)))
                   : _mm512_setzero_ps();
    _mm512_storeu_ps(dst + j * 16, acc[j]);
  }
}

// The same, eight lanes (AVX2).
template <int U, bool kMax>
__attribute__((target("avx2"))) void blocked_window8(const float* src, int64_t rows, int64_t cols,
                                                     int64_t row_step, int64_t out_step, float* dst,
                                                     int64_t divide) {
  __m256 acc[U];
  for (int j = 0; j < U; ++j)
    acc[j] = _mm256_set1_ps(kMax ? -std::numeric_limits<float>::infinity() : 0.f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * row_step;
    for (int64_t c = 0; c < cols; ++c)
      for (int j = 0; j < U; ++j) {
        __m256 v = _mm256_loadu_ps(s + c * 8 + j * out_step);
        if (kMax) {
          __m256 take =
              _mm256_or_ps(_mm256_cmp_ps(v, acc[j], _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
          acc[j] = _mm256_blendv_ps(acc[j], v, take);
        } else {
          acc[j] = _mm256_add_ps(acc[j], v);
        }
      }
  }
  for (int j = 0; j < U; ++j) {
    if (!kMax)
      acc[j] = rows > 0 && cols > 0
                   ? _mm256_div_ps(acc[j], _mm256_set1_ps(static_cast<float>(divide)))
                   : _mm256_setzero_ps();
    _mm256_storeu_ps(dst + j * 8, acc[j]);
  }
}

template <int W, int U, bool kMax>
void blocked_window(const float* src, int64_t rows, int64_t cols, int64_t row_step,
                    int64_t out_step, float* dst, int64_t divide) {
  if constexpr (W == 16)
    blocked_window16<U, kMax>(src, rows, cols, row_step, out_step, dst, divide);
  else
    blocked_window8<U, kMax>(src, rows, cols, row_step, out_step, dst, divide);
}

// Output rows [begin, end) of all planes (plane-major), each row's windows clipped as ATen
// clips them; the divisor with or without the padding as pool_blocks takes it.
template <int W, bool kMax>
void blocked_rows(const float* x, float* y, const Geometry& g, int64_t begin, int64_t end) {
  const Pool2d& p = g.p;
  const int64_t row_step = g.w * W;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t plane = r / g.oh, oh = r % g.oh;
    int64_t ih0 = oh * p.sh - p.ph, ih1 = std::min(ih0 + p.kh, g.h + p.ph);
    const int64_t rows_pad = ih1 - ih0;
    ih0 = std::max<int64_t>(ih0, 0);
    ih1 = std::min(ih1, g.h);
    const int64_t rows = std::max<int64_t>(ih1 - ih0, 0);
    const float* xr = x + (plane * g.h + std::min(ih0, g.h - 1)) * row_step;
    float* yr = y + r * g.ow * W;
    const int64_t rows_div = g.include_pad ? rows_pad : rows;
    for (int64_t ow = 0; ow < g.ow;) {
      const int64_t iw0 = ow * p.sw - p.pw;
      constexpr int kGroup = 4;
      if (iw0 >= 0 && ow + kGroup <= g.ow && (ow + kGroup - 1) * p.sw - p.pw + p.kw <= g.w) {
        blocked_window<W, kGroup, kMax>(xr + iw0 * W, rows, p.kw, row_step, p.sw * W, yr + ow * W,
                                        rows_div * p.kw);
        ow += kGroup;
        continue;
      }
      const int64_t iw1 = std::min(iw0 + p.kw, g.w + p.pw), cols_pad = iw1 - iw0;
      const int64_t lo = std::max<int64_t>(iw0, 0),
                    cols = std::max<int64_t>(std::min(iw1, g.w) - lo, 0);
      blocked_window<W, 1, kMax>(xr + std::min(lo, g.w - 1) * W, rows, cols, row_step, 0,
                                 yr + ow * W, rows_div * (g.include_pad ? cols_pad : cols));
      ++ow;
    }
  }
}

template <int W>
at::Tensor run_blocked_width(const at::Tensor& x, const Pool2d& p, bool is_max, bool include_pad) {
  auto geometry = window_geometry(x.size(2), x.size(3), p, is_max, include_pad);
  if (!geometry) return {};
  const Geometry& g = *geometry;
  at::Tensor y = at::empty({x.size(0), x.size(1), g.oh, g.ow, W}, x.options());
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  const int64_t work = std::max<int64_t>(1, g.ow * W * std::min<int64_t>(p.kh * p.kw, 64));
  at::parallel_for(0, x.size(0) * x.size(1) * g.oh,
                   std::max<int64_t>(1, (int64_t{256} << 10) / work), [&](int64_t b, int64_t e) {
                     if (is_max)
                       blocked_rows<W, true>(px, py, g, b, e);
                     else
                       blocked_rows<W, false>(px, py, g, b, e);
                   });
  return y;
}

at::Tensor run_blocked(const at::Tensor& x, const Pool2d& p, bool is_max, bool include_pad) {
  if (x.scalar_type() != at::kFloat || x.dim() != 5 || !blocked_width(x.size(4)) ||
      !x.is_contiguous() || x.numel() == 0)
    return {};
  return x.size(4) == 16 ? run_blocked_width<16>(x, p, is_max, include_pad)
                         : run_blocked_width<8>(x, p, is_max, include_pad);
}

// Bit for bit, but any NaN equals any NaN: which of two NaNs a sum keeps depends on the order
// a compiler gives an add's operands (clang swaps them where GCC does not).
bool same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || a.sizes() != b.sizes()) return false;
  at::Tensor bc = b.contiguous();
  const uint32_t *pa = static_cast<const uint32_t*>(a.data_ptr()),
                 *pb = static_cast<const uint32_t*>(bc.data_ptr());
  auto is_nan = [](uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; };
  for (int64_t i = 0; i < a.numel(); ++i)
    if (pa[i] != pb[i] && !(is_nan(pa[i]) && is_nan(pb[i]))) return false;
  return true;
}

// A kernel against ATen: widths that give the vector and the edge paths, every stride the
// vector path takes and one it does not, pads, ceil_mode, both counts; magnitudes over many
// decades, runs of equal values, zeros of both signs, NaN, inf and -inf. `width` 0: the NCHW
// kernel; 8 or 16: the blocked kernel of that width, on the same values in that layout
// (channels 16 and 32).
bool probe_matches_aten(int64_t width) {
  if (!cpu::has(width == 8 ? cpu::Isa::avx2 : cpu::Isa::avx512)) return false;
  const bool blocked = width != 0;
  at::Generator gen = at::detail::createCPUGenerator(blocked ? 4322 : 4321);
  const std::vector<std::vector<int64_t>> all =
      blocked ? std::vector<std::vector<int64_t>>{{2, 32, 9, 37}, {1, 16, 20, 7}}
              : std::vector<std::vector<int64_t>>{{2, 3, 9, 37}, {1, 2, 40, 71}};
  for (const auto& sizes : all) {
    at::Tensor x = at::randn(sizes, gen, at::kFloat) * at::exp(at::randn(sizes, gen) * 3);
    at::Tensor flat = x.view(-1);
    flat.narrow(0, 0, 40).fill_(-0.f);
    flat.narrow(0, 20, 20).zero_();
    flat.narrow(0, 100, 30).fill_(1.5f);
    flat[200] = std::nanf("");
    flat[203] = -std::numeric_limits<float>::infinity();
    flat[260] = std::numeric_limits<float>::infinity();
    flat[300] = -std::nanf("");
    const at::Tensor xb = blocked ? plain_to_blocked(x, width) : at::Tensor();
    auto got = [&](const Pool2d& p, bool is_max, bool include_pad) {
      if (!blocked) return run(x, p, is_max, include_pad);
      at::Tensor y = run_blocked(xb, p, is_max, include_pad);
      return y.defined() ? blocked_to_plain(y) : y;
    };
    for (int64_t k : {2, 3})
      for (int64_t s : {1, 2, 3})
        for (int64_t pad : {int64_t{0}, k / 2})
          for (bool ceil_mode : {false, true}) {
            Pool2d p{k, k, s, s, pad, pad, ceil_mode};
            at::Tensor want = at::max_pool2d(x, {k, k}, {s, s}, {pad, pad}, {1, 1}, ceil_mode);
            if (!same_bits(got(p, true, false), want)) return false;
            for (bool include_pad : {false, true}) {
              want = at::avg_pool2d(x, {k, k}, {s, s}, {pad, pad}, ceil_mode, include_pad);
              if (!same_bits(got(p, false, include_pad), want)) return false;
            }
          }
  }
  return true;
}
#endif

// Either kernel (`blocked`: the blocked one, of X's block width), behind its own probe, run at
// its first use.
at::Tensor pool(const at::Tensor& x, const Pool2d& p, bool is_max, bool include_pad, bool blocked) {
#if TONNX_POOL_AVX512
  if (blocked && x.dim() != 5) return {};
  if (!pool_kernel_runs(blocked ? x.size(4) : 0)) return {};
  at::Tensor y = blocked ? run_blocked(x, p, is_max, include_pad) : run(x, p, is_max, include_pad);
  if (y.defined()) (blocked ? g_blocked_runs : g_runs).fetch_add(1, std::memory_order_relaxed);
  return y;
#else
  (void)x, (void)p, (void)is_max, (void)include_pad, (void)blocked;
  return {};
#endif
}

}  // namespace

bool pool_kernel_runs(int64_t width) {
#if TONNX_POOL_AVX512
  if (width == 8) {
    static const bool ok = probe_matches_aten(8);
    return ok;
  }
  if (width == 16) {
    static const bool ok = probe_matches_aten(16);
    return ok;
  }
  if (width != 0) return false;
  static const bool ok = probe_matches_aten(0);
  return ok;
#else
  (void)width;
  return false;
#endif
}

at::Tensor max_pool2d_blocked_exact(const at::Tensor& xb, const Pool2d& p) {
  return pool(xb, p, true, false, true);
}

at::Tensor avg_pool2d_blocked_exact(const at::Tensor& xb, const Pool2d& p, bool count_include_pad) {
  return pool(xb, p, false, count_include_pad, true);
}

uint64_t blocked_pool_runs() { return g_blocked_runs.load(); }

at::Tensor max_pool2d_exact(const at::Tensor& x, const Pool2d& p) {
  return pool(x, p, true, false, false);
}

at::Tensor avg_pool2d_exact(const at::Tensor& x, const Pool2d& p, bool count_include_pad) {
  return pool(x, p, false, count_include_pad, false);
}

uint64_t exact_pool_runs() { return g_runs.load(); }

}  // namespace tonnx::backend
