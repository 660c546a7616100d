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

onnx::ModelProto model(const std::string& op, std::vector<std::string> inputs, int opset = 17) {
  return tonnx::test::one_node_model(op, inputs, opset);
}

void attr_i(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

using tonnx::test::expect_error;
using tonnx::test::expect_libonnx_failure;

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

// libonnx's shape inference reads past the weight's dims of this ConvTranspose (a model found
// by fuzz_load): checking it is an error, printing and running it never crash the caller.
TEST(Hostile, LibonnxCrashesAreContained) {
  std::string path = tonnx::test::source_dir() + "/tests/data/libonnx_convtranspose_crash.onnx";
  expect_libonnx_failure([&] { tonnx::check_model_file(path); });
  onnx::ModelProto m = tonnx::read_model_proto(path);
  expect_libonnx_failure([&] { tonnx::infer_shapes_strict(m); });
  EXPECT_NE(tonnx::printable_graph(m).find("onnx::ConvTranspose"), std::string::npos);
  expect_error([&] { prepare(path); }, "'nowhere'");
  // A model libonnx accepts still comes back with its inferred types (y's, here).
  m = tonnx::test::relu_neg_model();
  tonnx::check_model(m);
  ASSERT_EQ(m.graph().value_info_size(), 1);
  EXPECT_EQ(m.graph().value_info(0).name(), "y");
  EXPECT_EQ(m.graph().value_info(0).type().tensor_type().shape().dim(1).dim_value(), 3);
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
  auto r = tonnx::test::run_command(std::string(TONNX_TEST_CLI) + " run " + path +
                                    " --input x=" + dir + "/x.pb --timeout 0.3");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("passed its time limit of 0.3 s"), std::string::npos) << r.output;
}

void attr_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void input_type(onnx::ModelProto& m, int i, int elem_type) {
  m.mutable_graph()->mutable_input(i)->mutable_type()->mutable_tensor_type()->set_elem_type(
      elem_type);
}

// Kernels check every index and count that comes from the data or the attributes.
TEST(Hostile, KernelsCheckIndicesAndCounts) {
  // NonMaxSuppression with boxes for fewer positions than the scores (read past boxes).
  auto nms = prepare(model("NonMaxSuppression", {"boxes", "scores"}));
  expect_error(
      [&] {
        nms.run({torch::rand({1, 2, 4}), torch::rand({1, 1, 3})});
      },
      "scores must be [num_batches, num_classes, spatial_dimension] = [1, C, 2]");
  // GatherND with an index past its dim: an error, not a value from elsewhere.
  onnx::ModelProto g = model("GatherND", {"x", "i"});
  input_type(g, 1, onnx::TensorProto::INT64);
  auto gnd = prepare(g);
  EXPECT_TRUE(gnd.run({torch::arange(6.0f).reshape({2, 3}), torch::tensor({{1L, -1L}})})[0].equal(
      torch::tensor({5.0f})));
  expect_error(
      [&] {
        gnd.run({torch::zeros({2, 3}), torch::tensor({{0L, 5L}})});
      },
      "an index along data dim 1 is out of range for its size 3");
  // MaxUnpool without kernel_shape (was a SIGSEGV): its schema requires it.
  onnx::ModelProto u = model("MaxUnpool", {"x", "i"});
  input_type(u, 1, onnx::TensorProto::INT64);
  expect_error([&] { prepare(u); }, "the required attribute 'kernel_shape' is missing");
  attr_ints(u.mutable_graph()->mutable_node(0), "kernel_shape", {2});
  auto unpool = prepare(u);
  expect_error(
      [&] {
        unpool.run({torch::ones({1, 1, 2, 2}), torch::zeros({1, 1, 2, 2}, at::kLong)});
      },
      "kernel_shape, strides and pads must have 2, 2 and 4 values");
  // Legacy broadcasting whose axis puts B outside A.
  onnx::ModelProto add = model("Add", {"a", "b"}, 6);
  attr_i(add.mutable_graph()->mutable_node(0), "broadcast", 1);
  attr_i(add.mutable_graph()->mutable_node(0), "axis", 2);
  auto legacy = prepare(add);
  EXPECT_TRUE(
      legacy.run({torch::zeros({2, 3, 4}), torch::ones({4})})[0].equal(torch::ones({2, 3, 4})));
  expect_error([&] { legacy.run({torch::zeros({2, 3, 4}), torch::ones({3, 4})}); }, "places B");
}

