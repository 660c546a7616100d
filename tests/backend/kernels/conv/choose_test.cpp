// The convolution's path chooser (backend/kernels/conv/choose.h): each Conv and ConvTranspose
// node gets one path at prepare, and the profile says which and why (NodeProfile::kernel).
// The facts asserted here hold on every CPU: they follow from the options and the graph, not
// from what this CPU's kernels offer.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::test::GraphBuilder;

ir::AttrValue choice_ints(ir::Ints v) { return ir::AttrValue(std::move(v)); }

// The profile's note for the model's only node after one run on x.
std::string note_of(const onnx::ModelProto& p, const std::vector<at::Tensor>& inputs,
                    tonnx::backend::PrepareOptions o = {}) {
  o.profile = true;
  auto rep = tonnx::backend::prepare(p, "CPU", o);
  rep.run(inputs);
  auto prof = rep.profile();
  EXPECT_EQ(prof.size(), 1u);
  std::string report = tonnx::backend::profile_report(prof);
  EXPECT_NE(report.find(prof.at(0).kernel), std::string::npos) << report;
  return prof.at(0).kernel;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

onnx::ModelProto conv(bool weight_is_initializer, const at::Tensor& w) {
  GraphBuilder g;
  ir::Value* x = g.in("x");
  ir::Value* wv = weight_is_initializer ? g.init("w", w) : g.in("w");
  g.out(g.op("Conv", {x, wv}, {{"pads", choice_ints({1, 1, 1, 1})}}), "y");
  return tonnx::model_to_proto(g.m);
}

TEST(BackendConvChoice, OneDnnDirectWhenAskedFor) {
  at::Tensor w = torch::randn({8, 4, 3, 3}), x = torch::randn({1, 4, 10, 10});
  tonnx::backend::PrepareOptions o;
  o.onednn_conv = true;
  std::string note = note_of(conv(true, w), {x}, o);
  EXPECT_TRUE(starts_with(note, "oneDNN direct: PrepareOptions::onednn_conv")) << note;
}

TEST(BackendConvChoice, AtenWhenTheWeightIsAnInput) {
  at::Tensor w = torch::randn({8, 4, 3, 3}), x = torch::randn({1, 4, 10, 10});
  for (bool direct : {false, true}) {
    tonnx::backend::PrepareOptions o;
    o.onednn_conv = direct;
    std::string note = note_of(conv(false, w), {x, w}, o);
    EXPECT_TRUE(starts_with(note, "ATen: ")) << note;
    EXPECT_NE(note.find("W is not the initializer of a 2-D convolution"), std::string::npos)
        << note;
  }
}

TEST(BackendConvChoice, ExactKeepsLibTorchsPathsAndSaysWhy) {
  // 1x1, stride 1: no Winograd; with exact and the plain layout nothing but ATen's own call
  // (with the weight prepacked where LibTorch has oneDNN) may run it.
  at::Tensor w = torch::randn({8, 4, 1, 1}), x = torch::randn({1, 4, 6, 6});
  GraphBuilder g;
  g.out(g.op("Conv", {g.in("x"), g.init("w", w)}), "y");
  tonnx::backend::PrepareOptions o;
  o.exact = true;
  o.blocked_layout = false;
  std::string note = note_of(tonnx::model_to_proto(g.m), {x}, o);
  EXPECT_TRUE(starts_with(note, at::hasMKLDNN() ? "ATen, W prepacked: " : "ATen: ")) << note;
  EXPECT_NE(note.find("oneDNN direct is off"), std::string::npos) << note;
}

TEST(BackendConvChoice, ConvTransposeWithSamePadsRunsOnAten) {
  GraphBuilder g;
  at::Tensor w = torch::randn({4, 3, 3, 3}), x = torch::randn({1, 4, 5, 5});
  g.out(g.op("ConvTranspose", {g.in("x"), g.init("w", w)},
             {{"auto_pad", ir::AttrValue("SAME_UPPER")}, {"strides", choice_ints({2, 2})}}),
        "y");
  std::string note = note_of(tonnx::model_to_proto(g.m), {x});
  EXPECT_EQ(note, "ATen: auto_pad or output_shape resolve per input shape");
}

TEST(BackendConvChoice, NodesWithOnePathHaveNoNote) {
  GraphBuilder g;
  g.out(g.op("Relu", {g.in("x")}), "y");
  EXPECT_EQ(note_of(tonnx::model_to_proto(g.m), {torch::randn({3})}), "");
}

}  // namespace
