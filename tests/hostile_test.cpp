// Hostile models (issue 13): every malformed case is a clear error naming the problem, never a
// crash, a hang or a read outside the model's buffers or folder. Models are built byte by byte
// as an attacker would, then loaded through the file API (load, check, run).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_config.h"
#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"

namespace {

namespace fs = std::filesystem;
using tonnx::backend::prepare;

// y = op(inputs...), float inputs of unknown shape, opset `opset`.
onnx::ModelProto model(const std::string& op, std::vector<std::string> inputs, int opset = 17) {
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

void attr_i(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

void expect_error(const std::function<void()>& f, const std::string& what) {
  std::string e = error_of(f);
  EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "' in: " << e;
}

std::string write(const std::string& dir, const std::string& name, const onnx::ModelProto& m) {
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

TEST(Hostile, FilesThatAreNotModels) {
  std::string dir = tonnx::test::temp_dir("hostile_files");
  std::ofstream(dir + "/empty.onnx").close();
  expect_error([&] { prepare(dir + "/empty.onnx"); }, "it is empty");
  fs::create_directories(dir + "/folder.onnx");
  expect_error([&] { prepare(dir + "/folder.onnx"); }, "it is a folder");
  expect_error([&] { tonnx::check_model_file(dir + "/folder.onnx"); }, "it is a folder");
  // A FIFO: refused at once (opened without blocking), not read forever.
  std::string fifo = dir + "/fifo.onnx";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error([&] { prepare(fifo); }, "not a regular file");
  // A model without a graph, and one without outputs.
  onnx::ModelProto bare;
  bare.set_ir_version(8);
  expect_error([&] { prepare(write(dir, "bare.onnx", bare)); }, "it has no graph");
  onnx::ModelProto m = model("Relu", {"x"});
  m.mutable_graph()->clear_output();
  expect_error([&] { prepare(m); }, "the graph has no outputs");
}

TEST(Hostile, NodesAgainstTheirSchemas) {
  // Too few inputs: named with the op's version and count (was vector::_M_range_check).
  expect_error([&] { prepare(model("Add", {"a"})); }, "node 'n': has 1 input(s); Add-14 takes 2");
  // A required input left empty.
  expect_error(
      [&] {
        prepare(model("Gemm", {"a", "", "c"}));
      },
      "input 1 ('B') is required but empty");
  // Cast without `to`, Loop without a body.
  expect_error([&] { prepare(model("Cast", {"x"})); },
               "Cast node 'n': the required attribute 'to'");
  onnx::ModelProto loop = model("Loop", {"", ""});
  expect_error([&] { prepare(loop); }, "the required attribute 'body' is missing");
  // An attribute of the wrong type, and one the op does not define.
  onnx::ModelProto c = model("Cast", {"x"});
  auto* to = c.mutable_graph()->mutable_node(0)->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::FLOAT);
  to->set_f(1.0f);
  expect_error([&] { prepare(c); }, "attribute 'to' must be an int, got a float");
  onnx::ModelProto r = model("Relu", {"x"});
  attr_i(r.mutable_graph()->mutable_node(0), "alpha", 2);
  expect_error([&] { prepare(r); }, "has an attribute 'alpha' that Relu-14 does not define");
  // Not an ONNX op, and an op of another opset.
  expect_error([&] { prepare(model("Relux", {"x"})); }, "'Relux' is not an operator of ai.onnx");
  expect_error([&] { prepare(model("Gelu", {"x"}, 17)); }, "'Gelu' is not an operator");
}

TEST(Hostile, GraphLevelProblems) {
  onnx::ModelProto m = model("Relu", {"x"});
  m.mutable_graph()->add_output()->set_name("y");
  expect_error([&] { prepare(m); }, "two outputs named 'y'");
  m = model("Relu", {"x"});
  m.mutable_graph()->mutable_input(0)->set_name("");
  m.mutable_graph()->mutable_node(0)->set_input(0, "");
  expect_error([&] { prepare(m); }, "a graph input has an empty name");
  // Two producers of one value.
  m = model("Relu", {"x"});
  auto* n2 = m.mutable_graph()->add_node();
  n2->set_op_type("Neg");
  n2->add_input("x");
  n2->add_output("y");
  expect_error([&] { prepare(m); }, "output 'y' is also defined by another node");
  // Opsets outside what libonnx knows, and a duplicated import.
  expect_error([&] { prepare(model("Relu", {"x"}, 99)); },
               "imports ai.onnx opset 99; tonnx's backend runs opsets 1 to");
  m = model("Relu", {"x"});
  *m.add_opset_import() = m.opset_import(0);
  expect_error([&] { prepare(m); }, "imports domain '' twice");
  // Legacy semantics the kernels do not implement.
  m = model("BatchNormalization", {"x", "s", "b", "mu", "var"}, 6);
  attr_i(m.mutable_graph()->mutable_node(0), "spatial", 0);
  expect_error([&] { prepare(m); }, "spatial=0");
}

// Scan (opset 8) with num_scan_inputs beyond its inputs, and a Loop whose trip count would
// run for ever: stopped by the run's time limit and by the terminate flag.
TEST(Hostile, LoopsAndScansAreBounded) {
  onnx::ModelProto s = model("Scan", {"", "x"}, 8);
  auto* node = s.mutable_graph()->mutable_node(0);
  attr_i(node, "num_scan_inputs", 5);
  auto* body = node->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  body->mutable_g()->set_name("b");
  expect_error([&] { prepare(s); }, "num_scan_inputs must be in 1..1, got 5");

  // Loop(M = 2^62) { carried = carried + 1 }.
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* trip = g->add_initializer();
  trip->set_name("M");
  trip->set_data_type(onnx::TensorProto::INT64);
  trip->add_int64_data(int64_t{1} << 62);
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* loop = g->add_node();
  loop->set_op_type("Loop");
  loop->add_input("M");
  loop->add_input("");
  loop->add_input("x");
  loop->add_output("y");
  g->add_output()->set_name("y");
  auto* ba = loop->add_attribute();
  ba->set_name("body");
  ba->set_type(onnx::AttributeProto::GRAPH);
  auto* b = ba->mutable_g();
  b->set_name("body");
  for (auto [name, type] : {std::pair<const char*, int>{"i", onnx::TensorProto::INT64},
                            {"c", onnx::TensorProto::BOOL},
                            {"v", onnx::TensorProto::FLOAT}}) {
    auto* in = b->add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  }
  auto* id = b->add_node();
  id->set_op_type("Identity");
  id->add_input("c");
  id->add_output("c_out");
  auto* neg = b->add_node();
  neg->set_op_type("Neg");
  neg->add_input("v");
  neg->add_output("v_out");
  b->add_output()->set_name("c_out");
  b->add_output()->set_name("v_out");
  tonnx::backend::Rep rep = prepare(m);
  tonnx::backend::RunOptions opt;
  opt.timeout_seconds = 0.2;
  auto t0 = std::chrono::steady_clock::now();
  expect_error([&] { rep.run({torch::ones({2})}, opt); },
               "the run passed its time limit of 0.2 s at ");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  std::atomic<bool> stop{false};
  tonnx::backend::RunOptions flag;
  flag.terminate = &stop;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  expect_error([&] { rep.run({torch::ones({2})}, flag); }, "stopped (RunOptions::terminate)");
  t.join();
  // The CLI: tonnx run --timeout.
  std::string dir = tonnx::test::temp_dir("hostile_loop");
  std::string path = write(dir, "loop.onnx", m);
  tonnx::save_tensor_proto(tonnx::tensor_to_proto(torch::ones({2}), "x"), dir + "/x.pb");
  auto r = tonnx::test::run_command(std::string(TONNX_TEST_BINARY_DIR) + "/tonnx run " + path +
                                    " --input x=" + dir + "/x.pb --timeout 0.3");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("passed its time limit of 0.3 s"), std::string::npos) << r.output;
}

// External data: only regular files inside the model's folder, reached without links, sized
// for their tensors; every CVE pattern is refused with a message naming the location.
class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    // Per test: ctest runs them in parallel.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    outside = tonnx::test::temp_dir("hostile_" + name + "/outside");
    dir = tonnx::test::temp_dir("hostile_" + name + "/model");
    std::ofstream(outside + "/canary.bin", std::ios::binary) << std::string(16, '\x01');
    std::ofstream(dir + "/w.bin", std::ios::binary) << std::string(16, '\x02');
  }
  // Relu(w) with w [dims] float32 at `location`.
  std::string with_external(const std::string& location, std::vector<int64_t> dims = {4},
                            const std::string& offset = "", const std::string& length = "") {
    onnx::ModelProto m = model("Relu", {});
    auto* g = m.mutable_graph();
    g->mutable_node(0)->add_input("w");
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) {
      w->add_dims(d);
      g->mutable_output(0)
          ->mutable_type()
          ->mutable_tensor_type()
          ->mutable_shape()
          ->add_dim()
          ->set_dim_value(d);
    }
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto kv = [&](const std::string& k, const std::string& v) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    kv("location", location);
    if (!offset.empty()) kv("offset", offset);
    if (!length.empty()) kv("length", length);
    return write(dir, "m.onnx", m);
  }
  std::string dir, outside;
};

