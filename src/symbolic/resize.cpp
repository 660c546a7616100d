// Interpolation: upsample_{nearest,linear,bilinear,bicubic,trilinear}{1,2,3}d -> Resize.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// Overloads: (input, output_size, [align_corners,] scales...) or .vec (input,
// output_size?, [align_corners,] scale_factors?). The traced output shape is authoritative.
Outputs upsample(SymbolicContext& g, const std::string& mode, bool has_align) {
  Value* x = g.input(0);
  std::vector<int64_t> in = g.sizes(0);
  auto out = g.output_type();
  std::vector<int64_t> out_sizes;
  for (const auto& d : *out->shape) out_sizes.push_back(*d.value);
  bool align = has_align && g.b(2);
  if (g.opset() < 11) {
    // Resize-10 / Upsample-9 only know asymmetric coordinates: exact for nearest only.
    if (mode != "nearest")
      g.unsupported_below(11, "linear/cubic interpolation as PyTorch computes it");
    std::vector<float> scales;
    for (size_t i = 0; i < in.size(); ++i)
      scales.push_back(static_cast<float>(out_sizes[i]) / static_cast<float>(in[i]));
    Value* sc = g.constant(at::tensor(scales, at::kFloat));
    if (g.opset() == 9) return g.op("Upsample", {x, sc}, {{"mode", "nearest"}});
    return g.op("Resize", {x, sc}, {{"mode", "nearest"}});
  }
  std::vector<ir::Attr> attrs{{"mode", mode == "nearest" ? "nearest"
                                       : mode == "cubic" ? "cubic"
                                                         : "linear"}};
  if (mode == "nearest") {
    attrs.push_back({"coordinate_transformation_mode", "asymmetric"});
    attrs.push_back({"nearest_mode", "floor"});
  } else {
    attrs.push_back(
        {"coordinate_transformation_mode", align ? "align_corners" : "pytorch_half_pixel"});
    if (mode == "cubic") attrs.push_back({"cubic_coeff_a", -0.75f});
  }
  // PyTorch computes source coordinates from the scale factors when they are given, so
  // pass them as scales then (ONNX: output = floor(in * scale)); sizes otherwise.
  size_t last = g.num_inputs() - 1;
  Value* roi = g.constant(at::empty({0}, at::kFloat));
  // The overload by its schema: the value's own type says int[] for a list built in the graph.
  const c10::FunctionSchema* schema = g.node()->maybeSchema();
  bool vec_overload = schema ? schema->overload_name() == "vec" : g.arg_type(1) == "int[]?";
  std::vector<float> sc{1.0f, 1.0f};
  if (vec_overload && !g.is_none(last)) {
    for (double f : g.floats(last)) sc.push_back(static_cast<float>(f));
  } else if (!vec_overload) {
    // (input, output_size, [align_corners,] scales_h?, scales_w? ...): one scale per dim.
    size_t d = in.size() - 2;
    for (size_t i = 0; i < d; ++i) {
      size_t arg = g.num_inputs() - d + i;
      if (g.is_none(arg)) break;
      sc.push_back(static_cast<float>(g.f(arg)));
    }
  }
  // align_corners maps corner to corner whatever the scale: sizes suffice then.
  if (sc.size() == in.size() && !align)
    return g.op("Resize", {x, roi, g.constant(at::tensor(sc, at::kFloat))}, attrs);
  return g.op("Resize",
              {x, roi, g.constant(at::empty({0}, at::kFloat)), g.constant_ints(out_sizes)}, attrs);
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