// Attribute values and input values that once reached raw indexing or integer division.
TEST(Hostile, AttributeAndShapeValuesAreChecked) {
  // A stride of 0 (an integer division by zero in the output size), a short strides list.
  onnx::ModelProto conv = model("Conv", {"x", "w"});
  attr_ints(conv.mutable_graph()->mutable_node(0), "strides", {0, 0});
  expect_error([&] { prepare(conv); }, "strides and dilations must be 1 to 2^31");
  onnx::ModelProto pool = model("MaxPool", {"x"});
  attr_ints(pool.mutable_graph()->mutable_node(0), "kernel_shape", {2, 2});
  attr_ints(pool.mutable_graph()->mutable_node(0), "strides", {2});
  auto mp = prepare(pool);
  expect_error(
      [&] {
        mp.run({torch::ones({1, 1, 4, 4})});
      },
      "strides and dilations must have one value per spatial dim (2)");
  onnx::ModelProto avg = model("AveragePool", {"x"});
  attr_ints(avg.mutable_graph()->mutable_node(0), "kernel_shape", {3});
  auto ap = prepare(avg);
  expect_error([&] { ap.run({torch::ones({1, 1, 4, 4})}); }, "one value per spatial dim (2)");
  // DepthToSpace with blocksize 0 (a division by zero) or one that does not divide C.
  onnx::ModelProto d2s = model("DepthToSpace", {"x"});
  attr_i(d2s.mutable_graph()->mutable_node(0), "blocksize", 0);
  expect_error([&] { prepare(d2s); }, "blocksize must be in 1..2^20, got 0");
  d2s.mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_i(2);
  auto ds = prepare(d2s);
  expect_error([&] { ds.run({torch::ones({1, 3, 2, 2})}); }, "does not divide into blocks of 4");
  // Slice whose axes are shorter than its starts (read past the axes).
  onnx::ModelProto sl = model("Slice", {"x", "s", "e", "a"});
  for (int i = 1; i < 4; ++i) input_type(sl, i, onnx::TensorProto::INT64);
  auto slice = prepare(sl);
  expect_error(
      [&] {
        slice.run({torch::ones({2, 2}), torch::tensor({0L, 0L}), torch::tensor({1L, 1L}),
                   torch::tensor({0L})});
      },
      "starts, ends, axes and steps must have the same length; got 2, 2, 1 and 2");
  // ScatterND with indices deeper than the data.
  onnx::ModelProto sc = model("ScatterND", {"x", "i", "u"});
  input_type(sc, 1, onnx::TensorProto::INT64);
  auto scatter = prepare(sc);
  expect_error(
      [&] {
        scatter.run({torch::zeros({2}), torch::zeros({1, 3}, at::kLong), torch::ones({1})});
      },
      "indices' last dim 3 must be in 1..1");
  // Range whose count overflows int64 (INT64_MIN / -1 once), and STFT with frame_step 0.
  onnx::ModelProto rg = model("Range", {"a", "b", "d"});
  for (int i = 0; i < 3; ++i) input_type(rg, i, onnx::TensorProto::INT64);
  auto range = prepare(rg);
  EXPECT_TRUE(range.run({torch::tensor(5L), torch::tensor(0L), torch::tensor(-2L)})[0].equal(
      torch::tensor({5L, 3L, 1L})));
  expect_error(
      [&] {
        range.run({torch::tensor(INT64_MAX), torch::tensor(-1L), torch::tensor(-1L)});
      },
      "Range node 'n' failed");
  // LRN of size 0 (a division by zero), OneHot of NaN depth, EyeLike with k near INT64_MAX.
  onnx::ModelProto lrn = model("LRN", {"x"});
  attr_i(lrn.mutable_graph()->mutable_node(0), "size", 0);
  expect_error([&] { prepare(lrn); }, "size must be >= 1, got 0");
  onnx::ModelProto oh = model("OneHot", {"i", "d", "v"});
  input_type(oh, 0, onnx::TensorProto::INT64);
  auto onehot = prepare(oh);
  expect_error(
      [&] {
        onehot.run({torch::tensor({1L}), torch::tensor(NAN), torch::tensor({0.f, 1.f})});
      },
      "depth must be a number >= 1");
  onnx::ModelProto eye = model("EyeLike", {"x"});
  attr_i(eye.mutable_graph()->mutable_node(0), "k", INT64_MAX);
  EXPECT_TRUE(prepare(eye).run({torch::ones({2, 2})})[0].equal(torch::zeros({2, 2})));
  // Resize of an empty axis to a non-empty one (a write through a null row once).
  onnx::ModelProto rs = model("Resize", {"x", "", "", "sizes"});
  input_type(rs, 1, onnx::TensorProto::INT64);
  auto resize = prepare(rs);
  expect_error(
      [&] {
        resize.run({torch::ones({1, 1, 0, 2}), torch::tensor({1L, 1L, 3L, 2L})});
      },
      "cannot resize an axis of size 0 to 3");
  // RoiAlign with a NaN corner, and with a box needing billions of samples per bin.
  onnx::ModelProto ra = model("RoiAlign", {"x", "rois", "b"});
  input_type(ra, 2, onnx::TensorProto::INT64);
  auto roi = prepare(ra);
  expect_error(
      [&] {
        roi.run({torch::ones({1, 1, 4, 4}), torch::tensor({{0.f, NAN, 1.f, 1.f}}),
                 torch::zeros({1}, at::kLong)});
      },
      "rois and spatial_scale must be finite");
  expect_error(
      [&] {
        roi.run({torch::ones({1, 1, 4, 4}), torch::tensor({{0.f, 0.f, 1e12f, 1e12f}}),
                 torch::zeros({1}, at::kLong)});
      },
      "samples per bin");
}

