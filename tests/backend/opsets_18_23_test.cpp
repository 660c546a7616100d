// ai.onnx opsets 18 to 23 on tonnx's backend (backend/schemas.h; libonnx 1.12 knows none of
// them). Oracle: ONNX Runtime 1.30, which runs opsets up to 26: each case is one node, its
// inputs made here, and tonnx's outputs are written as the test data that ONNX Runtime must
// reproduce; where LibTorch has the op, its result too. Edge values: negative axes, NaN and inf,
// int64, broadcasting, empty tensors. Then what tonnx refuses, by name: versions whose new
// meaning it lacks, deprecated versions, opsets past 23, nodes the new schemas reject.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "node_case.h"
#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"
#include "test_config.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::test::expect_close;
using tonnx::test::expect_error;
using tonnx::test::node_model;
using tonnx::test::NodeCase;
using tonnx::test::run_on_both;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfinity = std::numeric_limits<float>::infinity();

ir::Attr ints_attr(const std::string& name, ir::Ints v) { return {name, ir::AttrValue(v)}; }
at::Tensor longs(std::vector<int64_t> v) { return torch::tensor(v, torch::kLong); }

TEST(Opsets18To23, ReductionsTakeAxesAsAnInput) {
  torch::manual_seed(1);
  at::Tensor x = torch::randn({2, 3, 4});
  x[0][1][2] = kNaN;
  at::Tensor y = run_on_both(
      {"ReduceMean", 18, {x, longs({1, -1})}, {{"keepdims", ir::AttrValue(0)}}}, "mean")[0];
  expect_close(y, x.mean({1, 2}));
  // No axes: every axis, or none with noop_with_empty_axes.
  y = run_on_both({"ReduceMax", 18, {torch::randn({3, 4})}}, "max_all")[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 1}));
  at::Tensor z = torch::randn({3, 4});
  y = run_on_both({"ReduceL2", 18, {z, at::Tensor()}, {{"noop_with_empty_axes", ir::AttrValue(1)}}},
                  "l2_noop")[0];
  expect_close(y, z.abs());  // over no axis: sqrt(x^2), as ONNX states it
  y = run_on_both(
      {"ReduceLogSum", 18, {z.abs(), longs({})}, {{"noop_with_empty_axes", ir::AttrValue(1)}}},
      "logsum_noop")[0];
  expect_close(y, z.abs().log());
  y = run_on_both({"ReduceLogSumExp", 18, {z * 30, longs({0})}}, "logsumexp")[0];
  expect_close(y, at::logsumexp(z * 30, {0}, true));
  y = run_on_both({"ReduceProd", 18, {longs({2, -3, 4, 5}).reshape({2, 2}), longs({-1})}},
                  "prod_int64")[0];
  EXPECT_TRUE(at::equal(y, longs({-6, 20}).reshape({2, 1})));
  // ReduceMin-20 (bool added; the kernel of 18 serves it) on an empty axis: the identity.
  y = run_on_both({"ReduceMin", 20, {torch::randn({2, 0}), longs({1})}}, "min_empty")[0];
  EXPECT_TRUE(y.isinf().all().item<bool>());
}

TEST(Opsets18To23, PadWithAxesAndSplitWithNumOutputs) {
  at::Tensor x = torch::arange(24, torch::kFloat).reshape({2, 3, 4});
  at::Tensor y = run_on_both(
      {"Pad", 18, {x, longs({1, 2, 0, 1}), torch::tensor(-1.f), longs({-1, 1})}}, "pad_axes")[0];
  expect_close(y, at::constant_pad_nd(x, {1, 0, 2, 1}, -1));
  y = run_on_both({"Pad",
                   19,
                   {x, longs({0, 2, 0, 2}), at::Tensor(), longs({0, 2})},
                   {{"mode", ir::AttrValue("reflect")}}},
                  "pad_reflect")[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 8}));
  run_on_both({"Pad", 21, {x, longs({1, 1, 1, 1, 1, 1})}, {{"mode", ir::AttrValue("edge")}}},
              "pad_edge");
  // 7 into 3: 3, 3, 1 (the last part smaller).
  std::vector<at::Tensor> parts =
      run_on_both({"Split",
                   18,
                   {torch::randn({2, 7})},
                   {{"axis", ir::AttrValue(-1)}, {"num_outputs", ir::AttrValue(3)}},
                   3},
                  "split_uneven");
  EXPECT_EQ(parts[2].size(1), 1);
  parts = run_on_both({"Split", 18, {longs({1, 2, 3, 4, 5}), longs({2, 3})}, {}, 2}, "split_sizes");
  EXPECT_TRUE(at::equal(parts[1], longs({3, 4, 5})));
}

