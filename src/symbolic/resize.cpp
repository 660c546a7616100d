// Interpolation: upsample_{nearest,linear,bilinear,bicubic,trilinear}{1,2,3}d -> Resize.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// What PyTorch's interpolation was asked for, however its op spells it.
struct Interp {
  std::string mode;  // nearest, linear, cubic
  bool align = false;
  std::vector<float> scales{1.0f, 1.0f};      // N, C, then the spatial dims' when known
  Value* runtime_scales = nullptr;            // the spatial dims' scales computed at run time
  std::optional<std::vector<int64_t>> sizes;  // output_size, a constant
  Value* runtime_sizes = nullptr;             // output_size computed at run time
  bool sizes_from_scales = false;  // recompute_scale_factor: the size floor(in * scale) decides
};

// Resize as PyTorch computes it: from the scale factors when they are given (ONNX: output =
// floor(in * scale)); else the traced output sizes when shapes are static, or sizes computed
// from the input's N, C and output_size (a value computed at run time, or a constant) under
// dynamic axes.
Outputs resize(SymbolicContext& g, const Interp& a) {
  Value* x = g.input(0);
  const int64_t rank = g.rank(0);
  std::vector<float> sc = a.scales;
  bool have_scales = sc.size() == static_cast<size_t>(rank) || a.runtime_scales;
  bool scales_decide = have_scales && !a.sizes_from_scales;
  // All the scales as one value: N and C keep their size.
  auto scales_value = [&]() -> Value* {
    if (!a.runtime_scales) return g.constant(at::tensor(sc, at::kFloat));
    return g.op("Concat", {g.constant(at::tensor(sc, at::kFloat)), a.runtime_scales},
                {{"axis", int64_t{0}}});
  };
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
    if (a.mode != "nearest")
      g.unsupported_below(11, "linear/cubic interpolation as PyTorch computes it");
    if (!scales_decide) {
      if (!static_out || a.runtime_scales)
        g.unsupported_below(11, "interpolation to a size under dynamic axes (Resize's sizes)");
      std::vector<int64_t> in = g.sizes(0);
      sc.clear();
      for (size_t i = 0; i < in.size(); ++i) {
        float scale = static_cast<float>(out_sizes[i]) / static_cast<float>(in[i]);
        // Upsample-9 / Resize-10 make floor(in * scale) elements: ONNX Runtime multiplies in
        // float, ONNX's reference in double; both must give the size.
        float in_f = static_cast<float>(in[i]);
        if (static_cast<int64_t>(std::floor(in_f * scale)) != out_sizes[i] ||
            static_cast<int64_t>(std::floor(static_cast<double>(in_f) * scale)) != out_sizes[i])
          g.unsupported_below(11, "interpolation from size " + std::to_string(in[i]) + " to " +
                                      std::to_string(out_sizes[i]) +
                                      " (the scale Upsample/Resize take here gives another size)");
        sc.push_back(scale);
      }
    }
    Value* scv = scales_value();
    if (g.opset() == 9) return g.op("Upsample", {x, scv}, {{"mode", "nearest"}});
    return g.op("Resize", {x, scv}, {{"mode", "nearest"}});
  }
  std::vector<ir::Attr> attrs{{"mode", a.mode}};
  if (a.mode == "nearest") {
    attrs.push_back({"coordinate_transformation_mode", "asymmetric"});
    attrs.push_back({"nearest_mode", "floor"});
  } else {
    // torch maps an output of length 1 to (0.5 * in / out - 0.5) like ONNX's half_pixel, not
    // to 0 as pytorch_half_pixel does (torch.onnx's test_interpolate_half_pixel).
    attrs.push_back({"coordinate_transformation_mode", a.align ? "align_corners" : "half_pixel"});
    if (a.mode == "cubic") attrs.push_back({"cubic_coeff_a", -0.75f});
  }
  Value* roi = g.constant(at::empty({0}, at::kFloat));
  Value* no_scales = g.constant(at::empty({0}, at::kFloat));
  // align_corners maps corner to corner whatever the scale: sizes suffice then.
  if (scales_decide && !a.align) return g.op("Resize", {x, roi, scales_value()}, attrs);
  if (static_out && !a.runtime_scales)
    return g.op("Resize", {x, roi, no_scales, g.constant_ints(out_sizes)}, attrs);
  // Sizes at run time: N and C of the input, then output_size or floor(in * scale).
  Value* shape = g.op("Shape", {x});
  Value* nc = g.op("Slice", {shape, g.constant_ints({0}), g.constant_ints({2})});
  Value* sizes = nullptr;
  if (a.sizes) {
    sizes = g.constant_ints(*a.sizes);
  } else if (a.runtime_sizes) {
    // Reshaped to its known length: ONNX's and ONNX Runtime's Resize shape inference read an
    // unknown length of `sizes` as 0 and reject the model (a size list built in a loop).
    sizes = g.op("Reshape", {g.cast(a.runtime_sizes, at::kLong), g.constant_ints({rank - 2})});
  } else {
    if (!have_scales) g.fail("neither output_size nor scale_factors is given");
    Value* in =
        g.cast(g.op("Slice", {shape, g.constant_ints({2}), g.constant_ints({rank})}), at::kFloat);
    std::vector<float> tail(sc.begin() + 2, sc.end());
    Value* tail_scales =
        a.runtime_scales ? a.runtime_scales : g.constant(at::tensor(tail, at::kFloat));
    sizes = g.cast(g.op("Floor", {g.op("Mul", {in, tail_scales})}), at::kLong);
  }
  Value* all = g.op("Concat", {nc, sizes}, {{"axis", int64_t{0}}});
  return g.op("Resize", {x, roi, no_scales, all}, attrs);
}