// The ATen domain calls LibTorch's dispatcher: a model file may not reach ops that read files,
// skip checks or write into their inputs, nor pass an out-of-range enum.
TEST(Hostile, AtenNodesAreLimited) {
  auto aten = [](const std::string& op, const std::string& attr_op) {
    onnx::ModelProto m = model(op, {"x"});
    auto* imp = m.add_opset_import();
    imp->set_domain("org.pytorch.aten");
    imp->set_version(1);
    auto* n = m.mutable_graph()->mutable_node(0);
    n->set_domain("org.pytorch.aten");
    if (!attr_op.empty()) {
      auto* a = n->add_attribute();
      a->set_name("operator");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(attr_op);
    }
    return m;
  };
  expect_error([&] { prepare(aten("ATen", "from_file")); },
               "aten::from_file reads files or memory outside tensors");
  expect_error([&] { prepare(aten("abs_", "")); }, "aten::abs_ writes into its input");
  expect_error([&] { prepare(aten("ATen", "_sparse_coo_tensor_unsafe")); }, "private to LibTorch");
  onnx::ModelProto ones = aten("ones_like", "");
  attr_i(ones.mutable_graph()->mutable_node(0), "dtype", 200);
  auto rep = prepare(ones);
  expect_error([&] { rep.run({torch::zeros({2})}); },
               "attribute 'dtype' = 200 is not a ScalarType");
  EXPECT_TRUE(prepare(aten("ATen", "abs")).run({-torch::ones({2})})[0].equal(torch::ones({2})));
}

