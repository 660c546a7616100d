#include "test_util.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "test_config.h"
#include "tonnx/backend.h"
#include "tonnx/compare.h"
#include "tonnx/proto.h"

namespace tonnx::test {
namespace fs = std::filesystem;

std::string source_dir() {
  const char* s = std::getenv("TONNX_SOURCE_DIR");
  return s ? s : TONNX_TEST_SOURCE_DIR;
}

void expect_error(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << what << "'";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
        << "expected '" << what << "' in: " << e.what();
  }
}

bool is_libonnx_failure(const std::string& m) {
  return m.rfind("ONNX", 0) == 0 && (m.find("crashed on this model (SIG") != std::string::npos ||
                                     m.find("std::bad_alloc") != std::string::npos);
}

void expect_libonnx_failure(const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "expected libonnx's crash or std::bad_alloc, as an error";
  } catch (const std::exception& e) {
    EXPECT_TRUE(is_libonnx_failure(e.what())) << e.what();
  }
}

onnx::ModelProto one_node_model(const std::string& op, const std::vector<std::string>& inputs,
                                int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("n");
  for (const auto& i : inputs) {
    n->add_input(i);
    if (i.empty()) continue;
    auto* vi = g->add_input();
    vi->set_name(i);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  n->add_output("y");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

onnx::ModelProto relu_neg_model() {
  onnx::ModelProto m = one_node_model("Relu", {"x"});
  auto* shape =
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_value(2);
  shape->add_dim()->set_dim_value(3);
  auto* neg = m.mutable_graph()->add_node();
  neg->set_op_type("Neg");
  neg->add_input("y");
  neg->add_output("z");
  auto* out = m.mutable_graph()->mutable_output(0);
  out->set_name("z");
  *out->mutable_type()->mutable_tensor_type()->mutable_shape() = *shape;
  return m;
}

std::string temp_dir(const std::string& name) {
  // ctest runs each test in its own process, two at a time: a folder per test, so that one
  // test's clean-up never removes another's files (several tests share a `name`).
  std::string test = "no_test";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    test = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : test)
    if (c == '/') c = '_';
  fs::path p = fs::path(TONNX_TEST_BINARY_DIR) / "test_tmp" / name / test;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

RunResult run_command(const std::string& cmd) {
  RunResult r;
  std::array<char, 4096> buf{};
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) {
    r.exit_code = -1;
    return r;
  }
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

RunResult run_ort(const std::string& model, const std::string& data_dir, double rtol, double atol) {
  return run_command("node " + source_dir() + "/tools/ort_run.js " + model + " --test-data " +
                     data_dir + " --rtol " + std::to_string(rtol) + " --atol " +
                     std::to_string(atol));
}

std::vector<std::string> op_types(const std::string& path) {
  onnx::ModelProto m = read_model_proto(path);
  std::vector<std::string> out;
  for (const auto& n : m.graph().node()) out.push_back(n.op_type());
  return out;
}

}  // namespace tonnx::test
