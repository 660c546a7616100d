// The convolution of ATen's oneDNN path with activations kept blocked: see onednn_conv.h.
#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <tuple>

#include "backend/kernels/blocked_layout.h"
#include "backend/kernels/conv/onednn_conv.h"
#include "backend/kernels/onednn_util.h"
#include "backend/kernels/conv/winograd.h"

namespace tonnx::backend {
namespace {
using namespace dnn;  // NOLINT: the helpers of onednn_util.h
std::atomic<uint64_t> g_runs{0}, g_winograd_runs{0};
}  // namespace

struct OneDnnBlockedConv::Impl {
  at::Tensor weight;  // O x I/group x kh x kw, contiguous float: a copy taken at prepare
  Params p;
  struct Entry {
    dnnl::convolution_forward prim;
    memory::desc src, dst, scratch;  // what the primitive reads and writes
    // X as given: NCHW, or blocked by 8 or 16 channels ([0]: nChw8c, [1]: nChw16c).
    memory::desc plain_src, blocked_src[2];
    memory::desc plain_dst, blocked_dst;  // Y as returned
    int64_t width = 0;      // of the blocked layout dst is in (8 or 16), else 0: Y is NCHW
    bool winograd = false;  // Winograd's algorithm: oneDNN's primitive, or `own`
    // tonnx's F(2x2, 3x3), where oneDNN offers only F(4x4): it reads src and writes dst
    // (both nChw16c) in place of the primitive.
    std::shared_ptr<const Winograd2x3> own;
    Reorder from_plain, from_blocked[2];  // into src, where it differs
    Reorder to_plain;                     // dst to NCHW, where it differs
    memory weights;
    std::vector<int64_t> out_sizes;
  };
  // X's (logical) sizes, bias, the direct algorithm even where Winograd applies
  ShapeCache<std::tuple<std::vector<int64_t>, bool, bool>, Entry> cache;
  // The last tonnx Winograd made (under the cache's lock): the next input shape shares its
  // transformed weight.
  mutable std::shared_ptr<const Winograd2x3> last_own;

  std::vector<int64_t> out_sizes(at::IntArrayRef x) const {
    std::vector<int64_t> out{x[0], weight.size(0)};
    for (int64_t i = 0; i < 2; ++i) {
      int64_t span = x[2 + i] + 2 * p.pads[i] - p.dilations[i] * (weight.size(2 + i) - 1) - 1;
      if (span < 0) return {};
      out.push_back(span / p.strides[i] + 1);
    }
    return out;
  }
  std::shared_ptr<const Entry> build(const std::vector<int64_t>& x, bool bias, bool direct) const;
  at::Tensor execute(const Entry& e, const at::Tensor& x, bool x_blocked, const at::Tensor& b,
                     bool want_blocked) const;

