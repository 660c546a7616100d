// Winograd F(2x2, 3x3) on nChw16c: see winograd.h. The algebra (Lavin and Gray, 2015): an
// output tile of 2x2 is A^T [(G g G^T) . (B^T d B)] A, for the 4x4 input tile d that covers
// it and the 3x3 kernel g; the 16 products of the middle, summed over input channels, are 16
// matrix products. The transforms' constants are 0, +-1 and 1/2 (in G only): the input and
// output transforms are additions, exact up to their own rounding.
#include "backend/kernels/conv/winograd.h"

#include "backend/cpu.h"

#include <ATen/Parallel.h>
#include <immintrin.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/kernels/onednn_util.h"

namespace tonnx::backend {
namespace {

using namespace dnn;  // NOLINT: the helpers of onednn_util.h
std::atomic<uint64_t> g_runs{0}, g_packs{0};

// Tiles per matrix product: more rows run oneDNN's matmul closer to its peak, fewer keep the
// transformed blocks in cache. Measured on Zen 5 from 128 to 512 (docs/backend.md): 512,
// with the tiles spread evenly over the blocks (a last block of a few tiles would cost a
// whole product).
constexpr int64_t kMaxTilesPerBlock = 512;
// Fewer tiles than this per thread are not worth a thread.
constexpr int64_t kMinTilesPerThread = 32;

// oneDNN fixes a primitive's thread count when it is made (its matmul splits the work by
// it); each thread here runs the matmul on its own tiles, so it is made for one thread. Inside
// an OpenMP parallel region oneDNN runs a primitive on the calling thread alone.
struct OneThreadScope {
#ifdef _OPENMP
  int prev = omp_get_max_threads();
  OneThreadScope() { omp_set_num_threads(1); }
  ~OneThreadScope() { omp_set_num_threads(prev); }
#endif
};

int64_t parts_for(int64_t tiles, int64_t threads) {
  return std::max<int64_t>(1, std::min(threads, tiles / kMinTilesPerThread));
}

struct Geometry {
  int64_t n, c, k, h, w, ph, pw, oh, ow, th, tw, tiles;
};

// B^T d B for the 4x4 tiles [t0, t0 + count) of image x (16 channels at a time), into
// v[16][rows][c] at rows 0..count-1.
__attribute__((target("avx512f"))) void input_tiles(const Geometry& g, const float* x, int64_t t0,
                                                    int64_t count, int64_t rows, float* v) {
  const int64_t cb_count = g.c / 16, per_image = g.th * g.tw;
  const size_t plane = static_cast<size_t>(rows) * g.c;  // between v's 16 matrices
  for (int64_t i = 0; i < count; ++i) {
    int64_t t = t0 + i, img = t / per_image, ty = t % per_image / g.tw, tx = t % g.tw;
    int64_t r0 = 2 * ty - g.ph, c0 = 2 * tx - g.pw;
    bool inside = r0 >= 0 && c0 >= 0 && r0 + 4 <= g.h && c0 + 4 <= g.w;
    for (int64_t cb = 0; cb < cb_count; ++cb) {
      const float* xb = x + ((img * cb_count + cb) * g.h * g.w) * 16;
      __m512 d[4][4];
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
          int64_t r = r0 + a, col = c0 + b;
          d[a][b] = inside || (r >= 0 && r < g.h && col >= 0 && col < g.w)
                        ? _mm512_loadu_ps(xb + (r * g.w + col) * 16)
                        : _mm512_setzero_ps();
        }
      __m512 e[4][4];  // B^T d
      for (int b = 0; b < 4; ++b) {
        e[0][b] = _mm512_sub_ps(d[0][b], d[2][b]);
        e[1][b] = _mm512_add_ps(d[1][b], d[2][b]);
        e[2][b] = _mm512_sub_ps(d[2][b], d[1][b]);
        e[3][b] = _mm512_sub_ps(d[1][b], d[3][b]);
      }
      float* o = v + static_cast<size_t>(i) * g.c + cb * 16;
      for (int a = 0; a < 4; ++a) {  // (B^T d) B
        _mm512_storeu_ps(o + (a * 4 + 0) * plane, _mm512_sub_ps(e[a][0], e[a][2]));
        _mm512_storeu_ps(o + (a * 4 + 1) * plane, _mm512_add_ps(e[a][1], e[a][2]));
        _mm512_storeu_ps(o + (a * 4 + 2) * plane, _mm512_sub_ps(e[a][2], e[a][1]));
        _mm512_storeu_ps(o + (a * 4 + 3) * plane, _mm512_sub_ps(e[a][1], e[a][3]));
      }
    }
  }
}

// A^T m A + bias for tiles [t0, t0 + count), from m[16][rows][k], into y (the parts of each
// 2x2 tile inside the output).
__attribute__((target("avx512f"))) void output_tiles(const Geometry& g, const float* m,
                                                     const float* bias, int64_t t0, int64_t count,
                                                     int64_t rows, float* y) {
  const int64_t kb_count = g.k / 16, per_image = g.th * g.tw;
  const size_t plane = static_cast<size_t>(rows) * g.k;
  for (int64_t i = 0; i < count; ++i) {
    int64_t t = t0 + i, img = t / per_image, ty = t % per_image / g.tw, tx = t % g.tw;
    bool right = 2 * tx + 1 < g.ow;
    for (int64_t kb = 0; kb < kb_count; ++kb) {
      const float* q = m + static_cast<size_t>(i) * g.k + kb * 16;
      __m512 s[2][4];  // A^T m
      for (int b = 0; b < 4; ++b) {
        __m512 m0 = _mm512_loadu_ps(q + (0 * 4 + b) * plane);
        __m512 m1 = _mm512_loadu_ps(q + (1 * 4 + b) * plane);
        __m512 m2 = _mm512_loadu_ps(q + (2 * 4 + b) * plane);
        __m512 m3 = _mm512_loadu_ps(q + (3 * 4 + b) * plane);
        s[0][b] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
        s[1][b] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
      }
      __m512 bv = bias ? _mm512_loadu_ps(bias + kb * 16) : _mm512_setzero_ps();
      float* yb = y + ((img * kb_count + kb) * g.oh * g.ow) * 16;
      for (int a = 0; a < 2; ++a) {  // (A^T m) A
        int64_t r = 2 * ty + a;
        if (r >= g.oh) break;
        __m512 o0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s[a][0], s[a][1]), s[a][2]), bv);
        _mm512_storeu_ps(yb + (r * g.ow + 2 * tx) * 16, o0);
        if (right) {
          __m512 o1 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s[a][1], s[a][2]), s[a][3]), bv);
          _mm512_storeu_ps(yb + (r * g.ow + 2 * tx + 1) * 16, o1);
        }
      }
    }
  }
}

}  // namespace

