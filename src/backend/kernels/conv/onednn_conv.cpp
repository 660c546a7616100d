// oneDNN's deconvolution and direct convolution primitives: see onednn_conv.h.
#include "backend/kernels/conv/onednn_conv.h"

#include "backend/kernels/onednn_util.h"

#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace tonnx::backend {
namespace {

using namespace dnn;  // NOLINT: the helpers of onednn_util.h
using dnn::memory;
using dnn::Tag;
std::atomic<uint64_t> g_deconv_runs{0};
std::atomic<uint64_t> g_conv_runs{0};

Tag plain_tag(int64_t rank) { return rank == 3 ? Tag::ncw : rank == 4 ? Tag::nchw : Tag::ncdhw; }
// PyTorch's ConvTranspose weight is Ci x Co x k...; oneDNN names dims (o, i, k...).
Tag torch_deconv_weight_tag(int64_t rank) {
  return rank == 3 ? Tag::bac : rank == 4 ? Tag::bacd : Tag::bacde;  // i, o, k...
}

}  // namespace

struct OneDnnDeconv::Impl {
  at::Tensor weight;  // Ci x Co x k..., contiguous float: a copy taken at prepare
  Params p;
  struct Entry {
    dnnl::deconvolution_forward prim;
    memory::desc src, dst, user_src, user_dst, scratch;
    Reorder to_src, from_dst;  // only where src / dst differ from the user's layout
    memory weights;            // shared by the shapes whose primitives want one format
    std::vector<int64_t> out_sizes;
  };
  ShapeCache<std::pair<std::vector<int64_t>, bool>, Entry> cache;  // X's sizes, bias

  std::shared_ptr<const Entry> build(const at::Tensor& x, bool bias) const;
  at::Tensor execute(const Entry& e, const at::Tensor& x, const at::Tensor& b) const;
  std::shared_ptr<const Entry> entry(const at::Tensor& x, bool bias) const {
    return cache.get({x.sizes().vec(), bias}, [&] { return build(x, bias); });
  }
};

std::shared_ptr<const OneDnnDeconv::Impl::Entry> OneDnnDeconv::Impl::build(const at::Tensor& x,
                                                                           bool bias) const {
  const int64_t rank = weight.dim(), d = rank - 2, ci = weight.size(0), co = weight.size(1);
  std::vector<int64_t> out{x.size(0), co};
  memory::dims strides, dilates, pad_l, pad_r;
  for (int64_t i = 0; i < d; ++i) {
    int64_t k = weight.size(2 + i), s = p.strides[i], dil = p.dilations[i];
    int64_t o = (x.size(2 + i) - 1) * s - p.pads_begin[i] - p.pads_end[i] + dil * (k - 1) + 1 +
                p.output_padding[i];
    if (o <= 0) return nullptr;  // ATen reports it
    out.push_back(o);
    strides.push_back(s);
    dilates.push_back(dil - 1);
    pad_l.push_back(p.pads_begin[i]);
    pad_r.push_back(p.pads_end[i] - p.output_padding[i]);
  }
  try {
    const dnnl::engine& eng = cpu_engine();
    auto e = std::make_shared<Entry>();
    e->out_sizes = out;
    e->user_src = memory::desc(dims_of(x.sizes()), kF32, plain_tag(rank));
    e->user_dst = memory::desc(dims_of(out), kF32, plain_tag(rank));
    // Channels-last where both sides have 16 channels or more (below that, the GEMM-based
    // primitive on the plain layout is faster: DCGAN's last layer, 64 -> 3 channels, was 3x
    // slower in oneDNN's blocked layout). Channels-last, not the blocked layout oneDNN picks
    // by itself: the same jit kernel, 10-30% faster on DCGAN's layers (docs/backend.md).
    bool channels_last = ci >= 16 && co >= 16;
    Tag cl = rank == 3 ? Tag::nwc : rank == 4 ? Tag::nhwc : Tag::ndhwc;
    memory::desc src = channels_last ? memory::desc(dims_of(x.sizes()), kF32, cl) : e->user_src;
    memory::desc dst = channels_last ? memory::desc(dims_of(out), kF32, cl) : e->user_dst;
    memory::dims wdims{co, ci};
    for (int64_t i = 0; i < d; ++i) wdims.push_back(weight.size(2 + i));
    memory::desc w_any(wdims, kF32, Tag::any);
    dnnl::primitive_attr attr = user_scratchpad();
    using D = dnnl::deconvolution_forward;
    auto desc =
        bias ? D::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                       src, w_any, memory::desc({co}, kF32, Tag::x), dst, strides, dilates, pad_l,
                       pad_r)
             : D::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                       src, w_any, dst, strides, dilates, pad_l, pad_r);
    D::primitive_desc pd(desc, attr, eng);
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return nullptr;  // slow
    e->prim = D(pd);
    e->src = pd.src_desc();
    e->dst = pd.dst_desc();
    e->scratch = pd.scratchpad_desc();
    if (e->src != e->user_src) e->to_src = Reorder(e->user_src, e->src);
    if (e->dst != e->user_dst) e->from_dst = Reorder(e->dst, e->user_dst);
    e->weights = cache.weights(pd.weights_desc(), {wdims, kF32, torch_deconv_weight_tag(rank)},
                               weight.data_ptr());
    return e;
  } catch (const dnnl::error&) {
    return nullptr;  // a configuration oneDNN does not implement: ATen runs it
  }
}

