// Attention and sliding windows: aten::_native_multi_head_attention (the fused eval fast
// path that PyTorch 1.13 records for nn.MultiheadAttention / TransformerEncoderLayer and
// torch.onnx 1.13 cannot export), Tensor.unfold, and im2col (F::unfold).
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

Value* linear3d(SymbolicContext& g, Value* x, Value* w, Value* b) {
  Value* y = g.op("MatMul", {x, g.op("Transpose", {w}, {{"perm", ir::Ints{1, 0}}})});
  return b ? g.op("Add", {y, b}) : y;
}

Value* slice_rows(SymbolicContext& g, Value* x, int64_t start, int64_t end) {
  if (g.opset() < 10)
    return g.op("Slice", {x},
                {{"axes", ir::Ints{0}}, {"starts", ir::Ints{start}}, {"ends", ir::Ints{end}}});
  return g.op("Slice", {x, g.constant_ints({start}), g.constant_ints({end}), g.constant_ints({0})});
}

// _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
//   proj_weight, proj_bias, mask, need_weights, average_attn_weights, mask_type)
// Inputs are batch-first [B, L, E]. A bool mask marks positions to ignore.
TONNX_SYMBOLIC("aten::_native_multi_head_attention", 9, [](SymbolicContext& g) -> Outputs {
  Value* q = g.input(0);
  Value* k = g.input(1);
  Value* v = g.input(2);
  int64_t e = g.i(3), h = g.i(4);
  if (e % h)
    g.fail("embed_dim " + std::to_string(e) + " is not divisible by num_head " + std::to_string(h));
  int64_t d = e / h;
  at::ScalarType dt = g.scalar_type(0);
  Value* w = g.input(5);
  Value* b = g.is_none(6) ? nullptr : g.input(6);
  auto part = [&](Value* x, int64_t i) {
    Value* wi = slice_rows(g, w, i * e, (i + 1) * e);
    Value* bi = b ? slice_rows(g, b, i * e, (i + 1) * e) : nullptr;
    // [B, L, E] -> [B, H, L, D]
    Value* y = g.op("Reshape", {linear3d(g, x, wi, bi), g.constant_ints({0, 0, h, d})});
    return g.op("Transpose", {y}, {{"perm", ir::Ints{0, 2, 1, 3}}});
  };
  Value* qh = part(q, 0);
  Value* kh = part(k, 1);
  Value* vh = part(v, 2);
  Value* scores = g.op("MatMul", {qh, g.op("Transpose", {kh}, {{"perm", ir::Ints{0, 1, 3, 2}}})});
  scores = g.op("Div", {scores, g.constant_scalar(std::sqrt(static_cast<double>(d)), dt)});
  if (!g.is_none(9)) {
    Value* mask = g.cast(g.input(9), at::kBool);
    // mask_type 1: key padding [B, S] -> [B, 1, 1, S]; 0: an attention mask [L, S] that
    // broadcasts against the scores as it is.
    bool key_padding = g.num_inputs() > 12 && !g.is_none(12) ? g.i(12) == 1 : false;
    if (key_padding && g.rank(9) == 2) mask = unsqueeze(g, mask, {1, 2});
    scores = g.op("Where",
                  {mask, g.constant_scalar(-std::numeric_limits<double>::infinity(), dt), scores});
  }
  // Softmax before opset 13 flattens from `axis` on; axis 3 is the last, so both agree.
  Value* attn = g.op("Softmax", {scores}, {{"axis", int64_t{3}}});
  Value* out = g.op("MatMul", {attn, vh});
  out = g.op("Reshape", {g.op("Transpose", {out}, {{"perm", ir::Ints{0, 2, 1, 3}}}),
                         g.constant_ints({0, 0, e})});
  out = linear3d(g, out, g.input(7), g.is_none(8) ? nullptr : g.input(8));
  bool need_weights = g.b(10), average = g.b(11);
  if (!need_weights) return {out, nullptr};
  Value* weights = average ? reduce(g, "ReduceMean", attn, std::vector<int64_t>{1}, false) : attn;
  return {out, weights};
});