struct Winograd2x3::Impl {
  Geometry g{};
  int64_t block = 0;  // tiles per matrix product
  dnnl::matmul prim;
  memory::desc v_desc, m_desc, scratch;
  memory weights;  // G g G^T as [16][C][K], in the format oneDNN's matmul reads
};

bool Winograd2x3::available() { return cpu::has(cpu::Isa::avx512); }

uint64_t Winograd2x3::runs() { return g_runs.load(); }

uint64_t Winograd2x3::weight_packs() { return g_packs.load(); }

Winograd2x3::~Winograd2x3() = default;

std::unique_ptr<const Winograd2x3> Winograd2x3::make(const at::Tensor& weight, int64_t n, int64_t h,
                                                     int64_t w, int64_t pad_h, int64_t pad_w,
                                                     const Winograd2x3* same_weight) {
  if (!available() || !weight.defined() || weight.scalar_type() != at::kFloat ||
      weight.dim() != 4 || weight.size(2) != 3 || weight.size(3) != 3)
    return nullptr;
  const int64_t k = weight.size(0), c = weight.size(1);
  if (k <= 0 || c <= 0 || k % 16 || c % 16 || n <= 0 || pad_h < 0 || pad_w < 0) return nullptr;
  Geometry g{n, c, k, h, w, pad_h, pad_w, h + 2 * pad_h - 2, w + 2 * pad_w - 2, 0, 0, 0};
  if (g.oh <= 0 || g.ow <= 0) return nullptr;
  g.th = (g.oh + 1) / 2;
  g.tw = (g.ow + 1) / 2;
  g.tiles = n * g.th * g.tw;
  std::unique_ptr<Winograd2x3> r(new Winograd2x3());
  auto& im = *(r->impl_ = std::make_unique<Impl>());
  im.g = g;
  // Each thread takes an even share of the tiles (at the thread count of this first run; a
  // later run at another count pads its last block) in blocks of equal size.
  int64_t parts = parts_for(g.tiles, at::get_num_threads());
  int64_t share = (g.tiles + parts - 1) / parts;
  int64_t blocks = (share + kMaxTilesPerBlock - 1) / kMaxTilesPerBlock;
  im.block = (share + blocks - 1) / blocks;
  try {
    const dnnl::engine& eng = cpu_engine();
    im.v_desc = memory::desc({16, im.block, c}, kF32, Tag::abc);
    im.m_desc = memory::desc({16, im.block, k}, kF32, Tag::abc);
    memory::desc u_user({16, c, k}, kF32, Tag::abc), u_any({16, c, k}, kF32, Tag::any);
    [[maybe_unused]] OneThreadScope one;  // (empty without OpenMP)
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(im.v_desc, u_any, im.m_desc),
                                    user_scratchpad(), eng);
    im.prim = dnnl::matmul(pd);
    im.scratch = pd.scratchpad_desc();
    if (same_weight && same_weight->impl_->g.c == c && same_weight->impl_->g.k == k &&
        same_weight->impl_->weights.get_desc() == pd.weights_desc()) {
      im.weights = same_weight->impl_->weights;
      return r;
    }
    // U = G g G^T per (output, input) channel pair, in double, rounded once.
    at::Tensor wd = weight.to(at::kDouble).contiguous();
    const double kG[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
    std::vector<float> u(static_cast<size_t>(16) * c * k);
    const double* gp = wd.data_ptr<double>();
    for (int64_t o = 0; o < k; ++o)
      for (int64_t i = 0; i < c; ++i) {
        const double* q = gp + (o * c + i) * 9;
        double t[4][3];
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 3; ++b)
            t[a][b] = kG[a][0] * q[b] + kG[a][1] * q[3 + b] + kG[a][2] * q[6 + b];
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b)
            u[(static_cast<size_t>(a * 4 + b) * c + i) * k + o] =
                static_cast<float>(t[a][0] * kG[b][0] + t[a][1] * kG[b][1] + t[a][2] * kG[b][2]);
      }
    memory user(u_user, eng, u.data());
    im.weights = memory(pd.weights_desc(), eng);
    dnnl::stream s(eng);
    Reorder(u_user, pd.weights_desc()).run(s, user, im.weights);
    g_packs.fetch_add(1, std::memory_order_relaxed);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return r;
}