  bool winograd_shape(at::IntArrayRef x) const {
    if (!p.winograd || !winograd_weight(weight, p) || x.size() != 4) return false;
    std::vector<int64_t> out = out_sizes(x);
    return !out.empty() && weight.size(0) * weight.size(1) * out[2] * out[3] >= (int64_t{1} << 19);
  }
  // Where oneDNN offers only F(4x4), tonnx's F(2x2) (winograd.h) runs the shapes it was
  // measured faster on than the direct kernel (docs/backend.md, "Winograd"): blocks of 16
  // channels on both sides and 64 or more output channels (DenseNet's 128 -> 32 was slower;
  // VGG's and super_resolution's 64 -> 64 on 224 x 224 faster on Zen 4 at both thread counts,
  // on Zen 5 at one thread and 5-8% slower at two).
  bool own_winograd_shape(at::IntArrayRef x) const {
    return Winograd2x3::available() && x[1] % 16 == 0 && weight.size(0) % 16 == 0 &&
           weight.size(0) >= 64;
  }
};

std::shared_ptr<const OneDnnBlockedConv::Impl::Entry> OneDnnBlockedConv::Impl::build(
    const std::vector<int64_t>& x, bool bias, bool direct) const {
  const int64_t o = weight.size(0), g = p.group;
  std::vector<int64_t> out = out_sizes(x);
  if (out.empty()) return nullptr;  // ATen reports it
  memory::dims strides, dilates, pads;
  for (int64_t i = 0; i < 2; ++i) {
    strides.push_back(p.strides[i]);
    dilates.push_back(p.dilations[i] - 1);
    pads.push_back(p.pads[i]);
  }
  try {
    const dnnl::engine& eng = cpu_engine();
    auto e = std::make_shared<Entry>();
    e->out_sizes = out;
    memory::dims wdims =
        g == 1 ? memory::dims{o, weight.size(1), weight.size(2), weight.size(3)}
               : memory::dims{g, o / g, weight.size(1), weight.size(2), weight.size(3)};
    // As ATen's call (ideep's convolution_forward::compute): every format left to oneDNN,
    // forward propagation, the scratchpad passed per call.
    memory::desc src_any(dims_of(x), kF32, Tag::any), dst_any(dims_of(out), kF32, Tag::any),
        w_any(wdims, kF32, Tag::any);
    using C = dnnl::convolution_forward;
    auto desc = [&](dnnl::prop_kind prop, dnnl::algorithm alg) {
      return bias ? C::desc(prop, alg, src_any, w_any, memory::desc({o}, kF32, Tag::any), dst_any,
                            strides, dilates, pads, pads)
                  : C::desc(prop, alg, src_any, w_any, dst_any, strides, dilates, pads, pads);
    };
    C::primitive_desc pd;
    // oneDNN 2.6 implements Winograd for inference only, and on AVX-512 only (elsewhere it
    // declines, and the direct algorithm runs). Only its F(2x2, 3x3) kernel: as close to the
    // exact result as LibTorch's direct sums. Its F(4x4, 3x3) (`jit_wino_4x3`, larger
    // transform constants) put one of VGG-16-BN's outputs past the tests' tolerance of
    // LibTorch's (docs/backend.md, "Winograd"); where oneDNN offers only that, the direct
    // algorithm runs.
    if (!direct && winograd_shape(x)) {
      try {
        pd = C::primitive_desc(
            desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd),
            user_scratchpad(), eng);
        e->winograd = true;
        while (std::string(pd.impl_info_str()).find("wino_2x3") == std::string::npos)
          if (!pd.next_impl()) {
            e->winograd = false;
            break;
          }
      } catch (const dnnl::error&) {
        e->winograd = false;
      }
    }
    if (!e->winograd && !direct && winograd_shape(x) && own_winograd_shape(x))
      e->own = last_own =
          Winograd2x3::make(weight, x[0], x[2], x[3], p.pads[0], p.pads[1], last_own.get());
    if (e->own) {
      e->winograd = true;
      e->src = memory::desc(dims_of(x), kF32, Tag::nChw16c);
      e->dst = memory::desc(dims_of(out), kF32, Tag::nChw16c);
    } else {
      if (!e->winograd)
        pd = C::primitive_desc(desc(dnnl::prop_kind::forward, dnnl::algorithm::convolution_direct),
                               user_scratchpad(), eng);
      e->prim = C(pd);
      e->src = pd.src_desc();
      e->dst = pd.dst_desc();
      e->scratch = pd.scratchpad_desc();
    }
    e->plain_src = memory::desc(dims_of(x), kF32, Tag::nchw);
    e->plain_dst = memory::desc(dims_of(out), kF32, Tag::nchw);
    if (e->src != e->plain_src) e->from_plain = Reorder(e->plain_src, e->src);
    for (int i = 0; i < 2; ++i) {
      int64_t w = kBlockWidths[i];
      if (x[1] % w == 0) {
        e->blocked_src[i] = memory::desc(dims_of(x), kF32, w == 8 ? Tag::nChw8c : Tag::nChw16c);
        if (e->src != e->blocked_src[i]) e->from_blocked[i] = Reorder(e->blocked_src[i], e->src);
      }
      // The layout the primitive writes (AVX-512: nChw16c, AVX2: nChw8c) is the one handed on,
      // whatever X's channels (a network's first convolution reads 3 and writes blocks).
      memory::desc d(dims_of(out), kF32, w == 8 ? Tag::nChw8c : Tag::nChw16c);
      if (out[1] % w == 0 && e->dst == d) {
        e->blocked_dst = d;
        e->width = w;
      }
    }
    if (e->dst != e->plain_dst) e->to_plain = Reorder(e->dst, e->plain_dst);
    if (!e->own)
      e->weights = cache.weights(pd.weights_desc(), {wdims, kF32, g == 1 ? Tag::oihw : Tag::goihw},
                                 weight.data_ptr());
    return e;
  } catch (const dnnl::error&) {
    return nullptr;  // a configuration oneDNN does not implement: ATen runs it
  }
}

