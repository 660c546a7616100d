// The adapters of the opset converter: one per op and opset where the op's inputs, attributes
// or meaning changed between opsets 9 and 23 (facts from ONNX's Operators.md and Changelog.md),
// each with its step up and down. A change that only adds types, or an attribute or input
// whose default keeps the old meaning, needs none: convert.cpp checks each converted node
// against the target's schema, and refuses what the target does not define.
#include <algorithm>
#include <limits>

#include "passes/opset/adapters.h"

namespace tonnx::passes::opset {
namespace {

// Slice-10: starts, ends and axes as inputs (and steps, new).
void slice_up(Step& s) {
  s.ints_attr_to_input("starts", 1);
  s.ints_attr_to_input("ends", 2);
  s.ints_attr_to_input("axes", 3);
}
void slice_down(Step& s) {
  if (s.n->input(4)) {
    const at::Tensor* steps = s.constant(s.n->input(4));
    if (!steps || !steps->eq(1).all().item<bool>())
      s.fail("steps other than 1 do not exist before opset 10");
    s.n->replace_input(4, nullptr);
  }
  s.input_to_ints_attr(3, "axes");
  s.input_to_ints_attr(2, "ends");
  s.input_to_ints_attr(1, "starts");
}

void topk_up(Step& s) {
  if (!s.n->has_attr("k")) s.fail("has no k");
  at::Tensor k = at::tensor({s.n->attr_i("k", 0)}, at::kLong);
  s.n->remove_attr("k");
  s.set_input(1, s.add_constant(k, "k"));
}
void topk_down(Step& s) {
  const at::Tensor* k = s.constant(s.n->input(1));
  if (!k || k->numel() != 1) s.fail("k is computed at run time; opset 9 needs it as an attribute");
  s.n->set_attr("k", ir::AttrValue(k->reshape({-1})[0].item<int64_t>()));
  s.n->replace_input(1, nullptr);
}

// Upsample is deprecated at 10: Resize-10 takes the same X, scales and mode.
void upsample_up(Step& s) { s.replace_op("Resize"); }
void upsample_down(Step& s) {
  if (s.n->op_type() == "Resize") s.replace_op("Upsample");
}

void pool_ceil_down(Step& s) { s.refuse_attr_unless("ceil_mode", 0, "ceil_mode exists from 10"); }

// Clip-11: min and max as inputs. Opset 6 clamps to the float range when one is absent (inf
// becomes the largest float), 11 does not clamp: the step up writes the range explicitly, the
// step down refuses an absent bound.
void clip_up(Step& s) {
  float lo = s.n->attr_f("min", std::numeric_limits<float>::lowest());
  float hi = s.n->attr_f("max", std::numeric_limits<float>::max());
  s.n->remove_attr("min");
  s.n->remove_attr("max");
  s.set_input(1, s.add_constant(s.scalar_of_input_type(lo, "min"), "min"));
  s.set_input(2, s.add_constant(s.scalar_of_input_type(hi, "max"), "max"));
}
void clip_down(Step& s) {
  for (size_t i = 1; i < 3; ++i) {
    const char* name = i == 1 ? "min" : "max";
    if (!s.n->input(i))
      s.fail(std::string("has no ") + name + ": opset 10 would clamp inf to the float range " +
             "where 11 keeps it");
    const at::Tensor* t = s.constant(s.n->input(i));
    if (!t || t->numel() != 1 || !at::isFloatingType(t->scalar_type()))
      s.fail(std::string(name) + " is not a float constant; opset 10 needs an attribute");
    s.n->set_attr(name, ir::AttrValue(t->to(at::kFloat).reshape({-1})[0].item<float>()));
    s.n->replace_input(i, nullptr);
  }
}

// Pad-11: pads and the constant value as inputs.
void pad_up_11(Step& s) {
  ir::Ints pads = s.n->attr_ints("pads");
  float value = s.n->attr_f("value", 0.0f);
  s.n->remove_attr("pads");
  s.n->remove_attr("value");
  s.set_input(1, s.add_constant(at::tensor(pads, at::kLong), "pads"));
  if (value != 0.0f)
    s.set_input(2, s.add_constant(s.scalar_of_input_type(value, "value"), "value"));
}
void pad_down_11(Step& s) {
  s.input_to_ints_attr(1, "pads");
  if (s.n->input(2)) {
    const at::Tensor* v = s.constant(s.n->input(2));
    if (!v || v->numel() > 1) s.fail("the pad value is computed at run time");
    if (v->numel() == 1) s.n->set_attr("value", ir::AttrValue(v->to(at::kDouble).item<double>()));
    s.n->replace_input(2, nullptr);
  }
}

// Resize-11: roi and sizes inputs and the coordinate modes; opset 10's meaning is
// asymmetric coordinates and nearest rounded down, which the step up writes explicitly.
void resize_up_11(Step& s) {
  s.n->set_attr("coordinate_transformation_mode", ir::AttrValue("asymmetric"));
  if (s.n->attr_s("mode", "nearest") == "nearest")
    s.n->set_attr("nearest_mode", ir::AttrValue("floor"));
  ir::Value* scales = s.n->input(1);
  s.set_input(1, s.add_constant(at::empty({0}, at::kFloat), "roi"));
  s.set_input(2, scales);
}
void resize_down_11(Step& s) {
  // (Absent, they are half_pixel and round_prefer_floor at 11.)
  if (s.n->attr_s("coordinate_transformation_mode", "half_pixel") != "asymmetric")
    s.fail("opset 10 resizes with asymmetric coordinates only");
  if (s.n->attr_s("mode", "nearest") == "nearest" &&
      s.n->attr_s("nearest_mode", "round_prefer_floor") != "floor")
    s.fail("opset 10 rounds nearest down only (nearest_mode floor)");
  if (s.n->attr_s("mode", "nearest") == "cubic") s.fail("cubic mode exists from opset 11");
  s.refuse_attr_unless("exclude_outside", 0, "exclude_outside exists from 11");
  s.refuse_input(3, "sizes exist from opset 11");
  for (const char* a :
       {"coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "extrapolation_value"})
    s.n->remove_attr(a);
  ir::Value* scales = s.n->input(2);
  if (!scales) s.fail("has no scales");
  s.n->replace_input(1, scales);
  s.n->replace_input(2, nullptr);
}

void scatter_up(Step& s) { s.replace_op("ScatterElements"); }
void scatter_down(Step& s) { s.replace_op("Scatter"); }

// Dropout-12: ratio (and training_mode) as inputs.
void dropout_up_12(Step& s) {
  float ratio = s.n->attr_f("ratio", 0.5f);
  s.n->remove_attr("ratio");
  s.set_input(1, s.add_constant(at::scalar_tensor(ratio, at::kFloat), "ratio"));
}
void dropout_down_12(Step& s) {
  if (s.n->input(2)) {
    const at::Tensor* t = s.constant(s.n->input(2));
    if (!t || t->numel() != 1 || t->item<double>() != 0)
      s.fail("training_mode is not a constant false; opset 11's Dropout is inference only");
    s.n->replace_input(2, nullptr);
  }
  if (s.n->input(1)) {
    const at::Tensor* t = s.constant(s.n->input(1));
    if (!t || t->numel() != 1) s.fail("the ratio is computed at run time");
    s.n->set_attr("ratio", ir::AttrValue(t->to(at::kFloat).item<float>()));
    s.n->replace_input(1, nullptr);
  }
}
void select_last_down(Step& s) {
  s.refuse_attr_unless("select_last_index", 0, "select_last_index exists from 12");
}
void batch_dims_down(Step& s) {
  s.refuse_attr_unless("batch_dims", 0, "batch_dims exists from 12");
}

// Opset 13: split, axes of Squeeze/Unsqueeze and ReduceSum as inputs.
void split_up_13(Step& s) { s.ints_attr_to_input("split", 1); }
void split_down_13(Step& s) { s.input_to_ints_attr(1, "split"); }
void axes_up(Step& s) { s.ints_attr_to_input("axes", 1); }
void axes_down(Step& s) { s.input_to_ints_attr(1, "axes"); }
void reduce_down(Step& s) {
  // An empty constant axes input is no axes input (absent, or with the attribute, all axes).
  if (const at::Tensor* a = s.constant(s.n->input(1)); a && a->numel() == 0)
    s.n->replace_input(1, nullptr);
  if (s.n->attr_i("noop_with_empty_axes", 0) != 0 && !s.n->input(1))
    s.fail("reduces over no axis (noop_with_empty_axes), which does not exist before opset " +
           std::to_string(s.version));
  s.n->remove_attr("noop_with_empty_axes");
  s.input_to_ints_attr(1, "axes");
}

// Softmax, LogSoftmax and Hardmax-13 work along one axis; 12 coerces the input to 2-D at `axis`
// (default 1). Equal where the axis is the last; elsewhere the step up flattens and reshapes
// back, the step down refuses.
void softmax_up(Step& s) {
  int64_t axis = s.n->attr_i("axis", 1);
  int64_t r = Step::rank_of(s.n->input(0));
  if (axis == -1 || (r > 0 && (axis + r) % r == r - 1)) {
    s.n->set_attr("axis", ir::AttrValue(int64_t{-1}));
    return;
  }
  ir::Value* x = s.n->input(0);
  ir::Node* shape = s.g.add_node("Shape", {x}, {}, 1, "", s.n);
  ir::Node* flat = s.g.add_node("Flatten", {x}, {{"axis", ir::AttrValue(axis)}}, 1, "", s.n);
  ir::Node* op = s.g.add_node(s.n->op_type(), {flat->output()},
                              {{"axis", ir::AttrValue(int64_t{-1})}}, 1, "", s.n);
  for (ir::Node* m : {shape, flat, op}) s.name_new(m);
  s.replace_with("Reshape", {op->output(), shape->output()}, {});
}
void softmax_down(Step& s) {
  int64_t axis = s.n->attr_i("axis", -1);
  int64_t r = Step::rank_of(s.n->input(0));
  if (axis == -1 || (r > 0 && (axis + r) % r == r - 1)) {
    s.n->set_attr("axis", ir::AttrValue(axis));
    return;
  }
  s.fail("works along axis " + std::to_string(axis) +
         (r > 0 ? " of " + std::to_string(r) : std::string(" of an input of unknown rank")) +
         ", not the last; opset 12 coerces the input to 2-D there");
}
// Resize-13: roi and scales optional.
void resize_down_13(Step& s) {
  if (!s.n->input(1)) s.set_input(1, s.add_constant(at::empty({0}, at::kFloat), "roi"));
  if (!s.n->input(2)) s.set_input(2, s.add_constant(at::empty({0}, at::kFloat), "scales"));
}

// RoiAlign-16: coordinate_transformation_mode, default half_pixel; 10's meaning is
// output_half_pixel.
void roi_align_up(Step& s) {
  if (!s.n->has_attr("coordinate_transformation_mode"))
    s.n->set_attr("coordinate_transformation_mode", ir::AttrValue("output_half_pixel"));
}
void roi_align_down(Step& s) {
  if (s.n->attr_s("coordinate_transformation_mode", "half_pixel") != "output_half_pixel")
    s.fail("uses half_pixel coordinates, which exist from opset 16");
  s.n->remove_attr("coordinate_transformation_mode");
}
void reduction_down_16(Step& s) {
  s.refuse_attr_unless("reduction", "none", "reduction exists from 16");
}

// Opset 18: the other reductions' axes as an input; Pad's axes, Split's num_outputs, Resize's
// antialias, axes and keep_aspect_ratio_policy, max and min scatters, LpPool's ceil_mode.
void pad_down_18(Step& s) {
  if (!s.n->input(3)) return;
  const at::Tensor* axes = s.constant(s.n->input(3));
  const at::Tensor* pads = s.constant(s.n->input(1));
  int64_t r = Step::rank_of(s.n->input(0));
  if (!axes || !pads || r < 0)
    s.fail(
        "pads only some axes (its axes input), which opset 17 cannot say unless axes and "
        "pads are constants and the input's rank is known");
  std::vector<int64_t> full(2 * r, 0);
  at::Tensor a = axes->to(at::kLong).reshape({-1}), p = pads->to(at::kLong).reshape({-1});
  int64_t k = a.numel();
  if (p.numel() != 2 * k)
    s.fail("pads has " + std::to_string(p.numel()) + " values for " + std::to_string(k) + " axes");
  for (int64_t i = 0; i < k; ++i) {
    int64_t d = a[i].item<int64_t>();
    if (d < -r || d >= r) s.fail("axis " + std::to_string(d) + " is out of range");
    d = d < 0 ? d + r : d;
    full[d] = p[i].item<int64_t>();
    full[d + r] = p[i + k].item<int64_t>();
  }
  s.n->replace_input(1, s.add_constant(at::tensor(full, at::kLong), "pads"));
  s.n->replace_input(3, nullptr);
}
void split_down_18(Step& s) {
  if (!s.n->has_attr("num_outputs")) return;
  int64_t parts = s.n->attr_i("num_outputs", 0);
  if (!s.n->input(0)) s.fail("has no input");
  if (parts != static_cast<int64_t>(s.n->outputs().size()))
    s.fail("num_outputs is " + std::to_string(parts) + " but the node has " +
           std::to_string(s.n->outputs().size()) + " outputs");
  const std::optional<ir::TensorType>& t = s.n->input(0)->type();
  int64_t axis = s.n->attr_i("axis", 0);
  int64_t r = Step::rank_of(s.n->input(0));
  int64_t len = -1;
  if (r > 0 && axis >= -r && axis < r) {
    const ir::Dim& d = (*t->shape)[axis < 0 ? axis + r : axis];
    if (d.value) len = *d.value;
  }
  if (len < 0 || parts < 1)
    s.fail(
        "splits into num_outputs parts of a dim whose size is known only at run time; "
        "opset 17 needs the sizes");
  int64_t chunk = (len + parts - 1) / parts;
  if (chunk * (parts - 1) >= len && len > 0)
    s.fail("a dim of " + std::to_string(len) + " cannot be split into " + std::to_string(parts) +
           " parts of ceil(" + std::to_string(len) + " / " + std::to_string(parts) +
           ") with a last one left");
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < parts; ++i)
    sizes.push_back(std::max<int64_t>(0, std::min(chunk, len - chunk * i)));
  s.n->remove_attr("num_outputs");
  s.set_input(1, s.add_constant(at::tensor(sizes, at::kLong), "split"));
}
void resize_down_18(Step& s) {
  s.refuse_attr_unless("antialias", 0, "antialias exists from opset 18");
  s.refuse_attr_unless("keep_aspect_ratio_policy", "stretch",
                       "keep_aspect_ratio_policy exists from opset 18");
  if (s.n->has_attr("axes")) s.fail("resizes only some axes (axes), which exists from opset 18");
}
void reduction_down_18(Step& s) {
  std::string r = s.n->attr_s("reduction", "none");
  if (r == "max" || r == "min") s.fail("reduction " + r + " exists from opset 18");
}
void lp_pool_down(Step& s) { s.refuse_attr_unless("ceil_mode", 0, "ceil_mode exists from 18"); }
void optional_down(Step& s) {
  s.fail(
      "at opset 18 takes a tensor or a sequence as well as an optional; which one this "
      "node reads is not known here");
}

// Opset 19: AveragePool's dilations, Pad's wrap, Resize's half_pixel_symmetric, saturation.
void average_pool_down(Step& s) {
  for (int64_t d : s.n->attr_ints("dilations"))
    if (d != 1) s.fail("dilations exist from opset 19");
  s.n->remove_attr("dilations");
}
void pad_down_19(Step& s) {
  if (s.n->attr_s("mode", "constant") == "wrap") s.fail("mode wrap exists from opset 19");
}
void resize_down_19(Step& s) {
  if (s.n->attr_s("coordinate_transformation_mode", "") == "half_pixel_symmetric")
    s.fail("half_pixel_symmetric exists from opset 19");
}
void saturate_down(Step& s) {
  int64_t to = s.n->attr_i("to", s.n->attr_i("output_dtype", 0));
  if (to >= 17 && to <= 20) s.fail("float8 types exist from opset 19");
  s.n->remove_attr("saturate");
}

// Opset 20: GridSample's modes renamed (and any rank), DFT's axis as an input (default -2).
void grid_sample_up(Step& s) {
  std::string m = s.n->attr_s("mode", "bilinear");
  s.n->set_attr("mode", ir::AttrValue(m == "bilinear" ? "linear" : m == "bicubic" ? "cubic" : m));
}
void grid_sample_down(Step& s) {
  std::string m = s.n->attr_s("mode", "linear");
  if (m != "linear" && m != "cubic" && m != "nearest") s.fail("mode '" + m + "' is unknown");
  s.n->set_attr("mode", ir::AttrValue(m == "linear" ? "bilinear" : m == "cubic" ? "bicubic" : m));
  int64_t r = Step::rank_of(s.n->input(0));
  if (r != 4)
    s.fail("samples an input of rank " + (r < 0 ? std::string("unknown") : std::to_string(r)) +
           "; opset 19 samples 4-D only");
}
void dft_up(Step& s) {
  int64_t axis = s.n->attr_i("axis", 1);
  s.n->remove_attr("axis");
  s.set_input(2, s.add_constant(at::scalar_tensor(axis, at::kLong), "axis"));
}
void dft_down(Step& s) {
  int64_t axis = -2;
  if (s.n->input(2)) {
    const at::Tensor* a = s.constant(s.n->input(2));
    if (!a || a->numel() != 1)
      s.fail("axis is computed at run time; opset 19 needs it as an attribute");
    axis = a->to(at::kLong).reshape({-1})[0].item<int64_t>();
  }
  int64_t r = Step::rank_of(s.n->input(0));
  if (axis < 0) {
    if (r < 0) s.fail("axis " + std::to_string(axis) + " of an input of unknown rank");
    axis += r;
  }
  s.n->set_attr("axis", ir::AttrValue(axis));
  s.n->replace_input(2, nullptr);
}

// Opset 21: blocked quantization; GroupNormalization's scale and bias per channel.
void block_size_down(Step& s) {
  s.refuse_attr_unless("block_size", 0, "blocked quantization exists from opset 21");
  s.refuse_attr_unless("output_dtype", 0, "output_dtype exists from opset 21");
}
void group_norm_step(Step& s) {
  s.fail(s.up ? "GroupNormalization-18 (scale and bias per group) has no opset-21 form: ONNX "
                "deprecated it"
              : "GroupNormalization-21 has no earlier form but the deprecated one");
}

// Split-18 without the split input needs num_outputs (13 split into equal parts).
void split_up_18(Step& s) {
  if (!s.n->input(1) && !s.n->has_attr("num_outputs"))
    s.n->set_attr("num_outputs", ir::AttrValue(static_cast<int64_t>(s.n->outputs().size())));
}
// Resize-13 drops tf_half_pixel_for_nn.
void resize_up_13(Step& s) {
  if (s.n->attr_s("coordinate_transformation_mode", "") == "tf_half_pixel_for_nn")
    s.fail("coordinate_transformation_mode tf_half_pixel_for_nn does not exist from opset 13");
}
// BatchNormalization-9 with more than one output is training mode; 14 says it with
// training_mode (and its outputs differ).
void batchnorm_up_14(Step& s) {
  if (s.n->outputs().size() > 1)
    s.fail("has the outputs of training mode, whose meaning changed at opset 14");
}
// OneHot-11 wraps negative indices; 9 and 10 give off_value for them.
void one_hot_step(Step& s) {
  s.fail(
      "negative indices mean off_value before opset 11 and count from the end from 11; "
      "whether this node's indices can be negative is not known here");
}

// Opset 14 and 15's attributes whose default is the old meaning: dropped when at it.
void reshape_down(Step& s) {
  if (s.n->attr_i("allowzero", 0) != 0) {
    const at::Tensor* shape = s.constant(s.n->input(1));
    if (!shape || shape->eq(0).any().item<bool>())
      s.fail(
          "allowzero=1 with a shape that may hold 0 (a size of 0, not a copied dim) exists "
          "from opset 14");
  }
  s.n->remove_attr("allowzero");
}
void training_mode_down(Step& s) {
  s.refuse_attr_unless("training_mode", 0, "training_mode exists from opset 14");
  if (s.n->outputs().size() > 1)
    s.fail("has more than one output, which means training mode before opset 14");
}
void layout_down(Step& s) {
  s.refuse_attr_unless("layout", 0, "the batch-first layout exists from opset 14");
}
void shape_down(Step& s) {
  if (s.n->attr_i("start", 0) != 0 || s.n->has_attr("end"))
    s.fail("start and end (a slice of the shape) exist from opset 15");
  s.n->remove_attr("start");
}

// HardSwish exists from 14: below, its definition x * HardSigmoid(x) (alpha 1/6, beta 0.5).
void hard_swish_down(Step& s) {
  ir::Value* x = s.n->input(0);
  ir::Node* hs =
      s.g.add_node("HardSigmoid", {x},
                   {{"alpha", ir::AttrValue(1.0f / 6)}, {"beta", ir::AttrValue(0.5f)}}, 1, "", s.n);
  s.name_new(hs);
  s.replace_with("Mul", {x, hs->output()}, {});
}

// LayerNormalization exists from 17: below, its definition as ONNX's function body states it
// (mean and variance over the axes from `axis` on, in the input's type; Y only).
void layer_norm_down(Step& s) {
  ir::Node& n = *s.n;
  if (n.outputs().size() > 1) s.fail("its Mean and InvStdDev outputs have no earlier form");
  if (n.attr_i("stash_type", 1) != 1) s.fail("stash_type other than 1 has no earlier form");
  if (!n.input(0)) s.fail("has no X");
  int64_t axis = n.attr_i("axis", -1), r = Step::rank_of(n.input(0));
  if (axis < -64 || axis > 64 || (r >= 0 && (axis < -r || axis >= r)))
    s.fail("axis " + std::to_string(axis) + " is out of range");
  at::ScalarType stash = s.input_type();
  if (stash != at::kFloat && stash != at::kDouble)
    s.fail("its statistics are computed in float (stash_type 1) for an input of " +
           std::string(c10::toString(stash)) +
           "; the decomposition computes in the input's "
           "type");
  ir::Ints axes;
  if (axis < 0) {
    for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
  } else {
    if (r < 0)
      s.fail("normalizes from axis " + std::to_string(axis) + " of an input of unknown rank");
    for (int64_t a = axis; a < r; ++a) axes.push_back(a);
  }
  const std::optional<ir::TensorType>& xt = n.input(0)->type();
  at::ScalarType type =
      xt && xt->dtype != ir::DType::Undefined ? ir::scalar_type_from_dtype(xt->dtype) : at::kFloat;
  ir::Value *x = n.input(0), *scale = n.input(1), *bias = n.input(2);
  auto add = [&](const char* op, std::vector<ir::Value*> in, std::vector<ir::Attr> attrs = {}) {
    ir::Node* m = s.g.add_node(op, std::move(in), std::move(attrs), 1, "", s.n);
    s.name_new(m);
    return m->output();
  };
  std::vector<ir::Attr> over{{"axes", ir::AttrValue(axes)},
                             {"keepdims", ir::AttrValue(int64_t{1})}};
  ir::Value* d = add("Sub", {x, add("ReduceMean", {x}, over)});
  ir::Value* var = add("ReduceMean", {add("Mul", {d, d})}, over);
  ir::Value* eps = s.add_constant(at::scalar_tensor(n.attr_f("epsilon", 1e-5f), type), "epsilon");
  ir::Value* normalized = add("Div", {d, add("Sqrt", {add("Add", {var, eps})})});
  if (bias)
    s.replace_with("Add", {add("Mul", {normalized, scale}), bias}, {});
  else
    s.replace_with("Mul", {normalized, scale}, {});
}

}  // namespace

const std::vector<AdapterEntry>& adapters() {
  static const std::vector<AdapterEntry> table = {
      {"Slice", 10, slice_up, slice_down},
      {"TopK", 10, topk_up, topk_down},
      {"Upsample", 10, upsample_up, nullptr},
      {"Resize", 10, nullptr, upsample_down},
      {"AveragePool", 10, nullptr, pool_ceil_down},
      {"MaxPool", 10, nullptr, pool_ceil_down},
      {"Clip", 11, clip_up, clip_down},
      {"Pad", 11, pad_up_11, pad_down_11},
      {"Resize", 11, resize_up_11, resize_down_11},
      {"Scatter", 11, scatter_up, nullptr},
      {"ScatterElements", 11, nullptr, scatter_down},
      {"OneHot", 11, one_hot_step, one_hot_step},
      {"Dropout", 12, dropout_up_12, dropout_down_12},
      {"ArgMax", 12, nullptr, select_last_down},
      {"ArgMin", 12, nullptr, select_last_down},
      {"GatherND", 12, nullptr, batch_dims_down},
      {"Split", 13, split_up_13, split_down_13},
      {"Squeeze", 13, axes_up, axes_down},
      {"Unsqueeze", 13, axes_up, axes_down},
      {"ReduceSum", 13, axes_up, reduce_down},
      {"Softmax", 13, softmax_up, softmax_down},
      {"LogSoftmax", 13, softmax_up, softmax_down},
      {"Hardmax", 13, softmax_up, softmax_down},
      {"Resize", 13, resize_up_13, resize_down_13},
      {"HardSwish", 14, nullptr, hard_swish_down},
      {"Reshape", 14, nullptr, reshape_down},
      {"BatchNormalization", 14, batchnorm_up_14, training_mode_down},
      {"GRU", 14, nullptr, layout_down},
      {"LSTM", 14, nullptr, layout_down},
      {"RNN", 14, nullptr, layout_down},
      {"Shape", 15, nullptr, shape_down},
      {"RoiAlign", 16, roi_align_up, roi_align_down},
      {"LayerNormalization", 17, nullptr, layer_norm_down},
      {"ScatterElements", 16, nullptr, reduction_down_16},
      {"ScatterND", 16, nullptr, reduction_down_16},
      {"ReduceL1", 18, axes_up, reduce_down},
      {"ReduceL2", 18, axes_up, reduce_down},
      {"ReduceLogSum", 18, axes_up, reduce_down},
      {"ReduceLogSumExp", 18, axes_up, reduce_down},
      {"ReduceMax", 18, axes_up, reduce_down},
      {"ReduceMean", 18, axes_up, reduce_down},
      {"ReduceMin", 18, axes_up, reduce_down},
      {"ReduceProd", 18, axes_up, reduce_down},
      {"ReduceSumSquare", 18, axes_up, reduce_down},
      {"Pad", 18, nullptr, pad_down_18},
      {"Split", 18, split_up_18, split_down_18},
      {"Resize", 18, nullptr, resize_down_18},
      {"ScatterElements", 18, nullptr, reduction_down_18},
      {"ScatterND", 18, nullptr, reduction_down_18},
      {"LpPool", 18, nullptr, lp_pool_down},
      {"OptionalHasElement", 18, nullptr, optional_down},
      {"OptionalGetElement", 18, nullptr, optional_down},
      {"AveragePool", 19, nullptr, average_pool_down},
      {"Pad", 19, nullptr, pad_down_19},
      {"Resize", 19, nullptr, resize_down_19},
      {"Cast", 19, nullptr, saturate_down},
      {"CastLike", 19, nullptr, saturate_down},
      {"QuantizeLinear", 19, nullptr, saturate_down},
      {"GridSample", 20, grid_sample_up, grid_sample_down},
      {"DFT", 20, dft_up, dft_down},
      {"QuantizeLinear", 21, nullptr, block_size_down},
      {"DequantizeLinear", 21, nullptr, block_size_down},
      {"GroupNormalization", 21, group_norm_step, group_norm_step},
  };
  return table;
}

}  // namespace tonnx::passes::opset
