// Attention and sliding windows: aten::_native_multi_head_attention (the fused eval fast
// path that PyTorch 1.13 records for nn.MultiheadAttention / TransformerEncoderLayer and
// torch.onnx 1.13 cannot export), Tensor.unfold, and im2col (F::unfold).
#include <limits>
#include <utility>

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

// Multi-head attention over batch-first [B, L, E] inputs with packed in-projection weights
// [3E, E]. A bool mask marks positions to ignore: key padding [B, S] or an attention mask
// [L, S] that broadcasts against the scores. Returns the output and the attention weights.
std::pair<Value*, Value*> attention(SymbolicContext& g, Value* q, Value* k, Value* v, int64_t e,
                                    int64_t h, Value* w, Value* b, Value* proj_w, Value* proj_b,
                                    Value* mask, bool key_padding, int64_t mask_rank,
                                    at::ScalarType dt) {
  if (h <= 0 || e % h)
    g.fail("embed_dim " + std::to_string(e) + " is not divisible by num_heads " +
           std::to_string(h));
  int64_t d = e / h;
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
  if (mask) {
    mask = g.cast(mask, at::kBool);
    if (key_padding && mask_rank == 2) mask = unsqueeze(g, mask, {1, 2});  // [B, 1, 1, S]
    scores = g.op("Where",
                  {mask, g.constant_scalar(-std::numeric_limits<double>::infinity(), dt), scores});
  }
  // Softmax before opset 13 flattens from `axis` on; axis 3 is the last, so both agree.
  Value* attn = g.op("Softmax", {scores}, {{"axis", int64_t{3}}});
  Value* out = g.op("MatMul", {attn, vh});
  out = g.op("Reshape", {g.op("Transpose", {out}, {{"perm", ir::Ints{0, 2, 1, 3}}}),
                         g.constant_ints({0, 0, e})});
  return {linear3d(g, out, proj_w, proj_b), attn};
}

// _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
//   proj_weight, proj_bias, mask, need_weights, average_attn_weights, mask_type)
TONNX_SYMBOLIC("aten::_native_multi_head_attention", 9, [](SymbolicContext& g) -> Outputs {
  // mask_type 1: key padding [B, S]; 0: an attention mask.
  bool key_padding = g.num_inputs() > 12 && !g.is_none(12) ? g.i(12) == 1 : false;
  Value* mask = g.is_none(9) ? nullptr : g.input(9);
  auto [out, attn] = attention(g, g.input(0), g.input(1), g.input(2), g.i(3), g.i(4), g.input(5),
                               g.is_none(6) ? nullptr : g.input(6), g.input(7),
                               g.is_none(8) ? nullptr : g.input(8), mask, key_padding,
                               mask ? g.rank(9) : 0, g.scalar_type(0));
  bool need_weights = g.b(10), average = g.b(11);
  if (!need_weights) return {out, nullptr};
  Value* weights = average ? reduce(g, "ReduceMean", attn, std::vector<int64_t>{1}, false) : attn;
  return {out, weights};
});

// Layer norm over the last dim: LayerNormalization from opset 17, the arithmetic before.
Value* layer_norm_last(SymbolicContext& g, Value* x, Value* w, Value* b, double eps,
                       at::ScalarType dt) {
  if (g.opset() >= 17)
    return g.op("LayerNormalization", {x, w, b}, {{"axis", int64_t{-1}}, {"epsilon", eps}});
  Value* mean = reduce(g, "ReduceMean", x, std::vector<int64_t>{-1}, true);
  Value* c = g.op("Sub", {x, mean});
  Value* var = reduce(g, "ReduceMean", g.op("Mul", {c, c}), std::vector<int64_t>{-1}, true);
  Value* y = g.op("Div", {c, g.op("Sqrt", {g.op("Add", {var, g.constant_scalar(eps, dt)})})});
  return g.op("Add", {g.op("Mul", {y, w}), b});
}

// _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
//   proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2,
//   norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type): the
// fused nn.TransformerEncoderLayer that tracing under no_grad records (batch-first); torch.onnx
// 1.13 cannot export it. The same layer, op by op.
TONNX_SYMBOLIC("aten::_transformer_encoder_layer_fwd", 9, [](SymbolicContext& g) -> Outputs {
  at::ScalarType dt = g.scalar_type(0);
  Value* src = g.input(0);
  int64_t e = g.i(1), h = g.i(2);
  bool use_gelu = g.b(7), norm_first = g.b(8);
  double eps = g.f(9);
  Value* mask = g.num_inputs() > 18 && !g.is_none(18) ? g.input(18) : nullptr;
  bool key_padding = g.num_inputs() > 19 && !g.is_none(19) ? g.i(19) == 1 : false;
  if (mask && !g.is_none(19) && g.i(19) != 0 && g.i(19) != 1)
    g.fail("mask_type " + std::to_string(g.i(19)) + " is not 0 (attention) or 1 (key padding)");
  auto norm = [&](Value* x, size_t w) {
    return layer_norm_last(g, x, g.input(w), g.input(w + 1), eps, dt);
  };
  auto mha = [&](Value* x) {
    return attention(g, x, x, x, e, h, g.input(3), g.input(4), g.input(5), g.input(6), mask,
                     key_padding, mask ? g.rank(18) : 0, dt)
        .first;
  };
  auto ffn = [&](Value* x) {
    Value* y = linear3d(g, x, g.input(14), g.input(15));
    if (use_gelu) {
      // gelu(y) = y * 0.5 * (1 + erf(y / sqrt(2)))
      Value* erf = g.op("Erf", {g.op("Div", {y, g.constant_scalar(std::sqrt(2.0), dt)})});
      y = g.op("Mul", {g.op("Mul", {y, g.constant_scalar(0.5, dt)}),
                       g.op("Add", {erf, g.constant_scalar(1.0, dt)})});
    } else {
      y = g.op("Relu", {y});
    }
    return linear3d(g, y, g.input(16), g.input(17));
  };
  if (norm_first) {
    Value* x = g.op("Add", {src, mha(norm(src, 10))});
    return g.op("Add", {x, ffn(norm(x, 12))});
  }
  Value* x = norm(g.op("Add", {src, mha(src)}), 10);
  return norm(g.op("Add", {x, ffn(x)}), 12);
});

// Tensor.unfold(dimension, size, step): windows along dim, the window axis appended last.
// A Gather with a constant [n, size] index, then the window axis moved to the end.
TONNX_SYMBOLIC(
    "aten::unfold", 9,
    [](SymbolicContext& g, Value* x, int64_t dim, int64_t size, int64_t step) -> Outputs {
      // Only the unfolded dim's size matters: the others may vary.
      int64_t rank = g.rank(0);
      int64_t d = rank ? norm_dim(g, dim, rank) : 0;
      std::optional<int64_t> known = rank ? known_size(g, 0, d) : 1;
      if (!known)
        g.fail("unfold along dim " + std::to_string(d) +
               ", whose size varies (a dynamic axis): the number of windows depends on it");
      int64_t len = *known;
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
