// Dynamic axes: sizes that a C++ trace froze are recovered by a second trace, so the file
// runs at other sizes (checked on ONNX Runtime and tonnx's backend against LibTorch).
#include <filesystem>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

// Exports at the example sizes, then runs the file at `other` inputs.
void expect_dynamic(const Traceable& model, const std::vector<Tensor>& example,
                    const std::vector<Tensor>& other, ExportOptions opt, const std::string& name,
                    Tolerance tol = {}) {
  std::string dir = temp_dir(name);
  std::string path = dir + "/model.onnx";
  try {
    export_traceable(model, example, path, opt);
  } catch (const std::exception& e) {
    FAIL() << name << ": export failed: " << e.what();
  }
  torch::NoGradGuard ng;
  TestDataSet set;
  set.inputs = other;
  set.outputs = model.forward(other);
  write_test_data(dir + "/data", set);
  RunResult r = run_ort(path, dir + "/data", tol.rtol, tol.atol);
  EXPECT_EQ(r.exit_code, 0) << name << ": ONNX Runtime at other sizes:\n" << r.output;
  auto outs = backend::prepare(path, "CPU").run(other);
  ASSERT_EQ(outs.size(), set.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i)
    expect_close(outs[i], set.outputs[i], {tol.rtol, tol.atol},
                 c10::str(name) + " backend output " + c10::str(i));
}

TEST(DynamicAxes, ViewWithTracedBatchSize) {
  // torch::tensor(x.size(0)) is a constant tensor in the trace: it becomes NumToTensor(size).
  auto fn = [](Tensor x) {
    return x.view({x.size(0), -1}).sum(1) + torch::arange(x.size(0)) * torch::tensor(x.size(0));
  };
  ExportOptions opt;
  opt.input_names = {"x"};
  opt.dynamic_axes["x"] = {{0, "batch"}};
  expect_dynamic(make_traceable_fn(fn), {torch::randn({2, 3, 4})}, {torch::randn({5, 3, 4})}, opt,
                 "dyn_view");
}

TEST(DynamicAxes, TransformerEncoderBatchAndSequence) {
  torch::manual_seed(3);
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(16, 4).dim_feedforward(32).dropout(0.0));
  layer->eval();
  Traceable t{layer.ptr(), [layer](const std::vector<Tensor>& in) mutable {
                return std::vector<Tensor>{layer->forward(in[0])};
              }};
  ExportOptions opt;
  opt.input_names = {"src"};
  opt.output_names = {"out"};
  opt.dynamic_axes["src"] = {{0, "seq"}, {1, "batch"}};
  opt.dynamic_axes["out"] = {{0, "seq"}, {1, "batch"}};
  // Exported with sequence 5 and batch 2, run with sequence 7 and batch 3.
  expect_dynamic(t, {torch::randn({5, 2, 16})}, {torch::randn({7, 3, 16})}, opt, "dyn_transformer",
                 Tolerance{1e-3, 1e-4});
}

// GPT-style positions: a table narrowed and sliced by the sequence length, a run-time int.
TEST(DynamicAxes, PositionsSlicedBySequenceLength) {
  torch::manual_seed(5);
  Tensor pos = torch::randn({16, 8});
  auto fn = [pos](Tensor x) {
    int64_t t = x.size(1);
    return x + pos.narrow(0, 0, t) + pos.slice(0, 1, t + 1) * 0.5;
  };
  ExportOptions opt;
  opt.input_names = {"x"};
  opt.output_names = {"y"};
  opt.dynamic_axes["x"] = {{0, "batch"}, {1, "seq"}};
  expect_dynamic(make_traceable_fn(fn), {torch::randn({2, 5, 8})}, {torch::randn({3, 9, 8})}, opt,
                 "dyn_positions");
}

// Outputs named by default (output_0...) can carry dynamic axes too.
TEST(DynamicAxes, DefaultOutputNamesTakeDynamicAxes) {
  auto fn = [](Tensor x) { return x * 2; };
  ExportOptions opt;
  opt.dynamic_axes["input"] = {{0, "batch"}};
  opt.dynamic_axes["output_0"] = {{0, "batch"}};
  expect_dynamic(make_traceable_fn(fn), {torch::randn({2, 3})}, {torch::randn({4, 3})}, opt,
                 "dyn_default_output_name");
}