std::shared_ptr<const OneDnnDeconv> OneDnnDeconv::make(const at::Tensor& weight, int64_t group,
                                                       Params p) {
  if (!weight.defined() || weight.scalar_type() != at::kFloat || weight.dim() < 3 ||
      weight.dim() > 5 || weight.numel() == 0 || group != 1)
    return nullptr;
  size_t d = static_cast<size_t>(weight.dim() - 2);
  if (!per_dim(p.strides, d, 1) || !per_dim(p.dilations, d, 1) || !per_dim(p.pads_begin, d, 0) ||
      !per_dim(p.pads_end, d, 0) || !per_dim(p.output_padding, d, 0))
    return nullptr;
  for (size_t i = 0; i < d; ++i)
    if (p.strides[i] < 1 || p.dilations[i] < 1 || p.pads_begin[i] < 0 || p.output_padding[i] < 0 ||
        p.pads_end[i] < p.output_padding[i] ||
        p.output_padding[i] >= std::max(p.strides[i], p.dilations[i]))
      return nullptr;
  std::shared_ptr<OneDnnDeconv> r(new OneDnnDeconv());
  r->impl_ = std::make_unique<Impl>();
  // A copy: every cached shape must see the weights the Rep was prepared with, even if the
  // caller's tensor (shared with an ir::Model's initializer) changes later.
  r->impl_->weight = weight.contiguous().clone();
  r->impl_->p = std::move(p);
  return r;
}

OneDnnDeconv::~OneDnnDeconv() = default;

at::Tensor OneDnnDeconv::run(const at::Tensor& x, const at::Tensor& b) const {
  const at::Tensor& w = impl_->weight;
  if (x.scalar_type() != at::kFloat || x.dim() != w.dim() || x.size(1) != w.size(0) ||
      x.numel() == 0)
    return {};
  if (b.defined() && (b.scalar_type() != at::kFloat || b.dim() != 1 || b.size(0) != w.size(1)))
    return {};
  auto e = impl_->entry(x, b.defined());
  if (!e) return {};
  g_deconv_runs.fetch_add(1, std::memory_order_relaxed);
  try {
    return impl_->execute(*e, x, b);
  } catch (const dnnl::error& err) {  // not a std::runtime_error: the plan would not name the node
    throw std::runtime_error(std::string("oneDNN deconvolution failed: ") + err.what());
  }
}

uint64_t OneDnnDeconv::runs() { return g_deconv_runs.load(); }

at::Tensor OneDnnDeconv::Impl::execute(const Entry& entry, const at::Tensor& x,
                                       const at::Tensor& b) const {
  const Entry* e = &entry;
  const dnnl::engine& eng = cpu_engine();
  at::Tensor xc = x.contiguous(), bc = b.defined() ? b.contiguous() : at::Tensor();
  at::Tensor y = at::empty(e->out_sizes, x.options());
  memory user_src(e->user_src, eng, xc.data_ptr()), user_dst(e->user_dst, eng, y.data_ptr());
  at::Tensor src_buf, dst_buf, scratch_buf;
  memory src = e->src == e->user_src ? user_src : scratch_memory(e->src, src_buf);
  memory dst = e->dst == e->user_dst ? user_dst : scratch_memory(e->dst, dst_buf);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, e->weights}, {DNNL_ARG_DST, dst}};
  if (bc.defined())
    args.emplace(DNNL_ARG_BIAS, memory({{weight.size(1)}, kF32, Tag::x}, eng, bc.data_ptr()));
  if (e->scratch.get_size() > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(e->scratch, scratch_buf));
  dnnl::stream s(eng);
  if (src_buf.defined()) e->to_src.run(s, user_src, src);
  e->prim.execute(s, args);
  if (dst_buf.defined()) e->from_dst.run(s, dst, user_dst);
  s.wait();
  return y;
}

// ---------------- Conv ----------------