TEST(Opsets18To23, ResizeOnTheListedAxesAndScatterMaxMin) {
  torch::manual_seed(2);
  at::Tensor x = torch::randn({1, 2, 3, 4});
  at::Tensor y = run_on_both({"Resize",
                              18,
                              {x, at::Tensor(), torch::tensor({2.f, 1.5f})},
                              {{"mode", ir::AttrValue("linear")}, ints_attr("axes", {2, -1})}},
                             "resize_axes_scales")[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 2, 6, 6}));
  y = run_on_both({"Resize",
                   19,
                   {x, at::Tensor(), at::Tensor(), longs({5})},
                   {{"mode", ir::AttrValue("nearest")}, ints_attr("axes", {3})}},
                  "resize_axes_sizes")[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 2, 3, 5}));
  at::Tensor data = torch::zeros({2, 3});
  at::Tensor idx = longs({0, 2, 0, 1, 1, -1}).reshape({2, 3});
  at::Tensor upd = torch::tensor({1.f, -2.f, 3.f, 4.f, kInfinity, -5.f}).reshape({2, 3});
  for (const char* r : {"max", "min"})
    run_on_both({"ScatterElements",
                 18,
                 {data, idx, upd},
                 {{"axis", ir::AttrValue(1)}, {"reduction", ir::AttrValue(r)}}},
                std::string("scatter_elements_") + r);
  run_on_both({"ScatterND",
               18,
               {torch::zeros({3, 2}), longs({0, 2, 0}).reshape({3, 1}),
                torch::tensor({1.f, 2.f, 3.f, 4.f, -5.f, 6.f}).reshape({3, 2})},
               {{"reduction", ir::AttrValue("max")}}},
              "scatter_nd_max");
}

TEST(Opsets18To23, NewActivationsAndBitwiseOps) {
  at::Tensor x = torch::tensor({-30.f, -2.f, -0.f, 0.5f, 3.f, 40.f, kNaN, kInfinity, -kInfinity});
  at::Tensor y = run_on_both({"Mish", 18, {x}}, "mish")[0];
  expect_close(y, at::mish(x));
  for (const char* a : {"none", "tanh"}) {
    y = run_on_both({"Gelu", 20, {x}, {{"approximate", ir::AttrValue(a)}}},
                    std::string("gelu_") + a)[0];
    expect_close(y, at::gelu(x, a));
  }
  at::Tensor i = longs({-1, 0, 5, 1 << 20}), j = longs({3});  // broadcasting
  y = run_on_both({"BitwiseAnd", 18, {i, j}}, "and")[0];
  EXPECT_TRUE(at::equal(y, longs({3, 0, 1, 0})));
  run_on_both({"BitwiseOr", 18, {i.to(torch::kInt), j.to(torch::kInt)}}, "or_int32");
  run_on_both({"BitwiseXor", 18, {i.to(torch::kByte), torch::tensor({7}, torch::kByte)}}, "xor_u8");
  y = run_on_both({"BitwiseNot", 18, {i}}, "not")[0];
  EXPECT_TRUE(at::equal(y, longs({0, -1, -6, -(1 << 20) - 1})));
}

TEST(Opsets18To23, GroupAndRmsNormalization) {
  torch::manual_seed(3);
  at::Tensor x = torch::randn({2, 6, 5}) * 3 + 1;
  at::Tensor scale = torch::rand({6}) + 0.5, bias = torch::randn({6});
  at::Tensor y =
      run_on_both({"GroupNormalization",
                   21,
                   {x, scale, bias},
                   {{"num_groups", ir::AttrValue(3)}, {"epsilon", ir::AttrValue(1e-3f)}}},
                  "group_norm", 1e-4, 1e-5)[0];
  expect_close(y, at::group_norm(x, 3, scale, bias, 1e-3), 1e-5, 1e-5);
  at::Tensor s = torch::rand({5}) + 0.5;
  y = run_on_both({"RMSNormalization", 23, {x, s}}, "rms_last", 1e-4, 1e-5)[0];
  expect_close(y, x * at::rsqrt(x.pow(2).mean({-1}, true) + 1e-5) * s, 1e-5, 1e-5);
  run_on_both({"RMSNormalization",
               23,
               {x, torch::rand({6, 5})},
               {{"axis", ir::AttrValue(1)}, {"epsilon", ir::AttrValue(1e-2f)}}},
              "rms_axis1", 1e-4, 1e-5);
}