TEST(DynamicAxes, SharedSymbolAcrossInputs) {
  auto fn = [](Tensor a, Tensor b) {
    return a.reshape({a.size(0), -1}) + b.reshape({b.size(0), 1});
  };
  ExportOptions opt;
  opt.input_names = {"a", "b"};
  opt.dynamic_axes["a"] = {{0, "n"}};
  opt.dynamic_axes["b"] = {{0, "n"}};
  expect_dynamic(make_traceable_fn(fn), {torch::randn({2, 3}), torch::randn({2})},
                 {torch::randn({6, 3}), torch::randn({6})}, opt, "dyn_shared");
}

// pixel_unshuffle reads the sizes that vary at run time (torch.onnx's test_pixel_unshuffle). A
// scripted module: a C++ trace cannot grow the axes by amounts the factor divides.
TEST(DynamicAxes, PixelUnshuffleAtOtherSizes) {
  torch::jit::Module m("Scripted");
  m.define("def forward(self, x):\n    return torch.pixel_unshuffle(x, 2)\n");
  ExportOptions opt;
  opt.input_names = {"x"};
  opt.dynamic_axes["x"] = {{0, "n"}, {2, "h"}, {3, "w"}};
  for (int opset : {9, 17}) {
    opt.opset_version = opset;
    std::string name = "dyn_pixel_unshuffle_opset" + std::to_string(opset);
    std::string dir = temp_dir(name);
    export_model(m, {torch::randn({1, 3, 4, 6})}, dir + "/model.onnx", opt);
    TestDataSet set;
    set.inputs = {torch::randn({2, 3, 8, 2})};
    set.outputs = {m.forward({set.inputs[0]}).toTensor()};
    write_test_data(dir + "/data", set);
    RunResult r = run_ort(dir + "/model.onnx", dir + "/data", 1e-6, 1e-7);
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
    auto outs = backend::prepare(dir + "/model.onnx", "CPU").run(set.inputs);
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_TRUE(outs[0].sizes() == set.outputs[0].sizes() && outs[0].equal(set.outputs[0])) << name;
  }
}

TEST(DynamicAxes, DataDependentControlFlowIsAClearError) {
  auto fn = [](Tensor x) {
    Tensor y = x;
    for (int64_t i = 0; i < x.size(0); ++i) y = y + 1;  // the trace unrolls this loop
    return y;
  };
  ExportOptions opt;
  opt.input_names = {"x"};
  opt.dynamic_axes["x"] = {{0, "n"}};
  try {
    export_traceable(make_traceable_fn(fn), {torch::randn({2})}, temp_dir("dyn_loop") + "/m.onnx",
                     opt);
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("control flow depends on them"), std::string::npos)
        << e.what();
  }
}

TEST(DynamicAxes, SizesMismatchBetweenInputsIsAnError) {
  auto fn = [](Tensor a, Tensor b) { return a.sum() + b.sum(); };
  ExportOptions opt;
  opt.input_names = {"a", "b"};
  opt.dynamic_axes["a"] = {{0, "n"}};
  opt.dynamic_axes["b"] = {{0, "n"}};
  EXPECT_THROW(export_traceable(make_traceable_fn(fn), {torch::randn({2}), torch::randn({3})},
                                temp_dir("dyn_mismatch") + "/m.onnx", opt),
               ExportError);
}