// Overloads: (input, output_size, [align_corners,] scales...) or .vec (input,
// output_size?, [align_corners,] scale_factors?).
Outputs upsample(SymbolicContext& g, const std::string& mode, bool has_align) {
  const int64_t rank = g.rank(0);
  const size_t spatial = static_cast<size_t>(std::max<int64_t>(rank - 2, 0));
  Interp a;
  a.mode = mode;
  a.align = has_align && g.b(2);
  size_t last = g.num_inputs() - 1;
  // The overload by its schema: the value's own type says int[] for a list built in the graph.
  const c10::FunctionSchema* schema = g.node()->maybeSchema();
  bool vec_overload = schema ? schema->overload_name() == "vec" : g.arg_type(1) == "int[]?";
  if (vec_overload && !g.is_none(last) && !g.is_constant(last)) {
    a.runtime_scales = g.cast(g.input(last), at::kFloat);  // scripted interpolate computes them
  } else if (vec_overload && !g.is_none(last)) {
    for (double f : g.floats(last)) a.scales.push_back(static_cast<float>(f));
  } else if (!vec_overload) {
    // (input, output_size, [align_corners,] scales_h?, scales_w? ...): one scale per dim.
    for (size_t i = 0; i < spatial; ++i) {
      size_t arg = g.num_inputs() - spatial + i;
      if (g.is_none(arg)) break;
      a.scales.push_back(static_cast<float>(g.f(arg)));
    }
  }
  if (!g.is_none(1)) {
    if (g.is_constant(1))
      a.sizes = g.ints(1);
    else
      a.runtime_sizes = g.input(1);
  }
  return resize(g, a);
}

// __interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor,
// antialias): F.interpolate as one op; size and scale_factor are one int/float or a list.
TONNX_SYMBOLIC("aten::__interpolate", 9, [](SymbolicContext& g) -> Outputs {
  const int64_t spatial = g.rank(0) - 2;
  if (spatial < 1) g.fail("interpolation takes 3-D to 5-D inputs (N, C, spatial dims)");
  Interp a;
  std::string mode = g.s(3);
  if (mode == "nearest") {
    a.mode = "nearest";
  } else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") {
    a.mode = "linear";
  } else if (mode == "bicubic") {
    a.mode = "cubic";
  } else {
    g.fail("mode '" + mode + "' is not exported (nearest, linear, bilinear, trilinear, bicubic)");
  }
  if (!g.is_none(6) && g.b(6))
    g.fail("antialias=True has no ONNX Resize equivalent before opset 18");
  a.align = !g.is_none(4) && g.b(4);
  // A scale factor without recompute_scale_factor=False decides the size only (the old
  // behaviour this op keeps): coordinates follow in / out.
  bool recompute = g.is_none(5) || g.b(5);
  if (!g.is_none(1)) {
    std::vector<int64_t> v = g.ints(1);  // one int is every spatial dim's
    if (v.size() == 1) v.assign(static_cast<size_t>(spatial), v[0]);
    a.sizes = v;
  } else if (!g.is_none(2)) {
    std::vector<double> f = g.floats(2);
    if (f.size() == 1) f.assign(static_cast<size_t>(spatial), f[0]);
    for (double s : f) a.scales.push_back(static_cast<float>(s));
    a.sizes_from_scales = recompute;
  } else {
    g.fail("neither size nor scale_factor is given");
  }
  return resize(g, a);
});

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