struct OneDnnConv::Impl {
  at::Tensor weight;  // O x I/group x kh x kw, contiguous float: a copy taken at prepare
  Params p;
  Fused f;
  struct Entry {
    dnnl::convolution_forward prim;
    memory::desc src, dst, scratch;  // src and dst NHWC
    memory weights;
    std::vector<int64_t> out_sizes;
    Done done;
  };
  // X's sizes, bias, Z summed
  ShapeCache<std::tuple<std::vector<int64_t>, bool, bool>, Entry> cache;

  std::shared_ptr<const Entry> entry(const at::Tensor& x, bool bias, bool sum) const {
    return cache.get({x.sizes().vec(), bias, sum}, [&] { return build(x, bias, sum); });
  }
  std::shared_ptr<const Entry> build(const at::Tensor& x, bool bias, bool sum) const;
  // N x O x OH x OW, or empty where the kernel does not fit in the padded input.
  std::vector<int64_t> out_sizes(const at::Tensor& x) const {
    std::vector<int64_t> out{x.size(0), weight.size(0)};
    for (int64_t i = 0; i < 2; ++i) {
      int64_t span = x.size(2 + i) + p.pads_begin[i] + p.pads_end[i] -
                     p.dilations[i] * (weight.size(2 + i) - 1) - 1;
      if (span < 0) return {};
      out.push_back(span / p.strides[i] + 1);
    }
    return out;
  }
  at::Tensor execute(const Entry& e, const at::Tensor& x, const at::Tensor& b,
                     const at::Tensor& z) const;
};

std::shared_ptr<const OneDnnConv::Impl::Entry> OneDnnConv::Impl::build(const at::Tensor& x,
                                                                       bool bias, bool sum) const {
  const int64_t o = weight.size(0), g = p.group;
  std::vector<int64_t> out = out_sizes(x);
  if (out.empty()) return nullptr;  // ATen reports it
  memory::dims strides, dilates, pad_l, pad_r;
  for (int64_t i = 0; i < 2; ++i) {
    strides.push_back(p.strides[i]);
    dilates.push_back(p.dilations[i] - 1);
    pad_l.push_back(p.pads_begin[i]);
    pad_r.push_back(p.pads_end[i]);
  }
  try {
    const dnnl::engine& eng = cpu_engine();
    auto e = std::make_shared<Entry>();
    e->out_sizes = out;
    memory::desc src(dims_of(x.sizes()), kF32, Tag::nhwc), dst(dims_of(out), kF32, Tag::nhwc);
    memory::dims wdims =
        g == 1 ? memory::dims{o, weight.size(1), weight.size(2), weight.size(3)}
               : memory::dims{g, o / g, weight.size(1), weight.size(2), weight.size(3)};
    // Post-ops, in ONNX's order, up to the first stage oneDNN cannot compute as ATen does.
    dnnl::post_ops ops;
    bool chain = true;
    if (f.batchnorm) {
      chain = f.bn_alpha.defined();
      if (chain) {
        memory::desc per_channel({1, o, 1, 1}, kF32, Tag::nchw);
        ops.append_binary(dnnl::algorithm::binary_mul, per_channel);
        ops.append_binary(dnnl::algorithm::binary_add, per_channel);
        e->done.batchnorm = true;
      }
    }
    if (chain && f.add) {
      chain = sum;
      if (chain) {
        ops.append_sum(1.0f);
        e->done.add = true;
      }
    }
    // LeakyRelu only: oneDNN's Relu (slope 0) is a max that turns NaN into 0, where ATen's
    // propagates it; with a slope it computes x * alpha, NaN included, as ATen does.
    if (chain && f.activation == passes::FusedActivation::LeakyRelu && f.alpha != 0.0f) {
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, f.alpha, 0.0f);
      e->done.activation = true;
    }
    dnnl::primitive_attr attr = user_scratchpad();
    attr.set_post_ops(ops);
    using C = dnnl::convolution_forward;
    memory::desc w_any(wdims, kF32, Tag::any);
    auto desc =
        bias ? C::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                       w_any, memory::desc({o}, kF32, Tag::x), dst, strides, dilates, pad_l, pad_r)
             : C::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                       w_any, dst, strides, dilates, pad_l, pad_r);
    C::primitive_desc pd(desc, attr, eng);
    // oneDNN falls back to its reference kernels for what its fast ones reject (a post-op
    // chain, a layout): orders of magnitude slower. ATen is better then.
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return nullptr;
    e->prim = C(pd);
    e->src = src;
    e->dst = dst;
    e->scratch = pd.scratchpad_desc();
    e->weights = cache.weights(pd.weights_desc(), {wdims, kF32, g == 1 ? Tag::oihw : Tag::goihw},
                               weight.data_ptr());
    return e;
  } catch (const dnnl::error&) {
    return nullptr;  // a configuration oneDNN does not implement: ATen runs it
  }
}