TEST_F(ExternalData, InsideTheFolderLoadsFromAnyWorkingDirectory) {
  fs::create_directories(dir + "/sub");
  std::ofstream(dir + "/sub/w..bin", std::ios::binary) << std::string(16, '\x00');
  std::string path = with_external("sub/w..bin");  // ".." inside a name is fine
  auto out = prepare(path).run(std::vector<at::Tensor>{});
  EXPECT_TRUE(out[0].equal(torch::zeros({4})));
  // check resolves in the model's folder, not the working directory.
  EXPECT_NO_THROW(tonnx::check_model_file(path));
}

TEST_F(ExternalData, EscapesAreRefused) {
  expect_error([&] { prepare(with_external("../outside/canary.bin")); },
               "leaves the model's folder");
  expect_error([&] { prepare(with_external(outside + "/canary.bin")); }, "is absolute");
  expect_error([&] { prepare(with_external("/proc/self/mem")); }, "is absolute");
  // A symlinked file and a symlinked folder inside the model's folder.
  fs::create_symlink(outside + "/canary.bin", dir + "/link.bin");
  expect_error([&] { prepare(with_external("link.bin")); }, "is a symbolic link");
  fs::create_directory_symlink(outside, dir + "/linkdir");
  expect_error([&] { prepare(with_external("linkdir/canary.bin")); }, "goes through 'linkdir'");
  // A hard link to a file elsewhere looks like a file of the folder: refused by its link count.
  std::error_code ec;
  fs::create_hard_link(outside + "/canary.bin", dir + "/hard.bin", ec);
  if (!ec) expect_error([&] { prepare(with_external("hard.bin")); }, "is a hard link");
  // A FIFO does not block the load; a folder is not data.
  ASSERT_EQ(::mkfifo((dir + "/fifo.bin").c_str(), 0600), 0);
  expect_error([&] { prepare(with_external("fifo.bin")); }, "is not a regular file");
  fs::create_directories(dir + "/d.bin");
  expect_error([&] { prepare(with_external("d.bin")); }, "is not a regular file");
  // The checker applies the same rules first.
  expect_error([&] { tonnx::check_model_file(with_external("link.bin")); }, "symbolic link");
}