TEST(Opsets18To23, GridSampleAndAffineGrid) {
  torch::manual_seed(4);
  at::Tensor x = torch::randn({2, 3, 4, 5});
  at::Tensor grid = torch::rand({2, 3, 2, 2}) * 2.4 - 1.2;  // past the edges too
  for (const char* mode : {"linear", "nearest", "cubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      run_on_both({"GridSample",
                   20,
                   {x, grid},
                   {{"mode", ir::AttrValue(mode)},
                    {"padding_mode", ir::AttrValue(pad)},
                    {"align_corners", ir::AttrValue(std::string(pad) == "border" ? 1 : 0)}}},
                  std::string("grid_sample_") + mode + "_" + pad, 1e-4, 1e-5);
  at::Tensor v = torch::randn({1, 2, 3, 4, 5}), g3 = torch::rand({1, 2, 2, 3, 3}) * 2 - 1;
  run_on_both({"GridSample", 20, {v, g3}}, "grid_sample_3d", 1e-4, 1e-5);
  at::Tensor theta = torch::randn({2, 2, 3});
  for (int64_t align : {0, 1}) {
    at::Tensor y = run_on_both(
        {"AffineGrid", 20, {theta, longs({2, 3, 4, 5})}, {{"align_corners", ir::AttrValue(align)}}},
        "affine_grid_2d_" + std::to_string(align))[0];
    expect_close(y, at::affine_grid_generator(theta, {2, 3, 4, 5}, align != 0));
  }
  run_on_both({"AffineGrid", 20, {torch::randn({1, 3, 4}), longs({1, 1, 2, 3, 4})}},
              "affine_grid_3d");
}

TEST(Opsets18To23, DftTakesItsAxisAsAnInputAndQuantizationItsOutputType) {
  torch::manual_seed(5);
  at::Tensor sig = torch::randn({2, 8, 3, 1});  // real signals along axis 1 or 2
  at::Tensor y = run_on_both({"DFT", 20, {sig, at::Tensor(), longs({1}).reshape({})}}, "dft_axis1",
                             1e-4, 1e-5)[0];
  at::Tensor want = at::view_as_real(at::fft_fft(sig.squeeze(-1), c10::nullopt, 1));
  expect_close(y, want, 1e-4, 1e-5);
  // Without the axis input: -2 (the last signal dim), here 2.
  y = run_on_both({"DFT", 20, {sig}, {{"onesided", ir::AttrValue(1)}}}, "dft_default_axis", 1e-4,
                  1e-5)[0];
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 8, 2, 2}));
  at::Tensor x = torch::tensor({-300.f, -1.4f, 0.f, 2.6f, 127.f, 1000.f});
  y = run_on_both({"QuantizeLinear",
                   21,
                   {x, torch::tensor(2.f)},
                   {{"output_dtype", ir::AttrValue(int64_t{3})}}},
                  "quantize_int8")[0];
  EXPECT_EQ(y.scalar_type(), at::kChar);
  EXPECT_TRUE(at::equal(y, torch::tensor({-128, -1, 0, 1, 64, 127}, torch::kChar)));
  run_on_both({"DequantizeLinear", 21, {y, torch::tensor(0.5f)}}, "dequantize");
  expect_error(
      [&] {
        tonnx::backend::prepare(
            tonnx::model_to_proto(node_model({"DequantizeLinear",
                                              21,
                                              {torch::zeros({4}, torch::kByte), torch::ones({2})},
                                              {{"block_size", ir::AttrValue(int64_t{2})}}})),
            "CPU");
      },
      "block_size 2 (blocked quantization, opset 21)");
}

TEST(Opsets18To23, OpsUnchangedSince17AndTypeOnlyVersionsRunAtTheNewOpsets) {
  at::Tensor a = torch::randn({2, 3}), b = torch::randn({3});
  run_on_both({"Add", 23, {a, b}}, "add");
  run_on_both({"Reshape", 21, {a, longs({3, -1})}}, "reshape");  // int4 added: types only
  run_on_both({"Cast", 23, {a}, {{"to", ir::AttrValue(int64_t{7})}}}, "cast");
  run_on_both(
      {"AveragePool", 19, {torch::randn({1, 2, 5, 5})}, {ints_attr("kernel_shape", {3, 3})}},
      "average_pool");
  run_on_both({"OptionalHasElement", 18, {a}}, "has_element");
  run_on_both({"Transpose", 23, {torch::randn({2, 0, 3})}, {ints_attr("perm", {2, 0, 1})}},
              "transpose_empty");
}

