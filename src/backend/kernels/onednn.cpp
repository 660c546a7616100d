// oneDNN outside convolution: see onednn.h.
#include "backend/kernels/onednn.h"

#include "backend/kernels/onednn_util.h"

#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>

namespace tonnx::backend {
namespace {

using namespace dnn;  // NOLINT: the helpers of onednn_util.h
using dnn::memory;
using dnn::Tag;
std::atomic<uint64_t> g_matmul_runs{0};
std::atomic<uint64_t> g_shape_cache_builds{0};

}  // namespace

uint64_t onednn_cache_builds() { return g_shape_cache_builds.load(); }
void dnn::count_shape_cache_build() { g_shape_cache_builds.fetch_add(1); }

// ---------------- MatMul ----------------

namespace {
memory::desc matrix(int64_t rows, int64_t cols, Tag tag) { return {{rows, cols}, kF32, tag}; }
bool reference_impl(const char* info) { return std::string(info).find("ref") != std::string::npos; }
}  // namespace

struct OneDnnMatmul::Impl {
  int64_t k = 0, n = 0;
  mutable at::Tensor source;  // B as given (the model's tensor: no copy), until packed
  memory::desc user, packed;  // its layout, and the one oneDNN's kernels read
  // B is packed on the first call that uses it: a model run only at one row (batch-1
  // classifiers) never needs the copy, nor the prepare time it takes (AlexNet: 0.8 s).
  mutable std::once_flag pack_once;
  mutable memory weights;
  mutable bool pack_failed = false;
  struct Entry {
    dnnl::matmul prim;
    memory::desc scratch;
  };
  ShapeCache<std::pair<int64_t, bool>, Entry> cache;  // A's rows, bias

  // The packed B, or a null memory where packing failed (then ATen runs every call).
  const memory* packed_weights() const {
    std::call_once(pack_once, [&] {
      try {
        memory user_b(user, cpu_engine(), source.data_ptr());
        if (packed == user) {
          weights = user_b;  // oneDNN reads B as stored (its plain GEMM, without AVX-512)
          return;
        }
        weights = memory(packed, cpu_engine());
        dnnl::stream s(cpu_engine());
        Reorder(user, packed).run(s, user_b, weights);
        source = at::Tensor();  // no longer read
      } catch (const dnnl::error&) {
        pack_failed = true;
      }
    });
    return pack_failed ? nullptr : &weights;
  }

  std::shared_ptr<const Entry> build(int64_t m, bool bias) const {
    try {
      memory::desc a = matrix(m, k, Tag::ab), y = matrix(m, n, Tag::ab);
      auto desc = bias ? dnnl::matmul::desc(a, packed, matrix(1, n, Tag::ab), y)
                       : dnnl::matmul::desc(a, packed, y);
      dnnl::matmul::primitive_desc pd(desc, user_scratchpad(), cpu_engine());
      if (reference_impl(pd.impl_info_str())) return nullptr;
      auto e = std::make_shared<Entry>();
      e->prim = dnnl::matmul(pd);
      e->scratch = pd.scratchpad_desc();
      return e;
    } catch (const dnnl::error&) {
      return nullptr;  // ATen runs it
    }
  }
};

std::shared_ptr<const OneDnnMatmul> OneDnnMatmul::make(const at::Tensor& b) {
  if (!b.defined() || b.scalar_type() != at::kFloat || b.dim() != 2 || b.numel() == 0)
    return nullptr;
  std::shared_ptr<OneDnnMatmul> r(new OneDnnMatmul());
  r->impl_ = std::make_unique<Impl>();
  Impl& im = *r->impl_;
  im.k = b.size(0);
  im.n = b.size(1);
  try {
    // The format B is packed into, asked for 128 rows of A (it is the same for any count).
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(matrix(128, im.k, Tag::ab), matrix(im.k, im.n, Tag::any),
                           matrix(128, im.n, Tag::ab)),
        user_scratchpad(), cpu_engine());
    if (reference_impl(pd.impl_info_str())) return nullptr;
    // B as stored: row-major, or column-major (Gemm's transB, a folded Transpose's view).
    im.source = b;
    Tag tag = Tag::ab;
    if (!b.is_contiguous()) {
      if (b.t().is_contiguous())
        tag = Tag::ba;
      else
        im.source = b.contiguous();
    }
    im.user = matrix(im.k, im.n, tag);
    im.packed = pd.weights_desc();
    // The packed format pads columns to blocks of 64 (and rows to 16): for a narrow B that is
    // up to 64x its size (a hostile 2^28 x 1 B would ask for 64 GB). Such B stay on ATen.
    const size_t plain = static_cast<size_t>(im.k) * static_cast<size_t>(im.n) * sizeof(float);
    const size_t packed = im.packed.get_size();
    if (packed > plain + plain / 4 && packed > plain + (size_t{1} << 20)) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return r;
}

OneDnnMatmul::~OneDnnMatmul() = default;
int64_t OneDnnMatmul::rows() const { return impl_->k; }
int64_t OneDnnMatmul::cols() const { return impl_->n; }
size_t OneDnnMatmul::packed_bytes() const { return impl_->packed.get_size(); }
uint64_t OneDnnMatmul::runs() { return g_matmul_runs.load(); }

at::Tensor OneDnnMatmul::run(const at::Tensor& a, const at::Tensor& c) const {
  const Impl& im = *impl_;
  // One row is a matrix-vector product, bound by reading B: oneDNN gains 10% at most there
  // (measured), and LibTorch's own results are worth more (a batch-1 classifier's logits).
  if (a.scalar_type() != at::kFloat || a.dim() != 2 || a.size(1) != im.k || a.size(0) < 2)
    return {};
  if (c.defined() && (c.scalar_type() != at::kFloat || c.numel() != im.n)) return {};
  const int64_t m = a.size(0);
  const memory* weights = im.packed_weights();
  if (!weights) return {};
  auto e = im.cache.get({m, c.defined()}, [&] { return im.build(m, c.defined()); });
  if (!e) return {};
  const dnnl::engine& eng = cpu_engine();
  at::Tensor ac = a.contiguous(), cc = c.defined() ? c.contiguous() : at::Tensor();
  at::Tensor y = at::empty({m, im.n}, a.options());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(matrix(m, im.k, Tag::ab), eng, ac.data_ptr())},
      {DNNL_ARG_WEIGHTS, *weights},
      {DNNL_ARG_DST, memory(matrix(m, im.n, Tag::ab), eng, y.data_ptr())}};
  if (cc.defined())
    args.emplace(DNNL_ARG_BIAS, memory(matrix(1, im.n, Tag::ab), eng, cc.data_ptr()));
  at::Tensor scratch_buf;
  if (e->scratch.get_size() > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(e->scratch, scratch_buf));
  dnnl::stream s(eng);
  e->prim.execute(s, args);
  s.wait();
  ++g_matmul_runs;
  return y;
}

bool onednn_nchw_pooling_is_jit() {
  static const bool jit = [] {
    try {
      memory::desc src({1, 16, 8, 8}, kF32, Tag::nchw), dst({1, 16, 4, 4}, kF32, Tag::nchw);
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::pooling_max, src, dst, {2, 2}, {2, 2},
                                       {0, 0}, {0, 0}, {0, 0});
      dnnl::pooling_v2_forward::primitive_desc pd(d, cpu_engine());
      return std::string(pd.impl_info_str()).rfind("jit", 0) == 0;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return jit;
}

}  // namespace tonnx::backend