std::shared_ptr<const OneDnnConv> OneDnnConv::make(const at::Tensor& weight, Params p, Fused f) {
  if (!weight.defined() || weight.scalar_type() != at::kFloat || weight.dim() != 4 ||
      weight.numel() == 0 || p.group < 1 || weight.size(0) % p.group != 0)
    return nullptr;
  if (!per_dim(p.strides, 2, 1) || !per_dim(p.dilations, 2, 1) || !per_dim(p.pads_begin, 2, 0) ||
      !per_dim(p.pads_end, 2, 0))
    return nullptr;
  for (size_t i = 0; i < 2; ++i)
    if (p.strides[i] < 1 || p.dilations[i] < 1 || p.pads_begin[i] < 0 || p.pads_end[i] < 0)
      return nullptr;
  if (f.bn_alpha.defined() &&
      (f.bn_alpha.numel() != weight.size(0) || f.bn_beta.numel() != weight.size(0)))
    return nullptr;
  std::shared_ptr<OneDnnConv> r(new OneDnnConv());
  r->impl_ = std::make_unique<Impl>();
  r->impl_->weight = weight.contiguous().clone();
  r->impl_->p = std::move(p);
  if (f.bn_alpha.defined()) {
    f.bn_alpha = f.bn_alpha.to(at::kFloat).contiguous().clone();
    f.bn_beta = f.bn_beta.to(at::kFloat).contiguous().clone();
  }
  r->impl_->f = std::move(f);
  return r;
}

OneDnnConv::~OneDnnConv() = default;

uint64_t OneDnnConv::runs() { return g_conv_runs.load(); }

at::Tensor OneDnnConv::run(const at::Tensor& x, const at::Tensor& b, const at::Tensor& z,
                           Done& done) const {
  const at::Tensor& w = impl_->weight;
  done = Done{};
  if (x.scalar_type() != at::kFloat || x.dim() != 4 || x.size(1) != w.size(1) * impl_->p.group ||
      x.numel() == 0)
    return {};
  if (b.defined() && (b.scalar_type() != at::kFloat || b.dim() != 1 || b.size(0) != w.size(0)))
    return {};
  // Z is summed in where it has the output's shape and dtype (otherwise it broadcasts: ATen).
  std::vector<int64_t> out = impl_->out_sizes(x);
  if (out.empty()) return {};
  bool sum = impl_->f.add && z.defined() && z.scalar_type() == at::kFloat &&
             z.sizes() == at::IntArrayRef(out);
  auto e = impl_->entry(x, b.defined(), sum);
  if (!e) return {};
  g_conv_runs.fetch_add(1, std::memory_order_relaxed);
  try {
    at::Tensor y = impl_->execute(*e, x, b, z);
    done = e->done;
    return y;
  } catch (const dnnl::error& err) {
    throw std::runtime_error(std::string("oneDNN convolution failed: ") + err.what());
  }
}

at::Tensor OneDnnConv::Impl::execute(const Entry& e, const at::Tensor& x, const at::Tensor& b,
                                     const at::Tensor& z) const {
  const dnnl::engine& eng = cpu_engine();
  at::Tensor xc = x.contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor bc = b.defined() ? b.contiguous() : at::Tensor();
  at::Tensor y = at::empty(e.out_sizes, x.options().memory_format(at::MemoryFormat::ChannelsLast));
  if (e.done.add) y.copy_(z);  // the sum post-op adds the convolution to what dst holds
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(e.src, eng, xc.data_ptr())},
                                       {DNNL_ARG_WEIGHTS, e.weights},
                                       {DNNL_ARG_DST, memory(e.dst, eng, y.data_ptr())}};
  if (bc.defined())
    args.emplace(DNNL_ARG_BIAS, memory({{weight.size(0)}, kF32, Tag::x}, eng, bc.data_ptr()));
  if (e.done.batchnorm) {
    memory::desc per_channel({1, weight.size(0), 1, 1}, kF32, Tag::nchw);
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                 memory(per_channel, eng, f.bn_alpha.data_ptr()));
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1,
                 memory(per_channel, eng, f.bn_beta.data_ptr()));
  }
  at::Tensor scratch_buf;
  if (e.scratch.get_size() > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(e.scratch, scratch_buf));
  dnnl::stream s(eng);
  e.prim.execute(s, args);
  s.wait();
  return y;
}
}  // namespace tonnx::backend
