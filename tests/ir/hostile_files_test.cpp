// Hostile files (issue 13): external data outside the model's folder, through links, FIFOs
// or with sizes and offsets that do not fit is refused by name; a failed write leaves the
// previous file and nothing else. (The models' contents: backend/hostile_models_test.cpp.)
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"

namespace {

namespace fs = std::filesystem;
using tonnx::backend::prepare;
using tonnx::test::expect_error;

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
    onnx::ModelProto m = tonnx::test::one_node_model("Relu", {});
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
    std::string path = dir + "/m.onnx";
    std::ofstream(path, std::ios::binary) << m.SerializeAsString();
    return path;
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