// The backend's internal fused ops (domain ai.tonnx) named in a file with inputs they do not take:
// an error naming the counts, not a read past the inputs or a BatchNormalization dropped.
TEST(Hostile, InternalFusedOpsCheckTheirInputs) {
  auto fused = [](const std::string& op, std::vector<std::string> inputs) {
    onnx::ModelProto m = model(op, inputs);
    auto* imp = m.add_opset_import();
    imp->set_domain("ai.tonnx");
    imp->set_version(1);
    m.mutable_graph()->mutable_node(0)->set_domain("ai.tonnx");
    return m;
  };
  expect_error(
      [&] {
        prepare(fused("FusedBatchNorm", {"x", "s"}));
      },
      "takes 5 inputs (X, scale, B, mean, var) and 1 output, got 2 and 1");
  expect_error([&] { prepare(fused("FusedConv", {"x"})); }, "(2-4 or 8 inputs)");
  expect_error(
      [&] {
        prepare(fused("ConcatBatchNorm", {"s", "b", "m", "v"}));
      },
      "takes scale, B, mean, var and at least one X, and 1 output; got 4 inputs and 1 outputs");
  expect_error(
      [&] {
        prepare(fused("FusedConv", {"x", "w", "", "", "s", "b"}));
      },
      "(2-4 or 8 inputs) and 1 output, got 6 and 1");
  // FusedGemm with batched=1 reads C; Gelu reads X (were std::out_of_range from the run).
  onnx::ModelProto fg = fused("FusedGemm", {"a", "b"});
  attr_i(fg.mutable_graph()->mutable_node(0), "batched", 1);
  expect_error([&] { prepare(fg); }, "takes A, B and C and 1 output, got 2 inputs and 1 outputs");
  expect_error([&] { prepare(fused("Gelu", {})); }, "takes X and 1 output, got 0 inputs");
}

// String inputs whose data and shape disagree, and MelWeightMatrix with an edge of 10^15 Hz.
TEST(Hostile, StringInputsAndSignalSizes) {
  onnx::ModelProto m = model("Identity", {"s"});
  input_type(m, 0, onnx::TensorProto::STRING);
  auto rep = prepare(m);
  tonnx::backend::StringTensor st;
  st.shape = {2, 3};
  st.data = {"a", "b"};
  expect_error([&] { rep.run_values({tonnx::backend::RunValue(st)}); },
               "holds 2 strings but its shape needs 6");
  onnx::ModelProto mel = model("MelWeightMatrix", {"b", "d", "r", "lo", "hi"});
  for (int i = 0; i < 3; ++i) input_type(mel, i, onnx::TensorProto::INT64);
  auto mw = prepare(mel);
  auto t0 = std::chrono::steady_clock::now();
  auto y = mw.run({torch::tensor(4L), torch::tensor(16L), torch::tensor(1L), torch::tensor(0.f),
                   torch::tensor(1e15f)})[0];
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{9, 4}));
  expect_error(
      [&] {
        mw.run({torch::tensor(4L), torch::tensor(16L), torch::tensor(0L), torch::tensor(0.f),
                torch::tensor(1.f)});
      },
      "sample_rate >= 1");
  // DFT: a last dim that is neither 1 (real) nor 2 (complex), an axis that is not a signal dim
  // (the last dim, or past the rank), a length of 0.
  onnx::ModelProto dft = model("DFT", {"x", "n"});
  input_type(dft, 1, onnx::TensorProto::INT64);
  attr_i(dft.mutable_graph()->mutable_node(0), "axis", 1);
  auto d = prepare(dft);
  expect_error(
      [&] {
        d.run({torch::ones({2, 4, 3}), torch::tensor(4L)});
      },
      "last dim of 1 (real) or 2 (complex)");
  expect_error([&] { d.run({torch::ones({4}), torch::tensor(4L)}); }, "last dim of 1");
  expect_error([&] { d.run({torch::ones({2, 4, 2}), torch::tensor(0L)}); }, "DFT");
  for (int64_t axis : {2, -1, 3, -4}) {
    onnx::ModelProto bad = model("DFT", {"x"});
    attr_i(bad.mutable_graph()->mutable_node(0), "axis", axis);
    expect_error([&] { prepare(bad).run({torch::ones({2, 4, 2})}); }, "is not a signal dim");
  }
  EXPECT_EQ(d.run({torch::ones({2, 4, 1}), torch::tensor(4L)})[0].sizes(),
            (std::vector<int64_t>{2, 4, 2}));
}