tonnx::backend::Rep prepare_node(const NodeCase& c) {
  return tonnx::backend::prepare(tonnx::model_to_proto(node_model(c)), "CPU");
}

TEST(Opsets18To23, WhatTonnxLacksOrTheSchemasRejectIsRefusedByName) {
  at::Tensor x = torch::randn({1, 2, 4, 4});
  // A version whose new meaning a kernel lacks: refused at prepare, naming the op and version.
  expect_error(
      [&] {
        prepare_node(
            {"DeformConv", 19, {x, torch::randn({2, 2, 1, 1}), torch::zeros({1, 2, 4, 4})}});
      },
      "DeformConv (opset 19: DeformConv-19)");
  expect_error(
      [&] {
        prepare_node(
            {"Pad", 19, {x, longs({0, 0, 1, 1, 0, 0, 1, 1})}, {{"mode", ir::AttrValue("wrap")}}});
      },
      "wrap");
  expect_error(
      [&] {
        prepare_node({"Resize",
                      18,
                      {x, at::Tensor(), torch::tensor({1.f, 1.f, .5f, .5f})},
                      {{"mode", ir::AttrValue("linear")}, {"antialias", ir::AttrValue(1)}}});
      },
      "antialias");
  expect_error(
      [&] {
        prepare_node({"AveragePool",
                      19,
                      {x},
                      {ints_attr("kernel_shape", {2, 2}), ints_attr("dilations", {2, 2})}});
      },
      "dilations");
  // ONNX deprecated GroupNormalization-18 (scale and bias per group).
  expect_error(
      [&] {
        prepare_node({"GroupNormalization",
                      18,
                      {x, torch::ones({2}), torch::zeros({2})},
                      {{"num_groups", ir::AttrValue(2)}}});
      },
      "deprecated");
  // The 18-23 schemas: a missing required attribute, an attribute the version lacks, counts.
  expect_error(
      [&] {
        prepare_node({"GroupNormalization", 21, {x, torch::ones({2}), torch::zeros({2})}});
      },
      "required attribute 'num_groups'");
  expect_error(
      [&] {
        prepare_node({"Mish", 18, {x}, {{"alpha", ir::AttrValue(1.0f)}}});
      },
      "'alpha' that Mish-18 does not define");
  expect_error(
      [&] {
        prepare_node({"Split", 18, {x}, {{"num_outputs", ir::AttrValue(3)}}, 2});
      },
      "num_outputs is 3");
  expect_error([&] { prepare_node({"Gelu", 20, {x, x}}); }, "Gelu-20 takes 1");
  expect_error(
      [&] {
        prepare_node({"Split", 18, {x, longs({1, 1})}, {{"num_outputs", ir::AttrValue(2)}}, 2});
      },
      "one or the other");
  expect_error([&] { prepare_node({"Gelu", 19, {x}}); }, "not an operator of ai.onnx at opset 19");
  // Past the newest opset tonnx knows.
  expect_error([&] { prepare_node({"Relu", 24, {x}}); }, "runs opsets 1 to 23");
}

TEST(Opsets18To23, CheckSaysWhoJudgedAModel) {
  // libonnx's checker would judge an opset-23 model by older schemas: check_model_file refuses
  // it by name, and backend::validate (what `tonnx check` runs then) judges it.
  NodeCase c("Gelu", 20, {torch::randn({2, 3})});
  std::string dir = tonnx::test::temp_dir("check_opset20");
  tonnx::save_model_proto(tonnx::model_to_proto(node_model(c)), dir + "/m.onnx");
  expect_error([&] { tonnx::check_model_file(dir + "/m.onnx"); },
               "imports ai.onnx opset 20; libonnx's checker and shape inference know opsets up "
               "to 17");
  tonnx::backend::validate(node_model(c));
  expect_error([&] { tonnx::backend::validate(node_model({"Gelu", 20, {}})); }, "Gelu-20 takes 1");
  tonnx::test::RunResult r =
      tonnx::test::run_command(std::string(TONNX_TEST_CLI) + " check " + dir + "/m.onnx");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tonnx's validation against ONNX's schemas of opset 20"),
            std::string::npos)
      << r.output;
}

}  // namespace
