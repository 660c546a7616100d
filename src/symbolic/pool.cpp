// Pooling: max_pool, avg_pool, adaptive pools.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

std::vector<int64_t> expand_to(const std::vector<int64_t>& v, size_t n) {
  if (v.size() == 1 && n > 1) return std::vector<int64_t>(n, v[0]);
  return v;
}

std::vector<int64_t> twice(const std::vector<int64_t>& p) {
  std::vector<int64_t> out = p;
  out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The pads and ceil_mode of a pool. With ceil_mode, PyTorch drops a last window that would
// start in the end padding; ONNX Runtime and tonnx's backend do too, but ONNX's shape
// inference before 1.16 (Debian's libonnx) counts it, and the checker refuses the model.
// Where the sizes are known and a window is dropped, the pool is exported with ceil_mode=0 and
// the end padding that gives PyTorch's windows: padding the max ignores, and the average
// without count_include_pad too; with it, only where no window reaches into the new padding.
struct PoolPads {
  std::vector<int64_t> pads;
  bool ceil;
};
PoolPads pool_pads(SymbolicContext& g, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& dilation, bool ceil, bool counts_pads) {
  PoolPads same{twice(padding), ceil};
  if (!ceil) return same;
  size_t d = kernel.size();
  std::vector<int64_t> pads = padding;  // the begin pads, then the end pads
  bool dropped = false;
  for (size_t i = 0; i < d; ++i) {
    std::optional<int64_t> in = known_size(g, 0, static_cast<int64_t>(2 + i));
    if (!in || i >= stride.size() || i >= padding.size() || i >= dilation.size() || stride[i] <= 0)
      return same;
    int64_t reach = dilation[i] * (kernel[i] - 1) + 1;
    int64_t span = *in + 2 * padding[i] - reach;
    if (span < 0) return same;  // (PyTorch refuses it)
    int64_t out = (span + stride[i] - 1) / stride[i] + 1;
    if ((out - 1) * stride[i] >= *in + padding[i]) {
      --out;
      dropped = true;
    }
    int64_t end = (out - 1) * stride[i] + reach - *in - padding[i];
    if (end < 0) return same;
    pads.push_back(end);
  }
  if (!dropped) return same;
  // (Only now: a window dropped in any dim makes the pool ceil_mode=0 in every dim.)
  for (size_t i = 0; i < d; ++i)
    if (counts_pads && pads[d + i] > padding[i])
      g.fail(
          "avg_pool with ceil_mode=True and count_include_pad=True where PyTorch drops a "
          "last window (input size " +
          std::to_string(*known_size(g, 0, static_cast<int64_t>(2 + i))) + " of dim " +
          std::to_string(2 + i) +
          "): ONNX's AveragePool cannot give its divisors; export with count_include_pad=False "
          "or ceil_mode=False, or at another input size");
  return {pads, false};
}

// MaxPool's values and indices as PyTorch numbers them.
Outputs max_pool_with_indices(SymbolicContext& g, const std::vector<ir::Attr>& attrs, size_t d) {
  auto outs = g.op_n("MaxPool", {g.input(0)}, attrs, 2);
  // ONNX numbers indices over the whole tensor; PyTorch within each (N, C) plane. The
  // plane offsets are what a 1x1 MaxPool returns for the first element of each plane.
  std::vector<int64_t> ones(d, 1);
  auto base = g.op_n("MaxPool", {g.input(0)}, {{"kernel_shape", ones}, {"strides", ones}}, 2)[1];
  std::vector<int64_t> axes, starts(d, 0), ends(d, 1);
  for (size_t i = 0; i < d; ++i) axes.push_back(static_cast<int64_t>(2 + i));
  Value* first =
      g.op("Slice", {base, g.constant_ints(starts), g.constant_ints(ends), g.constant_ints(axes)});
  return {outs[0], g.op("Sub", {outs[1], first})};
}

// max_poolNd(self, kernel_size, stride, padding, dilation, ceil_mode)
Outputs max_pool(SymbolicContext& g, size_t d, bool with_indices) {
  std::vector<int64_t> kernel = expand_to(g.ints(1), d);
  std::vector<int64_t> stride = g.ints(2);
  stride = stride.empty() ? kernel : expand_to(stride, d);
  std::vector<int64_t> padding = expand_to(g.ints(3), d);
  std::vector<int64_t> dilation = expand_to(g.ints(4), d);
  bool dilated = false;
  for (int64_t v : dilation) dilated = dilated || v != 1;
  PoolPads pp = pool_pads(g, kernel, stride, padding, dilation, g.b(5), false);
  bool ceil = pp.ceil;
  std::vector<ir::Attr> attrs{{"kernel_shape", kernel}, {"pads", pp.pads}, {"strides", stride}};
  if (ceil || dilated) {
    // MaxPool gained ceil_mode and dilations in opset 10.
    if (g.opset() < 10)
      g.unsupported_below(10, ceil ? "max_pool with ceil_mode=True" : "max_pool with dilation");
    if (ceil) attrs.push_back({"ceil_mode", int64_t{1}});
    if (dilated) attrs.push_back({"dilations", dilation});
  }
  bool need_indices = with_indices && g.num_outputs() > 1;
  if (!need_indices) return g.op("MaxPool", {g.input(0)}, attrs);
  return max_pool_with_indices(g, attrs, d);
}
TONNX_SYMBOLIC("aten::max_pool1d", 9, [](SymbolicContext& g) { return max_pool(g, 1, false); });
TONNX_SYMBOLIC("aten::max_pool2d", 9, [](SymbolicContext& g) { return max_pool(g, 2, false); });
TONNX_SYMBOLIC("aten::max_pool3d", 9, [](SymbolicContext& g) { return max_pool(g, 3, false); });
TONNX_SYMBOLIC("aten::max_pool1d_with_indices", 10,
               [](SymbolicContext& g) { return max_pool(g, 1, true); });
TONNX_SYMBOLIC("aten::max_pool2d_with_indices", 10,
               [](SymbolicContext& g) { return max_pool(g, 2, true); });
TONNX_SYMBOLIC("aten::max_pool3d_with_indices", 10,
               [](SymbolicContext& g) { return max_pool(g, 3, true); });

// avg_poolNd(self, kernel_size, stride, padding, ceil_mode, count_include_pad[, divisor_override])
Outputs avg_pool(SymbolicContext& g, size_t d) {
  std::vector<int64_t> kernel = expand_to(g.ints(1), d);
  std::vector<int64_t> stride = g.ints(2);
  stride = stride.empty() ? kernel : expand_to(stride, d);
  std::vector<int64_t> padding = expand_to(g.ints(3), d);
  bool count_include_pad = g.b(5);
  if (g.num_inputs() > 6 && !g.is_none(6))
    g.fail("divisor_override has no ONNX equivalent in AveragePool");
  PoolPads pp =
      pool_pads(g, kernel, stride, padding, std::vector<int64_t>(d, 1), g.b(4), count_include_pad);
  bool ceil = pp.ceil;
  std::vector<ir::Attr> attrs{{"kernel_shape", kernel},
                              {"pads", pp.pads},
                              {"strides", stride},
                              {"count_include_pad", int64_t{count_include_pad}}};
  if (ceil) {
    if (g.opset() < 10) g.unsupported_below(10, "avg_pool with ceil_mode=True");
    attrs.push_back({"ceil_mode", int64_t{1}});
  }
  return g.op("AveragePool", {g.input(0)}, attrs);
}
TONNX_SYMBOLIC("aten::avg_pool1d", 9, [](SymbolicContext& g) { return avg_pool(g, 1); });
TONNX_SYMBOLIC("aten::avg_pool2d", 9, [](SymbolicContext& g) { return avg_pool(g, 2); });
TONNX_SYMBOLIC("aten::avg_pool3d", 9, [](SymbolicContext& g) { return avg_pool(g, 3); });

// adaptive_{avg,max}_poolNd(self, output_size): global pooling, or a fixed pool when every
// input size is a multiple of the output size.
Outputs adaptive_pool(SymbolicContext& g, bool is_max) {
  std::vector<int64_t> out = g.ints(1);
  int64_t rank = g.rank(0);
  size_t d = static_cast<size_t>(rank - 2);
  out = expand_to(out, d);
  bool global = true;
  for (int64_t o : out) global = global && o == 1;
  // adaptive_max_pool's indices: MaxPool's, numbered as PyTorch does (its windows then need
  // the input's sizes even when global).
  bool indices = is_max && g.num_outputs() > 1 && g.node()->outputs()[1]->hasUses();
  Value* x = g.input(0);
  if (global && !indices) return g.op(is_max ? "GlobalMaxPool" : "GlobalAveragePool", {x});
  // Only the pooled dims' sizes matter: the batch and channels may vary.
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < d; ++i) {
    std::optional<int64_t> known = known_size(g, 0, static_cast<int64_t>(2 + i));
    if (!known)
      g.fail("adaptive pooling of dim " + std::to_string(2 + i) +
             ", whose size varies (a dynamic axis): the window depends on it; " +
             (indices ? std::string("keep that dim's size fixed")
                      : "pool to size 1 (global pooling), or keep that dim's size fixed"));
    int64_t in = *known;
    if (out[i] <= 0 || in % out[i] != 0)
      g.fail("adaptive pooling from size " + std::to_string(in) + " to " + std::to_string(out[i]) +
             " is not a fixed-window pool (the input size must be a multiple of the output size)");
    kernel.push_back(in / out[i]);
  }
  std::vector<ir::Attr> attrs{{"kernel_shape", kernel}, {"strides", kernel}};
  if (indices) {
    if (g.opset() < 10) g.unsupported_below(10, "adaptive_max_pool's indices (Slice-10)");
    return max_pool_with_indices(g, attrs, d);
  }
  return g.op(is_max ? "MaxPool" : "AveragePool", {x}, attrs);
}
TONNX_SYMBOLIC("aten::adaptive_avg_pool1d", 9,
               [](SymbolicContext& g) { return adaptive_pool(g, false); });
TONNX_SYMBOLIC("aten::adaptive_avg_pool2d", 9,
               [](SymbolicContext& g) { return adaptive_pool(g, false); });
TONNX_SYMBOLIC("aten::adaptive_avg_pool3d", 9,
               [](SymbolicContext& g) { return adaptive_pool(g, false); });
TONNX_SYMBOLIC("aten::adaptive_max_pool1d", 9,
               [](SymbolicContext& g) { return adaptive_pool(g, true); });
TONNX_SYMBOLIC("aten::adaptive_max_pool2d", 9,
               [](SymbolicContext& g) { return adaptive_pool(g, true); });
TONNX_SYMBOLIC("aten::adaptive_max_pool3d", 9,
               [](SymbolicContext& g) { return adaptive_pool(g, true); });

}  // namespace
}  // namespace tonnx::sym