// TfIdfVectorizer: indexes outside the output (a heap write before the block), counts outside
// the pool, and a max_skip_count of 10^18 (CPU-bound for ever) bounded by the row.
TEST(Hostile, TfIdfVectorizerAttributes) {
  auto tfidf = [](std::vector<int64_t> counts, std::vector<int64_t> indexes, int64_t max_skip) {
    onnx::ModelProto m = model("TfIdfVectorizer", {"x"});
    input_type(m, 0, onnx::TensorProto::INT64);
    auto* n = m.mutable_graph()->mutable_node(0);
    auto* mode = n->add_attribute();
    mode->set_name("mode");
    mode->set_type(onnx::AttributeProto::STRING);
    mode->set_s("TF");
    attr_i(n, "min_gram_length", 1);
    attr_i(n, "max_gram_length", 2);
    attr_i(n, "max_skip_count", max_skip);
    attr_ints(n, "ngram_counts", counts);
    attr_ints(n, "ngram_indexes", indexes);
    attr_ints(n, "pool_int64s", {1, 1, 2});  // 1-gram (1), 2-gram (1, 2)
    return m;
  };
  expect_error([&] { prepare(tfidf({0, 1}, {-1, 0}, 0)); }, "ngram_indexes[0] = -1");
  expect_error([&] { prepare(tfidf({0, 9}, {0, 1}, 0)); }, "ngram_counts[1] = 9");
  expect_error([&] { prepare(tfidf({0, 1}, {0, int64_t{1} << 40}, 0)); }, "ngram_indexes[1]");
  auto rep = prepare(tfidf({0, 1}, {0, 1}, int64_t{1000000000000000000}));
  auto t0 = std::chrono::steady_clock::now();
  auto y = rep.run({torch::tensor({1L, 9L, 2L, 1L, 2L})})[0];
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // "1" twice; (1, 2) at skips 1 and 3 from position 0 and 0 from position 3.
  EXPECT_TRUE(y.equal(torch::tensor({2.0f, 3.0f}))) << y;
}

// The random ops draw what their attributes say: the shape's size and the types are checked.
TEST(Hostile, RandomOpAttributes) {
  onnx::ModelProto ru = model("RandomUniform", {});
  attr_ints(ru.mutable_graph()->mutable_node(0), "shape", {INT64_MAX, 4});
  expect_error([&] { prepare(ru); }, "overflow");
  onnx::ModelProto rn = model("RandomNormal", {});
  attr_ints(rn.mutable_graph()->mutable_node(0), "shape", {2});
  attr_i(rn.mutable_graph()->mutable_node(0), "dtype", onnx::TensorProto::INT32);
  expect_error([&] { prepare(rn); }, "not a floating-point type");
  onnx::ModelProto mn = model("Multinomial", {"x"});
  attr_i(mn.mutable_graph()->mutable_node(0), "sample_size", -3);
  expect_error([&] { prepare(mn); }, "sample_size must be >= 0, got -3");
  onnx::ModelProto m1 = model("Multinomial", {"x"});
  auto multinomial = prepare(m1);
  expect_error([&] { multinomial.run({torch::ones({4})}); }, "input must be a 2-D floating-point");
}

// Unique along an axis of length 0: the other dims of an empty input may be huge.
TEST(Hostile, UniqueOfEmptyInputWithHugeDims) {
  onnx::ModelProto u = model("Unique", {"x"});
  attr_i(u.mutable_graph()->mutable_node(0), "axis", 0);
  auto unique = prepare(u);
  expect_error(
      [&] {
        unique.run({torch::empty({0, int64_t{1} << 40, int64_t{1} << 40})});
      },
      "overflows int64");
}