// squeeze of a dim whose size varies: removed only where it is 1 at run time (If), as LibTorch
// does; a rank-dependent op after it (a negative dim) then fails loudly instead of using the
// traced rank. Scripted, so that LibTorch's own result at each size is the oracle.
TEST(DynamicAxes, SqueezeOfAVaryingDim) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x, d):
    return x.squeeze(1) * 2.0, x.squeeze(), x.squeeze(int(d)) + 1.0
)");
  ExportOptions opt;
  opt.input_names = {"x", "d"};
  opt.dynamic_axes["x"] = {{0, "n"}, {1, "c"}, {2, "w"}};
  for (int opset : {11, 13, 17}) {
    opt.opset_version = opset;
    std::string name = "dyn_squeeze_opset" + std::to_string(opset);
    std::string dir = temp_dir(name);
    std::vector<torch::Tensor> example{torch::randn({2, 1, 3}), torch::tensor(int64_t{-2})};
    if (opset < 13) {  // a dim computed at run time needs Squeeze's axes input
      expect_error([&] { export_model(m, example, dir + "/model.onnx", opt); }, "opset 13");
      continue;
    }
    export_model(m, example, dir + "/model.onnx", opt);
    auto prepared = backend::prepare(dir + "/model.onnx", "CPU");
    for (auto sizes : {std::vector<int64_t>{3, 1, 4}, {3, 5, 1}, {1, 1, 1}, {2, 0, 1}}) {
      TestDataSet set;
      set.inputs = {torch::randn(sizes), torch::tensor(int64_t{-2})};
      auto eager = m.forward({set.inputs[0], set.inputs[1]}).toTuple()->elements();
      for (const auto& e : eager) set.outputs.push_back(e.toTensor());
      std::string data = dir + "/data" + std::to_string(sizes[0]) + std::to_string(sizes[1]);
      write_test_data(data, set);
      RunResult r = run_ort(dir + "/model.onnx", data, 1e-6, 1e-7);
      EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
      auto outs = prepared.run(set.inputs);
      ASSERT_EQ(outs.size(), 3u);
      for (size_t k = 0; k < 3; ++k)
        EXPECT_TRUE(outs[k].sizes() == set.outputs[k].sizes() && outs[k].equal(set.outputs[k]))
            << name << " output " << k << " at " << sizes;
    }
  }
  torch::jit::Module neg("Scripted");
  neg.define("def forward(self, x):\n    return x.squeeze(1).transpose(0, -1)\n");
  opt.input_names = {"x"};
  opt.opset_version = 17;
  expect_error(
      [&] {
        export_model(neg, {torch::randn({2, 1, 3})}, temp_dir("dyn_squeeze_neg") + "/m.onnx", opt);
      },
      "rank");
}

// Ops that need only some sizes, or compute the rest at run time: diagonal of a tensor whose sizes
// all vary (positions from Range), unfold / tensor_split / adaptive pooling along a fixed dim of
// an input whose other dims vary. Checked at other sizes against LibTorch.
TEST(DynamicAxes, DiagonalUnfoldSplitPoolAtOtherSizes) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x, y):
    a = torch.diagonal(x, 1, -1, 0)
    b = torch.diagonal(x, -2, 1, 2)
    c = y.unfold(2, 2, 2)
    d = y.tensor_split(2, -1)
    e = torch.adaptive_max_pool1d(y, 3)[0]
    return a, b, c, d[0], d[1], e
)");
  ExportOptions opt;
  opt.input_names = {"x", "y"};
  opt.dynamic_axes["x"] = {{0, "a"}, {1, "b"}, {2, "c"}, {3, "d"}};
  opt.dynamic_axes["y"] = {{0, "n"}, {1, "k"}};
  for (int opset : {11, 17}) {
    opt.opset_version = opset;
    std::string name = "dyn_diagonal_opset" + std::to_string(opset);
    std::string dir = temp_dir(name);
    export_model(m, {torch::randn({2, 4, 5, 3}), torch::randn({2, 3, 6})}, dir + "/model.onnx",
                 opt);
    auto prepared = backend::prepare(dir + "/model.onnx", "CPU");
    for (auto sizes : {std::vector<int64_t>{5, 6, 7, 8}, {1, 1, 1, 1}, {3, 2, 4, 2}}) {
      TestDataSet set;
      set.inputs = {torch::randn(sizes), torch::randn({sizes[0], sizes[1] + 1, 6})};
      auto eager = m.forward({set.inputs[0], set.inputs[1]}).toTuple();
      for (const auto& e : eager->elements()) set.outputs.push_back(e.toTensor());
      std::string data = dir + "/data" + std::to_string(sizes[0]) + std::to_string(sizes[1]);
      write_test_data(data, set);
      RunResult r = run_ort(dir + "/model.onnx", data, 1e-6, 1e-7);
      EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
      auto outs = prepared.run(set.inputs);
      ASSERT_EQ(outs.size(), set.outputs.size());
      for (size_t k = 0; k < outs.size(); ++k)
        EXPECT_TRUE(outs[k].sizes() == set.outputs[k].sizes() && outs[k].equal(set.outputs[k]))
            << name << " output " << k << " at " << sizes;
    }
  }
}