std::shared_ptr<const OneDnnBlockedConv> OneDnnBlockedConv::make(const at::Tensor& weight,
                                                                 Params p) {
  if (!weight.defined() || weight.scalar_type() != at::kFloat || weight.dim() != 4 ||
      weight.numel() == 0 || p.group < 1 || weight.size(0) % p.group != 0)
    return nullptr;
  if (!per_dim(p.strides, 2, 1) || !per_dim(p.dilations, 2, 1) || !per_dim(p.pads, 2, 0))
    return nullptr;
  for (size_t i = 0; i < 2; ++i)
    if (p.strides[i] < 1 || p.dilations[i] < 1 || p.pads[i] < 0) return nullptr;
  std::shared_ptr<OneDnnBlockedConv> r(new OneDnnBlockedConv());
  r->impl_ = std::make_unique<Impl>();
  r->impl_->weight = weight.contiguous().clone();
  r->impl_->p = std::move(p);
  return r;
}

OneDnnBlockedConv::~OneDnnBlockedConv() = default;

uint64_t OneDnnBlockedConv::runs() { return g_runs.load(); }

uint64_t OneDnnBlockedConv::winograd_runs() { return g_winograd_runs.load(); }

bool OneDnnBlockedConv::winograd(at::IntArrayRef x, bool bias) const {
  return algorithm(x, bias) != Algorithm::direct;
}

OneDnnBlockedConv::Algorithm OneDnnBlockedConv::algorithm(at::IntArrayRef x, bool bias) const {
  if (!impl_->winograd_shape(x)) return Algorithm::direct;
  std::vector<int64_t> xs = x.vec();
  auto e = impl_->cache.get({xs, bias, false}, [&] { return impl_->build(xs, bias, false); });
  if (!e || !e->winograd) return Algorithm::direct;
  return e->own ? Algorithm::own_winograd : Algorithm::onednn_winograd;
}

const char* OneDnnBlockedConv::name(Algorithm a) {
  switch (a) {
    case Algorithm::onednn_winograd:
      return "oneDNN's Winograd F(2x2, 3x3)";
    case Algorithm::own_winograd:
      return "tonnx's Winograd F(2x2, 3x3)";
    case Algorithm::direct:
      break;
  }
  return "direct";
}

// Measured on Zen 5 against the direct algorithm (docs/backend.md, "Winograd"): 2-2.5x faster
// on 3x3 layers with 64 or more input channels, slower on Inception v3's 32-channel stem
// layers, the first layers (3 channels) and the smallest products (128 -> 32 on 7x7).
bool OneDnnBlockedConv::winograd_weight(const at::Tensor& w, const Params& p) {
  auto ones = [](const std::vector<int64_t>& v) {  // (empty: 1 on each axis)
    return std::all_of(v.begin(), v.end(), [](int64_t e) { return e == 1; });
  };
  return p.group == 1 && w.dim() == 4 && w.size(2) == 3 && w.size(3) == 3 && w.size(1) >= 64 &&
         w.size(0) >= 16 && ones(p.strides) && ones(p.dilations);
}

namespace {

// Whether no element is NaN or infinite (the exponent bits all set), in one pass the
// compiler vectorizes.
bool all_finite(const at::Tensor& y) {
  const auto* u = static_cast<const uint32_t*>(y.data_ptr());
  uint32_t bad = 0;
  for (int64_t i = 0, n = y.numel(); i < n; ++i) bad |= (u[i] & 0x7f800000u) == 0x7f800000u;
  return bad == 0;
}

}  // namespace

