// Convolution family: aten::_convolution, convolution, conv1d/2d/3d, conv_transpose.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

struct ConvArgs {
  Value *x, *w, *b;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
  std::string pad_mode;  // "same" / "valid" for the string overloads
};

std::vector<int64_t> expand_to(const std::vector<int64_t>& v, size_t n) {
  if (v.size() == 1 && n > 1) return std::vector<int64_t>(n, v[0]);
  return v;
}

Value* emit_conv(SymbolicContext& g, ConvArgs a) {
  std::vector<int64_t> wsizes = g.sizes(1);
  size_t d = wsizes.size() - 2;
  std::vector<int64_t> kernel(wsizes.begin() + 2, wsizes.end());
  a.stride = expand_to(a.stride, d);
  a.dilation = expand_to(a.dilation, d);
  std::vector<int64_t> pads;
  if (a.pad_mode == "same") {
    // Explicit pads (left gets the smaller half, as PyTorch does) instead of SAME_UPPER,
    // which ONNX defines differently for even kernels with dilation.
    std::vector<int64_t> lo, hi;
    for (size_t i = 0; i < d; ++i) {
      int64_t total = a.dilation[i] * (kernel[i] - 1);
      lo.push_back(total / 2);
      hi.push_back(total - total / 2);
    }
    pads = lo;
    pads.insert(pads.end(), hi.begin(), hi.end());
  } else if (a.pad_mode == "valid") {
    pads.assign(2 * d, 0);
  } else {
    a.padding = expand_to(a.padding, d);
    pads = a.padding;
    pads.insert(pads.end(), a.padding.begin(), a.padding.end());
  }
  std::vector<ir::Attr> attrs{{"dilations", a.dilation},
                              {"group", a.groups},
                              {"kernel_shape", kernel},
                              {"pads", pads},
                              {"strides", a.stride}};
  std::vector<Value*> inputs{a.x, a.w};
  if (a.b) inputs.push_back(a.b);
  if (a.transposed) {
    a.output_padding = expand_to(a.output_padding, d);
    bool any = false;
    for (int64_t p : a.output_padding) any = any || p != 0;
    if (any) attrs.push_back({"output_padding", a.output_padding});
    return g.op("ConvTranspose", inputs, attrs);
  }
  return g.op("Conv", inputs, attrs);
}

ConvArgs common(SymbolicContext& g) {
  ConvArgs a;
  a.x = g.input(0);
  a.w = g.input(1);
  a.b = g.is_none(2) ? nullptr : g.input(2);
  return a;
}

// _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
//              groups, benchmark, deterministic, cudnn_enabled[, allow_tf32])
Outputs convolution(SymbolicContext& g) {
  ConvArgs a = common(g);
  a.stride = g.ints(3);
  a.padding = g.ints(4);
  a.dilation = g.ints(5);
  a.transposed = g.b(6);
  a.output_padding = g.ints(7);
  a.groups = g.i(8);
  return emit_conv(g, a);
}

// conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups); padding may be a string.
Outputs conv_nd(SymbolicContext& g) {
  ConvArgs a = common(g);
  a.stride = g.ints(3);
  if (g.arg_type(4) == "str") {
    a.pad_mode = g.s(4);
  } else {
    a.padding = g.ints(4);
  }
  a.dilation = g.ints(5);
  a.groups = g.i(6);
  return emit_conv(g, a);
}

// conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups, dilation)
Outputs conv_transpose_nd(SymbolicContext& g) {
  ConvArgs a = common(g);
  a.stride = g.ints(3);
  a.padding = g.ints(4);
  a.output_padding = g.ints(5);
  a.groups = g.i(6);
  a.dilation = g.ints(7);
  a.transposed = true;
  return emit_conv(g, a);
}

TONNX_SYMBOLIC("aten::_convolution", 9, convolution);
TONNX_SYMBOLIC("aten::convolution", 9, convolution);
TONNX_SYMBOLIC("aten::conv1d", 9, conv_nd);
TONNX_SYMBOLIC("aten::conv2d", 9, conv_nd);
TONNX_SYMBOLIC("aten::conv3d", 9, conv_nd);
TONNX_SYMBOLIC("aten::conv_transpose1d", 9, conv_transpose_nd);
TONNX_SYMBOLIC("aten::conv_transpose2d", 9, conv_transpose_nd);
TONNX_SYMBOLIC("aten::conv_transpose3d", 9, conv_transpose_nd);

// _convolution_mode(input, weight, bias, stride, padding: str, dilation, groups)
TONNX_SYMBOLIC("aten::_convolution_mode", 9, [](SymbolicContext& g) -> Outputs {
  ConvArgs a = common(g);
  a.stride = g.ints(3);
  a.pad_mode = g.s(4);
  a.dilation = g.ints(5);
  a.groups = g.i(6);
  return emit_conv(g, a);
});
// conv_tbc(input [T, B, Cin], weight [K, Cin, Cout], bias [Cout], pad): a 1-D convolution over
// time-major input, as Conv over [B, Cin, T] between transposes.
TONNX_SYMBOLIC("aten::conv_tbc", 9,
               [](SymbolicContext& g, Value* x, Value* w, Value* b, int64_t pad) -> Outputs {
                 if (g.rank(0) != 3 || g.rank(1) != 3)
                   g.fail(
                       "conv_tbc needs a 3-D input [time, batch, channels] and a 3-D weight "
                       "[kernel, in, out]");
                 if (pad < 0) g.fail("pad must be >= 0, got " + std::to_string(pad));
                 Value* xt = g.op("Transpose", {x}, {{"perm", ir::Ints{1, 2, 0}}});
                 Value* wt = g.op("Transpose", {w}, {{"perm", ir::Ints{2, 1, 0}}});
                 Value* y = g.op("Conv", {xt, wt, b}, {{"pads", ir::Ints{pad, pad}}});
                 return g.op("Transpose", {y}, {{"perm", ir::Ints{2, 0, 1}}});
               });

}  // namespace
}  // namespace tonnx::sym