// Outputs without a given name are output_K, or output_K_N where a given name already is
// output_K (torch.onnx's suite names the first of four outputs "output_1"); dynamic_axes then
// address the given name.
TEST(DynamicAxes, DefaultOutputNamesAvoidGivenNames) {
  auto fn = make_traceable_fn([](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {in[0] + 1, in[0] * 2, in[0] - 1};
  });
  ExportOptions opt;
  opt.input_names = {"input_1"};
  opt.output_names = {"output_1"};
  opt.dynamic_axes["input_1"] = {{0, "n"}};
  opt.dynamic_axes["output_1"] = {{0, "n"}};
  std::string path = temp_dir("dyn_output_names") + "/model.onnx";
  export_model(fn, {torch::randn({2, 3})}, path, opt);
  onnx::ModelProto m = read_model_proto(path);
  ASSERT_EQ(m.graph().output_size(), 3);
  EXPECT_EQ(m.graph().output(0).name(), "output_1");
  EXPECT_EQ(m.graph().output(1).name(), "output_1_1");
  EXPECT_EQ(m.graph().output(2).name(), "output_2");
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "n");
}

// Inputs whose sizes are tied (x.view(other.shape)) cannot run with their dynamic axes doubled or
// grown one by one: every size computed from an input is then taken to vary, and the export
// works at other (consistent) sizes, where it was refused.
TEST(DynamicAxes, TiedInputSizesTakeEverySizeAsVarying) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x, other):
    y = x.view(other.shape)
    return y * 2.0 + other, y.sum(-1), y.flatten()
)");
  ExportOptions opt;
  opt.input_names = {"x", "other"};
  opt.dynamic_axes["x"] = {{0, "a"}, {1, "b"}, {2, "c"}};
  opt.dynamic_axes["other"] = {{0, "m"}, {1, "n"}};
  opt.opset_version = 17;
  std::string dir = temp_dir("dyn_tied_sizes");
  export_model(m, {torch::randn({2, 3, 4}), torch::randn({6, 4})}, dir + "/model.onnx", opt);
  auto prepared = backend::prepare(dir + "/model.onnx", "CPU");
  TestDataSet set;
  set.inputs = {torch::randn({5, 2, 3}), torch::randn({10, 3})};
  auto eager = m.forward({set.inputs[0], set.inputs[1]}).toTuple();
  for (const auto& e : eager->elements()) set.outputs.push_back(e.toTensor());
  write_test_data(dir + "/data", set);
  RunResult r = run_ort(dir + "/model.onnx", dir + "/data", 1e-5, 1e-6);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto outs = prepared.run(set.inputs);
  ASSERT_EQ(outs.size(), 3u);
  for (size_t k = 0; k < 3; ++k) expect_close(outs[k], set.outputs[k], Tolerance{}, "tied sizes");
}

// roll needs only the rolled dims' sizes: another dim may be dynamic (it asked for all).
TEST(DynamicAxes, RollAlongAStaticDimWhileAnotherVaries) {
  auto fn = [](Tensor x) { return torch::roll(x, {2}, {0}) + torch::roll(x, {-1}, {-2}); };
  ExportOptions opt;
  opt.input_names = {"x"};
  opt.dynamic_axes["x"] = {{1, "n"}};
  expect_dynamic(make_traceable_fn(fn), {torch::randn({3, 4})}, {torch::randn({3, 7})}, opt,
                 "dyn_roll");
}

// var/std count the reduced elements at run time when sizes vary (they were refused); a dim of
// size 1 or 0 gives NaN as in ATen (divisor max(0, n - correction)).
TEST(DynamicAxes, VarianceCountsTheReducedElementsAtRunTime) {
  auto fn = [](Tensor x) {
    auto [v, m] = torch::var_mean(x, {-1}, 0, true);
    return std::make_tuple(x.var(), x.std(1), x.var(at::IntArrayRef{0, 2}, false, true), v, m,
                           x.std(-1, /*unbiased=*/true));
  };
  ExportOptions opt;
  opt.input_names = {"x"};
  opt.dynamic_axes["x"] = {{0, "a"}, {1, "b"}, {2, "c"}};
  expect_dynamic(make_traceable_fn(fn), {torch::randn({2, 3, 4})}, {torch::randn({4, 5, 1})}, opt,
                 "dyn_var_std");
  expect_dynamic(make_traceable_fn(fn), {torch::randn({2, 3, 4})}, {torch::randn({3, 1, 6})}, opt,
                 "dyn_var_std_one");
}

}  // namespace
}  // namespace tonnx::test