void Winograd2x3::run(const float* x, const float* bias, float* y) const {
  const Impl& im = *impl_;
  const Geometry& g = im.g;
  g_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t parts = parts_for(g.tiles, at::get_num_threads());
  const int64_t v_size = 16 * im.block * g.c, m_size = 16 * im.block * g.k;
  // Each thread's transformed blocks and matmul scratchpad, from the run's arena (taken here:
  // the arena serves the calling thread).
  at::Tensor buf = at::empty({parts * (v_size + m_size)}, at::kFloat);
  std::vector<at::Tensor> scratch_bufs(parts);
  std::vector<memory> scratch(parts);
  if (im.scratch.get_size() > 0)
    for (int64_t p = 0; p < parts; ++p) scratch[p] = scratchpad_memory(im.scratch, scratch_bufs[p]);
  std::atomic<bool> failed{false};
  std::string error;
  at::parallel_for(0, parts, 1, [&](int64_t p_begin, int64_t p_end) {
    for (int64_t p = p_begin; p < p_end; ++p) {
      float* v = buf.data_ptr<float>() + p * (v_size + m_size);
      float* m = v + v_size;
      try {
        const dnnl::engine& eng = cpu_engine();
        dnnl::stream s(eng);
        memory vm(im.v_desc, eng, v), mm(im.m_desc, eng, m);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, vm}, {DNNL_ARG_WEIGHTS, im.weights}, {DNNL_ARG_DST, mm}};
        if (scratch[p]) args.emplace(DNNL_ARG_SCRATCHPAD, scratch[p]);
        const int64_t begin = g.tiles * p / parts, end = g.tiles * (p + 1) / parts;
        for (int64_t t0 = begin; t0 < end; t0 += im.block) {
          int64_t count = std::min(im.block, end - t0);
          input_tiles(g, x, t0, count, im.block, v);
          if (count < im.block)  // the rows past the last tile: zeros, not stale values
            for (int64_t j = 0; j < 16; ++j)
              std::fill(v + (j * im.block + count) * g.c, v + (j + 1) * im.block * g.c, 0.f);
          im.prim.execute(s, args);
          s.wait();
          output_tiles(g, m, bias, t0, count, im.block, y);
        }
      } catch (const dnnl::error& err) {
        if (!failed.exchange(true)) error = err.what();
      }
    }
  });
  if (failed) throw std::runtime_error("Winograd convolution failed: " + error);
}

}  // namespace tonnx::backend
