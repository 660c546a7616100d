// torchvision's custom ops (a .pt that uses torchvision.ops loads once its library is loaded:
// tonnx export --load-library, tonnx::load_library): nms, roi_align and roi_pool, as
// torchvision registers them for torch.onnx. ps_roi_align and ps_roi_pool have no ONNX form
// (torchvision registers none): they stay missing symbolics, named with their scopes.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// nms(boxes [N, 4] as (x1, y1, x2, y2), scores [N], iou_threshold) -> kept indices [K], by
// decreasing score: NonMaxSuppression over one batch and one class, column 2 of its result.
TONNX_SYMBOLIC("torchvision::nms", 10,
               [](SymbolicContext& g, Value* boxes, Value* scores, double iou) -> Outputs {
                 Value* b = unsqueeze(g, g.cast(boxes, at::kFloat), {0});      // [1, N, 4]
                 Value* s = unsqueeze(g, g.cast(scores, at::kFloat), {0, 1});  // [1, 1, N]
                 // At most N boxes survive: N itself bounds the output.
                 Value* n = g.op(
                     "Slice", {g.op("Shape", {boxes}), g.constant_ints({0}), g.constant_ints({1})});
                 Value* t = g.constant(at::tensor({static_cast<float>(iou)}));
                 Value* sel = g.op("NonMaxSuppression", {b, s, n, t});  // [K, 3]
                 return g.op("Gather", {sel, g.constant(at::scalar_tensor(2, at::kLong))},
                             {{"axis", int64_t{1}}});
               });

// roi_align(input, rois [K, 5] as (batch, x1, y1, x2, y2), spatial_scale, pooled_height,
// pooled_width, sampling_ratio, aligned): RoiAlign. aligned=True is half_pixel from opset 16;
// before, the boxes shift by half a pixel as torchvision's own symbolic does (exact except for
// boxes smaller than a pixel, which RoiAlign widens to one).
TONNX_SYMBOLIC("torchvision::roi_align", 10,
               [](SymbolicContext& g, Value* x, Value* rois, double scale, int64_t ph, int64_t pw,
                  int64_t ratio, bool aligned) -> Outputs {
                 at::ScalarType dt = g.scalar_type(0);
                 auto cols = [&](int64_t a, int64_t b) {
                   return g.op("Slice", {rois, g.constant_ints({a}), g.constant_ints({b}),
                                         g.constant_ints({1})});
                 };
                 Value* batch = g.cast(squeeze(g, cols(0, 1), {1}), at::kLong);
                 Value* boxes = g.cast(cols(1, 5), dt);
                 std::vector<ir::Attr> attrs{{"spatial_scale", scale},
                                             {"output_height", ph},
                                             {"output_width", pw},
                                             {"sampling_ratio", std::max<int64_t>(ratio, 0)},
                                             {"mode", std::string("avg")}};
                 if (g.opset() >= 16) {
                   attrs.push_back({"coordinate_transformation_mode",
                                    std::string(aligned ? "half_pixel" : "output_half_pixel")});
                 } else if (aligned) {
                   boxes = g.op("Sub", {boxes, g.constant_scalar(0.5 / scale, dt)});
                 }
                 return g.op("RoiAlign", {x, boxes, batch}, attrs);
               });

// roi_pool(input, rois [K, 5], spatial_scale, pooled_height, pooled_width) -> (output,
// argmax): MaxRoiPool, whose rounding of box corners and bins is torchvision's. The argmax
// (for the backward pass) has no ONNX form; using it fails the export.
TONNX_SYMBOLIC("torchvision::roi_pool", 9,
               [](SymbolicContext& g, Value* x, Value* rois, double scale, int64_t ph,
                  int64_t pw) -> Outputs {
                 if (ph <= 0 || pw <= 0)
                   g.fail("output_size must be positive, got (" + std::to_string(ph) + ", " +
                          std::to_string(pw) + ")");
                 Value* r = g.cast(rois, g.scalar_type(0));
                 return {g.op("MaxRoiPool", {x, r},
                              {{"pooled_shape", ir::Ints{ph, pw}}, {"spatial_scale", scale}}),
                         nullptr};
               });

}  // namespace
}  // namespace tonnx::sym