at::Tensor OneDnnBlockedConv::run(const at::Tensor& x, bool x_blocked, const at::Tensor& b,
                                  bool want_blocked) const {
  const at::Tensor& w = impl_->weight;
  if (x.scalar_type() != at::kFloat || x.numel() == 0) return {};
  if (x_blocked ? (x.dim() != 5 || !blocked_width(x.size(4)) || !x.is_contiguous())
                : (x.dim() != 4 || !x.is_contiguous()))
    return {};
  std::vector<int64_t> xs =
      x_blocked ? std::vector<int64_t>{x.size(0), x.size(1) * x.size(4), x.size(2), x.size(3)}
                : x.sizes().vec();
  if (xs[1] != w.size(1) * impl_->p.group) return {};
  if (b.defined() && (b.scalar_type() != at::kFloat || b.dim() != 1 || b.size(0) != w.size(0)))
    return {};
  bool bias = b.defined();
  auto e = impl_->cache.get({xs, bias, false}, [&] { return impl_->build(xs, bias, false); });
  if (!e) return {};
  g_runs.fetch_add(1, std::memory_order_relaxed);
  at::Tensor y = impl_->execute(*e, x, x_blocked, b, want_blocked);
  if (!e->winograd) return y;
  g_winograd_runs.fetch_add(1, std::memory_order_relaxed);
  // A NaN or inf in X (or W, B) spreads over Winograd's whole tiles: an output the direct
  // convolution computes from finite inputs alone may read NaN. Non-finite outputs are rare;
  // the direct algorithm then gives them as ATen's oneDNN call does.
  if (all_finite(y)) return y;
  auto d = impl_->cache.get({xs, bias, true}, [&] { return impl_->build(xs, bias, true); });
  if (!d) return {};
  return impl_->execute(*d, x, x_blocked, b, want_blocked);
}

at::Tensor OneDnnBlockedConv::Impl::execute(const Entry& e, const at::Tensor& x, bool x_blocked,
                                            const at::Tensor& b, bool want_blocked) const {
  try {
    const dnnl::engine& eng = cpu_engine();
    dnnl::stream s(eng);
    at::Tensor src_buf, dst_buf, scratch_buf;
    int wi = x_blocked && x.size(4) == 16 ? 1 : 0;
    memory user_src(x_blocked ? e.blocked_src[wi] : e.plain_src, eng, x.data_ptr());
    const Reorder& in = x_blocked ? e.from_blocked[wi] : e.from_plain;
    memory src = user_src;
    if (user_src.get_desc() != e.src) {
      src = scratch_memory(e.src, src_buf);
      in.run(s, user_src, src);
    }
    const std::vector<int64_t>& out = e.out_sizes;
    const int64_t bw = e.width;
    bool blocked_out = want_blocked && bw > 0;
    at::Tensor y = blocked_out ? at::empty({out[0], out[1] / bw, out[2], out[3], bw}, x.options())
                               : at::empty(out, x.options());
    memory user_dst(blocked_out ? e.blocked_dst : e.plain_dst, eng, y.data_ptr());
    memory dst = blocked_out || e.dst == e.plain_dst ? user_dst : scratch_memory(e.dst, dst_buf);
    at::Tensor bc = b.defined() ? b.contiguous() : at::Tensor();
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, e.weights}, {DNNL_ARG_DST, dst}};
    if (bc.defined())
      args.emplace(DNNL_ARG_BIAS, memory({{weight.size(0)}, kF32, Tag::x}, eng, bc.data_ptr()));
    if (e.scratch.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(e.scratch, scratch_buf));
    if (e.own) {
      e.own->run(static_cast<const float*>(src.get_data_handle()),
                 bc.defined() ? bc.data_ptr<float>() : nullptr,
                 static_cast<float*>(dst.get_data_handle()));
    } else {
      e.prim.execute(s, args);
      s.wait();
    }
    if (dst_buf.defined()) e.to_plain.run(s, dst, user_dst);
    return y;
  } catch (const dnnl::error& err) {
    throw std::runtime_error(std::string("oneDNN convolution failed: ") + err.what());
  }
}

}  // namespace tonnx::backend