// What the fuzzers found (fuzz/regressions/ holds the inputs; the sanitizer build replays
// them): each is now an error naming the node and the value.
TEST(Hostile, FuzzFindings) {
  // Conv's group times the weight's channels overflowed.
  onnx::ModelProto conv = model("Conv", {"x", "w"});
  attr_i(conv.mutable_graph()->mutable_node(0), "group", INT64_MIN);
  expect_error([&] { prepare(conv); }, "group is -9223372036854775808; it must be at least 1");
  // Split sizes that are negative, or NaN in a float tensor.
  onnx::ModelProto split = model("Split", {"x", "s"});
  split.mutable_graph()->mutable_node(0)->add_output("y2");
  input_type(split, 1, onnx::TensorProto::INT64);
  auto sp = prepare(split);
  expect_error(
      [&] {
        sp.run({torch::ones({2}), torch::tensor({-1L, 3L})});
      },
      "split sizes [-1, 3] do not add up to axis 0's size 2");
  input_type(split, 1, onnx::TensorProto::DOUBLE);
  auto spf = prepare(split);
  expect_error(
      [&] {
        spf.run({torch::ones({2}), torch::full({2}, NAN, torch::kDouble)});
      },
      "must be an integer tensor, not Double");
  // MaxUnpool's output size overflowed with a huge kernel.
  onnx::ModelProto unpool = model("MaxUnpool", {"x", "i"});
  input_type(unpool, 1, onnx::TensorProto::INT64);
  attr_ints(unpool.mutable_graph()->mutable_node(0), "kernel_shape", {int64_t{1} << 62, 2});
  attr_ints(unpool.mutable_graph()->mutable_node(0), "strides", {4, 2});
  auto up = prepare(unpool);
  expect_error(
      [&] {
        up.run({torch::ones({1, 1, 2, 2}), torch::zeros({1, 1, 2, 2}, at::kLong)});
      },
      "the output size overflows int64");
  // A pool whose pads are as large as its kernel (windows wholly in padding; minutes of work).
  onnx::ModelProto pool = model("MaxPool", {"x"});
  attr_ints(pool.mutable_graph()->mutable_node(0), "kernel_shape", {65536, 2});
  attr_ints(pool.mutable_graph()->mutable_node(0), "pads", {64, 0, 65536, 0});
  expect_error([&] { prepare(pool); }, "must each be smaller than kernel_shape [65536, 2]");
  // Reshape to dims whose product overflows.
  onnx::ModelProto reshape = model("Reshape", {"x", "shape"});
  input_type(reshape, 1, onnx::TensorProto::INT64);
  auto rsh = prepare(reshape);
  expect_error(
      [&] {
        rsh.run({torch::ones({4}), torch::tensor({int64_t{1} << 62, int64_t{1} << 62, -1L})});
      },
      "cannot infer the -1 dim");
  // Unique compared every value with every distinct one before it: hours on a million.
  auto unique = prepare(model("Unique", {"x"}));
  at::Tensor big =
      torch::cat({torch::randperm(200000).to(at::kFloat), torch::tensor({-0.0f, NAN, NAN})});
  auto u = unique.run({big});
  // -0 groups with 0; the two NaNs stay apart and sort last.
  ASSERT_EQ(u[0].numel(), 200002);
  EXPECT_TRUE(u[0].slice(0, 0, 200000).equal(torch::arange(200000).to(at::kFloat)));
  EXPECT_TRUE(torch::isnan(u[0].slice(0, 200000)).all().item<bool>());
  // Resize by an infinite scale.
  onnx::ModelProto rs = model("Resize", {"x", "", "scales"});
  auto resize = prepare(rs);
  expect_error(
      [&] {
        resize.run({torch::ones({1, 1, 2, 2}), torch::tensor({1.f, 1.f, INFINITY, 1.f})});
      },
      "scales[2] is inf; scales must be positive and finite");
}

}  // namespace
