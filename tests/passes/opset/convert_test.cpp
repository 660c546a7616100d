// The opset converter (passes/opset/): each adapter up and down on one node, the converted
// model run on tonnx's backend and on ONNX Runtime, both held to the original model's outputs
// (computed by tonnx at the original opset); and what no adapter can say, refused by name.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "node_case.h"
#include "tonnx/opset.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::test::expect_error;
using tonnx::test::NodeCase;

constexpr float kInfinite = std::numeric_limits<float>::infinity();

ir::Attr ints_of(const std::string& name, ir::Ints v) { return {name, ir::AttrValue(v)}; }
at::Tensor int64s(std::vector<int64_t> v) { return torch::tensor(v, torch::kLong); }

// Converts the node's model to each target; the result must compute what the original did.
void expect_converts(const NodeCase& c, std::vector<int> targets, const std::string& name,
                     double rtol = 1e-5, double atol = 1e-6) {
  std::vector<at::Tensor> in = tonnx::test::defined_inputs(c);
  ir::Model original = tonnx::test::node_model(c);
  std::vector<at::Tensor> want =
      tonnx::backend::prepare(tonnx::model_to_proto(original), "CPU").run(in);
  for (int target : targets) {
    SCOPED_TRACE(c.op + " from opset " + std::to_string(c.opset) + " to " + std::to_string(target));
    ir::Model m = tonnx::test::node_model(c);
    tonnx::OpsetConversion r = tonnx::convert_opset(m, target);
    EXPECT_EQ(r.to, target);
    EXPECT_EQ(ir::opset_version(m.opsets, ""), target);
    tonnx::test::run_model_on_both(m, in, name + "_to" + std::to_string(target), rtol, atol, want);
  }
}

TEST(OpsetConvert, AttributesBecomeInputsAndBack) {
  torch::manual_seed(1);
  at::Tensor x = torch::randn({3, 5, 4});
  expect_converts(
      {"Slice",
       9,
       {x},
       {ints_of("starts", {1, -3}), ints_of("ends", {3, 100}), ints_of("axes", {1, 2})}},
      {10, 13, 23}, "slice");
  expect_converts({"TopK", 9, {x}, {{"k", ir::AttrValue(int64_t{2})}}, 2}, {10, 18}, "topk");
  expect_converts(
      {"Split", 12, {x}, {{"axis", ir::AttrValue(int64_t{1})}, ints_of("split", {2, 3})}, 2},
      {13, 18, 11}, "split");
  expect_converts({"Squeeze", 12, {torch::randn({3, 1, 4})}, {ints_of("axes", {1})}}, {13, 23, 11},
                  "squeeze");
  expect_converts({"Unsqueeze", 12, {x}, {ints_of("axes", {0, 3})}}, {13, 20, 9}, "unsqueeze");
  expect_converts(
      {"ReduceSum", 12, {x}, {ints_of("axes", {1}), {"keepdims", ir::AttrValue(int64_t{0})}}},
      {13, 23, 9}, "reduce_sum");
  expect_converts({"ReduceMean", 17, {x}, {ints_of("axes", {0, 2})}}, {18, 23, 13, 9},
                  "reduce_mean");
  expect_converts(
      {"Pad", 10, {x}, {ints_of("pads", {0, 1, 2, 0, 0, 1}), {"value", ir::AttrValue(1.5f)}}},
      {11, 18, 23}, "pad");
  expect_converts({"Dropout", 11, {x}, {{"ratio", ir::AttrValue(0.25f)}}}, {12, 22}, "dropout");
  // Split-13 into equal parts needs num_outputs at 18; an empty constant axes input is no axes.
  expect_converts({"Split", 13, {torch::randn({2, 6})}, {{"axis", ir::AttrValue(int64_t{1})}}, 3},
                  {18, 23}, "split_equal");
  expect_converts(NodeCase("ReduceMax", 18, {x, int64s({})}).with_constants({1}), {17, 11},
                  "reduce_empty_axes");
}

