// Graph pictures (tonnx print --format dot|svg): the DOT parses with Graphviz and holds every
// node, edges carry types, scopes become clusters or collapse with a depth, If bodies are
// clusters, and the SVG is Graphviz's rendering.
#include <graphviz/cgraph.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <map>

#include "test_util.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx {
namespace {

namespace nn = torch::nn;

onnx::ModelProto small_model(const std::string& name) {
  torch::manual_seed(0);
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(3, 4, 3)), nn::ReLU(), nn::Flatten(),
                     nn::Linear(4 * 6 * 6, 5));
  std::string path = test::temp_dir("picture") + "/" + name + ".onnx";
  export_model(net, {torch::randn({2, 3, 8, 8})}, path);
  onnx::ModelProto m = read_model_proto(path);
  infer_shapes_strict(m);
  return m;
}

// The DOT parsed by Graphviz: node labels by node name.
std::map<std::string, std::string> parse(const std::string& dot) {
  Agraph_t* g = agmemread(dot.c_str());
  EXPECT_NE(g, nullptr) << dot;
  std::map<std::string, std::string> labels;
  if (!g) return labels;
  for (Agnode_t* n = agfstnode(g); n; n = agnxtnode(g, n)) {
    char* label = agget(n, const_cast<char*>("label"));
    labels[agnameof(n)] = label ? label : "";
  }
  agclose(g);
  return labels;
}

TEST(Picture, DotHasEveryNodeAndTypedEdges) {
  onnx::ModelProto m = small_model("dot");
  std::string dot = graph_dot(m);
  auto labels = parse(dot);
  int ops = 0;
  for (const auto& [id, label] : labels)
    if (id[0] == 'n') ++ops;
  EXPECT_EQ(ops, m.graph().node_size()) << dot;
  for (const auto& n : m.graph().node())
    EXPECT_NE(dot.find("label=\"" + n.op_type()), std::string::npos) << n.op_type() << "\n" << dot;
  EXPECT_NE(dot.find("kernel_shape=[3, 3]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"Float(2, 4, 6, 6)\""), std::string::npos) << dot;  // Conv -> Relu
  EXPECT_NE(dot.find("input\\nFloat(2, 3, 8, 8)"), std::string::npos) << dot;
  EXPECT_NE(dot.find("0.weight\\nFloat(4, 3, 3, 3)"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"Conv2d[0]\""), std::string::npos) << dot;  // a scope cluster
}

TEST(Picture, DepthCollapsesScopesAndInitializersCanGo) {
  onnx::ModelProto m = small_model("depth");
  PictureOptions o;
  o.depth = 1;
  o.initializers = false;
  std::string dot = graph_dot(m, o);
  auto labels = parse(dot);
  int ops = 0, boxes = 0;
  for (const auto& [id, label] : labels) {
    ops += id[0] == 'n';
    boxes += id[0] == 's';
  }
  EXPECT_EQ(ops, 0) << dot;
  EXPECT_EQ(boxes, 1) << dot;
  // The box sits in its scope's cluster, which names it.
  EXPECT_NE(dot.find("label=\"" + std::to_string(m.graph().node_size()) + " ops\\n"),
            std::string::npos)
      << dot;
  EXPECT_NE(dot.find("label=\"Sequential\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("Conv x1"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("0.weight"), std::string::npos) << dot;
  o.depth = -1;
  test::expect_error([&] { graph_dot(m, o); }, "picture depth -1 is negative");
}

TEST(Picture, HostileScopesAndHugeGraphsAreBounded) {
  // A scope a thousand levels deep draws 64 nested clusters at most; a graph too large for
  // Graphviz's layout is refused for SVG with what to do instead.
  onnx::ModelProto m = test::one_node_model("Relu", {"x"});
  std::string deep = "scope: ";
  for (int i = 0; i < 1000; ++i) deep += "M/";
  m.mutable_graph()->mutable_node(0)->set_doc_string(deep);
  std::string dot = graph_dot(m);
  size_t clusters = 0;
  for (size_t p = dot.find("subgraph"); p != std::string::npos; p = dot.find("subgraph", p + 1))
    ++clusters;
  EXPECT_EQ(clusters, 64u);
  parse(dot);
  onnx::ModelProto big = test::one_node_model("Relu", {"x"});
  for (int i = 0; i < 6000; ++i) *big.mutable_graph()->add_node() = big.graph().node(0);
  test::expect_error([&] { graph_svg(big); }, "collapse module scopes with a depth");
}

TEST(Picture, IfBodiesAreClusters) {
  torch::jit::Module mod("M");
  mod.define(R"(
def forward(self, x):
    if bool(x.sum() > 0):
        y = torch.relu(x) + 1
    else:
        y = -x
    return y
)");
  std::string path = test::temp_dir("picture") + "/if.onnx";
  export_model(mod, {torch::randn({3})}, path);
  onnx::ModelProto m = read_model_proto(path);
  std::string dot = graph_dot(m);
  parse(dot);
  EXPECT_NE(dot.find(": then_branch\""), std::string::npos) << dot;
  EXPECT_NE(dot.find(": else_branch\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("style=dashed"), std::string::npos) << dot;  // body outputs into the If
}

TEST(Picture, SvgIsGraphvizRendering) {
  onnx::ModelProto m = small_model("svg");
  std::string svg = graph_svg(m);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 200);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find(">Conv</text>"), std::string::npos);
}

// A node name and a scope of 20 MB each (100 MB ran `print --format svg` past 120 s): every
// label is cut to 160 bytes and 16 lines, so the picture stays small and Graphviz quick.
TEST(Picture, HugeLabelsAreCut) {
  onnx::ModelProto m = test::one_node_model("Relu", {"x"});
  auto* n = m.mutable_graph()->mutable_node(0);
  n->set_name(std::string(20 << 20, 'n'));
  n->set_doc_string("scope: " + std::string(20 << 20, 's') + "/" + std::string(1 << 20, '\n'));
  m.mutable_graph()->mutable_input(0)->set_name(std::string(1 << 20, 'x'));
  n->set_input(0, m.graph().input(0).name());
  std::string dot = graph_dot(m);
  EXPECT_LT(dot.size(), 8000u);
  EXPECT_NE(dot.find("nnn..."), std::string::npos);
  parse(dot);
  EXPECT_FALSE(graph_svg(m).empty());
}

TEST(Picture, HostileNamesAreEscaped) {
  onnx::ModelProto m = test::one_node_model("Relu", {"x\"y\\z\nw"});
  std::string dot = graph_dot(m);
  auto labels = parse(dot);
  EXPECT_FALSE(labels.empty()) << dot;
}

}  // namespace
}  // namespace tonnx