// Tensor.unfold(dimension, size, step): windows along dim, the window axis appended last.
// A Gather with a constant [n, size] index, then the window axis moved to the end.
TONNX_SYMBOLIC(
    "aten::unfold", 9,
    [](SymbolicContext& g, Value* x, int64_t dim, int64_t size, int64_t step) -> Outputs {
      std::vector<int64_t> s = g.sizes(0);
      int64_t rank = static_cast<int64_t>(s.size());
      int64_t d = rank ? norm_dim(g, dim, rank) : 0;
      int64_t len = rank ? s[d] : 1;
      if (size > len || step <= 0)
        g.fail("unfold: size " + std::to_string(size) + " / step " + std::to_string(step) +
               " do not fit dim of " + std::to_string(len));
      int64_t n = (len - size) / step + 1;
      at::Tensor idx =
          (at::arange(n, at::kLong).unsqueeze(1) * step + at::arange(size, at::kLong).unsqueeze(0));
      Value* y = g.op("Gather", {x, g.constant(idx)}, {{"axis", d}});  // [..., n, size, ...]
      std::vector<int64_t> perm;
      for (int64_t i = 0; i <= rank; ++i)
        if (i != d + 1) perm.push_back(i);
      perm.push_back(d + 1);
      return g.op("Transpose", {y}, {{"perm", perm}});
    });

// im2col(self, kernel_size, dilation, padding, stride): [N, C, H, W] -> [N, C*kh*kw, L]
TONNX_SYMBOLIC("aten::im2col", 9,
               [](SymbolicContext& g, Value* x, std::vector<int64_t> k, std::vector<int64_t> dil,
                  std::vector<int64_t> pad, std::vector<int64_t> stride) -> Outputs {
                 std::vector<int64_t> s = g.sizes(0);
                 if (s.size() != 4) g.fail("im2col is exported for 4-D inputs");
                 auto two = [](std::vector<int64_t> v) {
                   return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
                 };
                 k = two(k), dil = two(dil), pad = two(pad), stride = two(stride);
                 at::ScalarType dt = g.scalar_type(0);
                 Value* xp = x;
                 if (pad[0] || pad[1]) {
                   std::vector<int64_t> pads{0, 0, pad[0], pad[1], 0, 0, pad[0], pad[1]};
                   if (g.opset() >= 11) {
                     xp = g.op("Pad", {x, g.constant_ints(pads), g.constant_scalar(0, dt)});
                   } else {
                     std::vector<ir::Attr> attrs{{"pads", ir::Ints(pads)}, {"value", 0.0f}};
                     xp = g.op("Pad", {x}, std::move(attrs));
                   }
                 }
                 int64_t hp = s[2] + 2 * pad[0], wp = s[3] + 2 * pad[1];
                 int64_t oh = (hp - dil[0] * (k[0] - 1) - 1) / stride[0] + 1;
                 int64_t ow = (wp - dil[1] * (k[1] - 1) - 1) / stride[1] + 1;
                 auto windows = [](int64_t out, int64_t kk, int64_t st, int64_t dl) {
                   return at::arange(out, at::kLong).unsqueeze(1) * st +
                          at::arange(kk, at::kLong).unsqueeze(0) * dl;
                 };
                 Value* rows =
                     g.op("Gather", {xp, g.constant(windows(oh, k[0], stride[0], dil[0]))},
                          {{"axis", int64_t{2}}});  // N,C,oh,kh,Wp
                 Value* cols =
                     g.op("Gather", {rows, g.constant(windows(ow, k[1], stride[1], dil[1]))},
                          {{"axis", int64_t{4}}});  // N,C,oh,kh,ow,kw
                 Value* t = g.op("Transpose", {cols},
                                 {{"perm", ir::Ints{0, 1, 3, 5, 2, 4}}});  // N,C,kh,kw,oh,ow
                 return g.op("Reshape", {t, g.constant_ints({0, s[1] * k[0] * k[1], oh * ow})});
               });

}  // namespace
}  // namespace tonnx::sym