TEST(OpsetConvert, MeaningsThatChangedAreKept) {
  torch::manual_seed(2);
  // Clip-6 clamps inf to the float range when a bound is absent; 11 must say it explicitly.
  at::Tensor e = torch::tensor({-kInfinite, -2.f, 0.5f, 3.f, kInfinite});
  expect_converts({"Clip", 10, {e}, {{"min", ir::AttrValue(-1.f)}}}, {11, 13, 23}, "clip");
  // Softmax-12 coerces to 2-D at axis 1; 13 works along one axis.
  at::Tensor x = torch::randn({2, 3, 4});
  expect_converts({"Softmax", 12, {x}}, {13, 18}, "softmax_axis1");
  expect_converts({"LogSoftmax", 11, {x}, {{"axis", ir::AttrValue(int64_t{2})}}}, {13},
                  "logsoftmax");
  expect_converts({"Softmax", 13, {x}}, {12, 11}, "softmax_last_down");
  // Resize-10: asymmetric coordinates, nearest rounded down.
  at::Tensor img = torch::randn({1, 1, 3, 4});
  for (const char* mode : {"nearest", "linear"})
    expect_converts({"Resize",
                     10,
                     {img, torch::tensor({1.f, 1.f, 1.7f, 0.6f})},
                     {{"mode", ir::AttrValue(mode)}}},
                    {11, 13, 18}, std::string("resize_") + mode);
  expect_converts({"Upsample", 9, {img, torch::tensor({1.f, 1.f, 2.f, 2.f})}}, {10, 13},
                  "upsample");
  expect_converts(
      {"Scatter",
       10,
       {torch::zeros({2, 3}), int64s({0, 2, 1, 1}).reshape({2, 2}), torch::randn({2, 2})},
       {{"axis", ir::AttrValue(int64_t{1})}}},
      {11, 18}, "scatter");
  // Split-18's num_outputs to sizes (the dim is known from the input's type).
  expect_converts(
      {"Split",
       18,
       {torch::randn({2, 7})},
       {{"axis", ir::AttrValue(int64_t{1})}, {"num_outputs", ir::AttrValue(int64_t{3})}},
       3},
      {17, 13}, "split_num_outputs");
  // Pad-18's axes input to pads for every axis.
  expect_converts(
      NodeCase("Pad", 18, {x, int64s({1, 2, 0, 1}), torch::tensor(2.f), int64s({-1, 0})})
          .with_constants({1, 2, 3}),
      {17, 11}, "pad_axes");
  // GridSample-20's renamed modes.
  at::Tensor grid = torch::rand({1, 2, 2, 2}) * 2 - 1;
  expect_converts({"GridSample", 16, {img, grid}, {{"mode", ir::AttrValue("bicubic")}}}, {20, 23},
                  "grid_sample", 1e-4, 1e-5);
}

TEST(OpsetConvert, NewerOpsBecomeTheirDefinitionsBelowTheirOpset) {
  torch::manual_seed(3);
  at::Tensor e = torch::tensor({-kInfinite, -4.f, -3.f, -1.f, 0.f, 2.f, 3.f, 5.f, kInfinite});
  expect_converts({"HardSwish", 14, {e}}, {13, 9}, "hard_swish");
  at::Tensor x = torch::randn({2, 3, 4}) * 5 + 2;
  expect_converts(NodeCase("LayerNormalization", 17, {x, torch::rand({4}) + 0.5, torch::randn({4})})
                      .with_constants({1, 2}),
                  {16, 13}, "layer_norm_last", 1e-4, 1e-5);
  expect_converts(NodeCase("LayerNormalization", 17, {x, torch::rand({3, 4}) + 0.5},
                           {{"axis", ir::AttrValue(int64_t{1})}, {"epsilon", ir::AttrValue(1e-2f)}})
                      .with_constants({1}),
                  {16, 11}, "layer_norm_axis1", 1e-4, 1e-5);
  expect_converts(NodeCase("Reshape", 14, {x, int64s({4, -1})}).with_constants({1}), {13, 9},
                  "reshape");
}