TEST_F(ExternalData, SizesAndOffsetsAreChecked) {
  // dims whose byte size overflows (2^61 + 1 floats): no wrap-around past the bounds check.
  expect_error([&] { prepare(with_external("w.bin", {(int64_t{1} << 61) + 1})); },
               "more than 2^63 bytes");
  expect_error([&] { prepare(with_external("w.bin", {5})); }, "does not fit in 'w.bin'");
  expect_error([&] { prepare(with_external("w.bin", {4}, "4")); }, "does not fit");
  expect_error([&] { prepare(with_external("w.bin", {4}, "-1")); },
               "offset '-1' is not a non-negative integer");
  expect_error([&] { prepare(with_external("w.bin", {4}, "x")); }, "offset 'x' is not");
  expect_error([&] { prepare(with_external("w.bin", {4}, "99999999999999999999")); },
               "is not a non-negative integer");
  expect_error([&] { prepare(with_external("w.bin", {4}, "0", "8")); }, "length 8");
  EXPECT_NO_THROW(prepare(with_external("w.bin", {2}, "8", "8")));
}

// Writes go through an unnamed temporary file: nothing is left behind when the writer fails,
// and temporaries of writers that died (named ones, where O_TMPFILE is missing) are removed.
TEST(Hostile, AtomicWritesLeaveNothingBehind) {
  std::string dir = tonnx::test::temp_dir("hostile_writes");
  std::string path = dir + "/m.onnx";
  tonnx::write_file_atomic(path, std::string("old"));
  std::ofstream(dir + "/.m.onnx.tmp.999999999.1").close();  // no such process
  EXPECT_THROW(tonnx::write_file_atomic(path,
                                        [](std::ostream& out) {
                                          out << std::string(1 << 21, 'x');
                                          throw std::runtime_error("interrupted");
                                        }),
               std::runtime_error);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "old");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"m.onnx"});
  tonnx::write_file_atomic(path, std::string("new"));
  std::ifstream in2(path);
  std::getline(in2, content);
  EXPECT_EQ(content, "new");
}

}  // namespace
