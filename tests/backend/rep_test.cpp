// tonnx's backend on bad input (every malformed model is an error, never a crash), on
// values that are not tensors, and the conformance runner's own behaviour.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/compare.h"
#include "tonnx/conformance.h"
#include "tonnx/proto.h"

namespace {

namespace fs = std::filesystem;
using tonnx::backend::prepare;

onnx::ModelProto one_node(const std::string& op, std::vector<std::string> inputs, int opset = 17) {
  return tonnx::test::one_node_model(op, inputs, opset);
}

using tonnx::test::expect_error;

TEST(BackendBadInput, TruncatedProtobuf) {
  onnx::ModelProto m = one_node("Relu", {"x"});
  std::string bytes = m.SerializeAsString();
  std::string dir = tonnx::test::temp_dir("backend_truncated");
  std::string path = dir + "/m.onnx";
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_error([&] { prepare(path); }, "not a valid ONNX model");
}

TEST(BackendBadInput, WrongAttributeTypeNamesTheNode) {
  onnx::ModelProto m = one_node("Transpose", {"x"});
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.0f);
  expect_error([&] { prepare(m); }, "Transpose node");
}

TEST(BackendBadInput, MissingInput) {
  onnx::ModelProto m = one_node("Add", {"x"});
  m.mutable_graph()->mutable_node(0)->add_input("nowhere");
  expect_error([&] { prepare(m); }, "'nowhere'");
}

TEST(BackendBadInput, Cycle) {
  onnx::ModelProto m = one_node("Relu", {"x"});
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_input(0, "z");
  auto* n2 = g->add_node();
  n2->set_op_type("Relu");
  n2->add_input("y");
  n2->add_output("z");
  expect_error([&] { prepare(m); }, "cycle");
}

TEST(BackendBadInput, UnknownOpIsNamed) {
  onnx::ModelProto m = one_node("NoSuchOp", {"x"});
  expect_error([&] { prepare(m); }, "'NoSuchOp' is not an operator of ai.onnx at opset 17");
}

TEST(BackendBadInput, ShapeProductOverflow) {
  onnx::ModelProto m = one_node("Add", {"x"});
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 4; ++i) init->add_dims(int64_t{1} << 20);
  m.mutable_graph()->mutable_node(0)->add_input("w");
  expect_error([&] { prepare(m); }, "overflows");
}

TEST(BackendBadInput, ExternalDataOutsideTheModelFolder) {
  onnx::ModelProto m = one_node("Add", {"x"});
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(1);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = init->add_external_data();
  kv->set_key("location");
  kv->set_value("../../etc/passwd");
  m.mutable_graph()->mutable_node(0)->add_input("w");
  expect_error([&] { prepare(m, "CPU", {}, tonnx::test::temp_dir("backend_external")); },
               "leaves the model's folder");
}

TEST(BackendBadInput, RunTimeErrorsNameTheNode) {
  tonnx::backend::Rep rep = prepare(one_node("MatMul", {"a", "b"}));
  expect_error(
      [&] {
        rep.run(std::vector<at::Tensor>{torch::ones({2, 3}), torch::ones({4, 5})});
      },
      "MatMul node");
  expect_error([&] { rep.run(std::vector<at::Tensor>{torch::ones({2, 3})}); }, "takes 2 input(s)");
}

// RoiAlign checks its data-dependent indices: a batch index outside X's batch, and as many
// batch indices as rois.
TEST(BackendBadInput, RoiAlignChecksBatchIndices) {
  onnx::ModelProto m = one_node("RoiAlign", {"x", "rois", "batch"});
  m.mutable_graph()->mutable_input(2)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  tonnx::backend::Rep rep = prepare(m);
  at::Tensor x = torch::randn({2, 1, 4, 4}), rois = torch::tensor({{0.f, 0.f, 2.f, 2.f}});
  EXPECT_EQ(rep.run(std::vector<at::Tensor>{x, rois, torch::tensor({1L})})[0].sizes(),
            (std::vector<int64_t>{1, 1, 1, 1}));
  expect_error(
      [&] {
        rep.run(std::vector<at::Tensor>{x, rois, torch::tensor({2L})});
      },
      "roi 0 has batch index 2, out of range for a batch of 2");
  expect_error(
      [&] {
        rep.run(std::vector<at::Tensor>{x, rois, torch::tensor({-1L})});
      },
      "batch index -1");
  expect_error(
      [&] {
        rep.run(std::vector<at::Tensor>{x, rois, torch::tensor({0L, 1L})});
      },
      "there are 1 rois but 2 batch indices");
}

TEST(BackendValues, SequencesThroughRunValues) {
  onnx::ModelProto m = one_node("SequenceConstruct", {"a", "b"});
  auto* n2 = m.mutable_graph()->add_node();
  n2->set_op_type("ConcatFromSequence");
  n2->add_input("y");
  n2->add_output("cat");
  auto* ax = n2->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(0);
  m.mutable_graph()->add_output()->set_name("cat");
  tonnx::backend::Rep rep = prepare(m);
  auto out = rep.run_values({torch::ones({2}), torch::zeros({3})});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0].is_sequence());
  EXPECT_EQ(out[0].sequence().items.size(), 2u);
  EXPECT_TRUE(out[1].tensor().equal(torch::tensor({1.f, 1.f, 0.f, 0.f, 0.f})));
  // The tensor API refuses a sequence output with a pointer to run_values.
  expect_error(
      [&] {
        rep.run(std::vector<at::Tensor>{torch::ones({2}), torch::zeros({3})});
      },
      "run_values");
}

TEST(BackendValues, CompareValuesReportsTheFirstMismatch) {
  auto mismatch = [](const at::Tensor& a, const at::Tensor& b) {
    return tonnx::compare(tonnx::backend::RunValue(a), tonnx::backend::RunValue(b)).mismatch;
  };
  EXPECT_EQ(mismatch(torch::tensor({1.f, NAN}), torch::tensor({1.f, NAN})), "");
  EXPECT_NE(mismatch(torch::tensor({1.f, 2.f}), torch::tensor({1.f, 2.5f})).find("[1]"),
            std::string::npos);
  EXPECT_NE(mismatch(torch::tensor({1}), torch::tensor({1.f})).find("dtype"), std::string::npos);
}

TEST(BackendConformance, BrokenCaseIsAFailureNotACrash) {
  std::string dir = tonnx::test::temp_dir("backend_broken_case") + "/test_broken";
  fs::create_directories(dir + "/test_data_set_0");
  std::ofstream(dir + "/model.onnx", std::ios::binary) << "not a model";
  auto r = tonnx::backend::run_case(dir, {});
  EXPECT_EQ(r.status, tonnx::backend::CaseStatus::Fail);
  EXPECT_NE(r.message.find("not a valid ONNX model"), std::string::npos) << r.message;
  auto s = tonnx::backend::run_case(dir, {{"test_broken", "a reason"}});
  EXPECT_EQ(s.status, tonnx::backend::CaseStatus::Skip);
  EXPECT_EQ(s.message, "a reason");
}

TEST(BackendConformance, SkipListNeedsReasons) {
  std::string path = tonnx::test::temp_dir("backend_skips") + "/skips.txt";
  std::ofstream(path) << "# comment\ntest_a\tbecause\ntest_b\n";
  expect_error([&] { tonnx::backend::read_skip_list(path); }, ":3:");
}

}  // namespace