TEST(OpsetConvert, WhatTheTargetCannotSayIsRefusedByName) {
  at::Tensor x = torch::randn({2, 3, 4});
  auto convert = [](const NodeCase& c, int target) {
    ir::Model m = tonnx::test::node_model(c);
    tonnx::convert_opset(m, target);
  };
  expect_error(
      [&] {
        convert({"Softmax", 13, {x}, {{"axis", ir::AttrValue(int64_t{1})}}}, 12);
      },
      "works along axis 1 of 3, not the last");
  expect_error(
      [&] {
        convert(NodeCase("Clip", 11, {x, torch::tensor(0.f)}).with_constants({1}), 10);
      },
      "has no max");
  expect_error(
      [&] {
        convert({"Clip", 11, {x, torch::tensor(0.f)}}, 10);
      },
      "min is not a float constant");
  expect_error(
      [&] {
        convert({"ReduceMean", 18, {x}, {{"noop_with_empty_axes", ir::AttrValue(int64_t{1})}}}, 17);
      },
      "reduces over no axis");
  expect_error([&] { convert({"Gelu", 20, {x}}, 19); }, "Gelu does not exist at opset 19");
  expect_error(
      [&] {
        convert({"Mish", 18, {x}}, 17);
      },
      "(Mish) cannot be converted from opset 18 to 17");
  expect_error(
      [&] {
        convert(
            {"Resize", 18, {x, at::Tensor(), torch::tensor({1.f, 2.f})}, {ints_of("axes", {1, 2})}},
            17);
      },
      "axes");
  expect_error(
      [&] {
        convert(NodeCase("Reshape", 14, {x, int64s({0, -1})},
                         {{"allowzero", ir::AttrValue(int64_t{1})}})
                    .with_constants({1}),
                13);
      },
      "allowzero=1");
  expect_error(
      [&] {
        convert({"LayerNormalization", 17, {x, torch::ones({4})}, {}, 3}, 16);
      },
      "Mean and InvStdDev");
  expect_error(
      [&] {
        convert(NodeCase("ReduceL2", 18, {x, int64s({})},
                         {{"noop_with_empty_axes", ir::AttrValue(int64_t{1})}})
                    .with_constants({1}),
                17);
      },
      "reduces over no axis");
  expect_error(
      [&] {
        convert({"Split", 18, {x}, {{"num_outputs", ir::AttrValue(int64_t{1000000000000})}}, 2},
                17);
      },
      "num_outputs is 1000000000000 but the node has 2 outputs");
  expect_error(
      [&] {
        convert({"BatchNormalization",
                 9,
                 {x, torch::ones({3}), torch::zeros({3}), torch::zeros({3}), torch::ones({3})},
                 {},
                 3},
                14);
      },
      "training mode");
  expect_error(
      [&] {
        convert({"OneHot", 10, {int64s({1, 0}), int64s({3}), torch::tensor({0.f, 1.f})}}, 11);
      },
      "negative indices");
  expect_error([&] { convert({"Relu", 13, {x}}, 24); }, "target opset 24 is out of range");
  expect_error([&] { convert({"Relu", 8, {x}}, 13); }, "imports ai.onnx opset 8");
}

TEST(OpsetConvert, ConstantsTheAdaptersNeedMustBeConstants) {
  // A ReduceMean-18 whose axes are a graph input: opset 17 needs them as an attribute.
  tonnx::test::GraphBuilder b;
  b.m.opsets = {{"", 18}};
  ir::Value* x = b.in("x");
  ir::Value* axes = b.in("axes");
  b.out(b.op("ReduceMean", {x, axes}), "y");
  expect_error([&] { tonnx::convert_opset(b.m, 17); },
               "axes is computed at run time (input 1 is not a constant); opset 17 needs it as "
               "an attribute");
}

}  // namespace
