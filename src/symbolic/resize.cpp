// Interpolation: upsample_{nearest,linear,bilinear,bicubic,trilinear}{1,2,3}d -> Resize.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// Overloads: (input, output_size, [align_corners,] scales...) or .vec (input,
// output_size?, [align_corners,] scale_factors?). Scale factors when PyTorch computes from
// them; else the traced output sizes when shapes are static, or sizes computed from the input's
// N, C and output_size (a value computed at run time, or a constant) under dynamic axes.
Outputs upsample(SymbolicContext& g, const std::string& mode, bool has_align) {
  Value* x = g.input(0);
  const int64_t rank = g.rank(0);
  const size_t spatial = static_cast<size_t>(std::max<int64_t>(rank - 2, 0));
  bool align = has_align && g.b(2);
  // PyTorch computes source coordinates from the scale factors when they are given, so
  // pass them as scales then (ONNX: output = floor(in * scale)); sizes otherwise.
  size_t last = g.num_inputs() - 1;
  // The overload by its schema: the value's own type says int[] for a list built in the graph.
  const c10::FunctionSchema* schema = g.node()->maybeSchema();
  bool vec_overload = schema ? schema->overload_name() == "vec" : g.arg_type(1) == "int[]?";
  std::vector<float> sc{1.0f, 1.0f};
  if (vec_overload && !g.is_none(last)) {
    for (double f : g.floats(last)) sc.push_back(static_cast<float>(f));
  } else if (!vec_overload) {
    // (input, output_size, [align_corners,] scales_h?, scales_w? ...): one scale per dim.
    for (size_t i = 0; i < spatial; ++i) {
      size_t arg = g.num_inputs() - spatial + i;
      if (g.is_none(arg)) break;
      sc.push_back(static_cast<float>(g.f(arg)));
    }
  }
  bool have_scales = sc.size() == static_cast<size_t>(rank);
  auto out = g.output_type();
  bool static_out = !g.dynamic_shapes() && out && out->shape;
  std::vector<int64_t> out_sizes;
  if (static_out)
    for (const auto& d : *out->shape) {
      if (!d.value) static_out = false;
      out_sizes.push_back(d.value.value_or(-1));
    }
  if (g.opset() < 11) {
    // Resize-10 / Upsample-9 only know asymmetric coordinates: exact for nearest only.
    if (mode != "nearest")
      g.unsupported_below(11, "linear/cubic interpolation as PyTorch computes it");
    if (!have_scales) {
      if (!static_out)
        g.unsupported_below(11, "interpolation to a size under dynamic axes (Resize's sizes)");
      std::vector<int64_t> in = g.sizes(0);
      sc.clear();
      for (size_t i = 0; i < in.size(); ++i)
        sc.push_back(static_cast<float>(out_sizes[i]) / static_cast<float>(in[i]));
    }
    Value* scv = g.constant(at::tensor(sc, at::kFloat));
    if (g.opset() == 9) return g.op("Upsample", {x, scv}, {{"mode", "nearest"}});
    return g.op("Resize", {x, scv}, {{"mode", "nearest"}});
  }
  std::vector<ir::Attr> attrs{{"mode", mode == "nearest" ? "nearest"
                                       : mode == "cubic" ? "cubic"
                                                         : "linear"}};
  if (mode == "nearest") {
    attrs.push_back({"coordinate_transformation_mode", "asymmetric"});
    attrs.push_back({"nearest_mode", "floor"});
  } else {
    // torch maps an output of length 1 to (0.5 * in / out - 0.5) like ONNX's half_pixel, not
    // to 0 as pytorch_half_pixel does (torch.onnx's test_interpolate_half_pixel).
    attrs.push_back({"coordinate_transformation_mode", align ? "align_corners" : "half_pixel"});
    if (mode == "cubic") attrs.push_back({"cubic_coeff_a", -0.75f});
  }
  Value* roi = g.constant(at::empty({0}, at::kFloat));
  Value* no_scales = g.constant(at::empty({0}, at::kFloat));
  // align_corners maps corner to corner whatever the scale: sizes suffice then.
  if (have_scales && !align)
    return g.op("Resize", {x, roi, g.constant(at::tensor(sc, at::kFloat))}, attrs);
  if (static_out) return g.op("Resize", {x, roi, no_scales, g.constant_ints(out_sizes)}, attrs);
  // Sizes at run time: N and C of the input, then output_size or floor(in * scale).
  Value* shape = g.op("Shape", {x});
  Value* nc = g.op("Slice", {shape, g.constant_ints({0}), g.constant_ints({2})});
  Value* sizes = nullptr;
  if (!g.is_none(1)) {
    sizes = g.is_constant(1) ? g.constant_ints(g.ints(1)) : g.cast(g.input(1), at::kLong);
  } else {
    if (!have_scales) g.fail("neither output_size nor scale_factors is given");
    Value* in =
        g.cast(g.op("Slice", {shape, g.constant_ints({2}), g.constant_ints({rank})}), at::kFloat);
    std::vector<float> tail(sc.begin() + 2, sc.end());
    sizes = g.cast(g.op("Floor", {g.op("Mul", {in, g.constant(at::tensor(tail, at::kFloat))})}),
                   at::kLong);
  }
  Value* all = g.op("Concat", {nc, sizes}, {{"axis", int64_t{0}}});
  return g.op("Resize", {x, roi, no_scales, all}, attrs);
}
// grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners): GridSample
// (opset 16, 4-D). Modes are aten's enums: 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros,
// 1 border, 2 reflection.
TONNX_SYMBOLIC("aten::grid_sampler", 16,
               [](SymbolicContext& g, Value* x, Value* grid, int64_t mode, int64_t padding,
                  bool align) -> Outputs {
                 static const char* kModes[] = {"bilinear", "nearest", "bicubic"};
                 static const char* kPadding[] = {"zeros", "border", "reflection"};
                 if (mode < 0 || mode > 2)
                   g.fail("interpolation_mode " + std::to_string(mode) + " is not 0, 1 or 2");
                 if (padding < 0 || padding > 2)
                   g.fail("padding_mode " + std::to_string(padding) + " is not 0, 1 or 2");
                 if (g.rank(0) != 4) g.fail("GridSample (opset 16) takes 4-D inputs");
                 at::ScalarType dt = g.scalar_type(0);
                 return g.op("GridSample", {x, g.cast(grid, dt)},
                             {{"mode", std::string(kModes[mode])},
                              {"padding_mode", std::string(kPadding[padding])},
                              {"align_corners", int64_t{align}}});
               });

TONNX_SYMBOLIC("aten::upsample_nearest1d", 9,
               [](SymbolicContext& g) { return upsample(g, "nearest", false); });
TONNX_SYMBOLIC("aten::upsample_nearest2d", 9,
               [](SymbolicContext& g) { return upsample(g, "nearest", false); });
TONNX_SYMBOLIC("aten::upsample_nearest3d", 9,
               [](SymbolicContext& g) { return upsample(g, "nearest", false); });
TONNX_SYMBOLIC("aten::upsample_linear1d", 9,
               [](SymbolicContext& g) { return upsample(g, "linear", true); });
TONNX_SYMBOLIC("aten::upsample_bilinear2d", 9,
               [](SymbolicContext& g) { return upsample(g, "linear", true); });
TONNX_SYMBOLIC("aten::upsample_trilinear3d", 9,
               [](SymbolicContext& g) { return upsample(g, "linear", true); });
TONNX_SYMBOLIC("aten::upsample_bicubic2d", 9,
               [](SymbolicContext& g) { return upsample(g, "cubic", true); });

}  // namespace
}  // namespace tonnx::sym
