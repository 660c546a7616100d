// Quantized tensors (docs/quantization.md): quantize_per_tensor, ops on quantized tensors and
// dequantize, on ONNX Runtime and tonnx's backend against LibTorch; quantized graph inputs and
// outputs as (values, scale, zero point); loud failures where tonnx cannot follow. Models
// quantized in Python (nn.quantized layers, QAT, torchvision's quantized classifiers) are in
// tests/quantized_test.sh.
#include <gtest/gtest.h>
#include <torch/script.h>

#include "test_util.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

// quint8 is ScalarType 13, qint8 12 in TorchScript source.
const char* kQuantizedOps = R"(
def forward(self, x):
    q = torch.quantize_per_tensor(x, 0.05, 100, 13)
    s = torch.quantize_per_tensor(x, 0.04, -5, 12)
    a = torch.relu(q).transpose(0, 1)
    b = torch.sigmoid(q)
    c = torch.tanh(s)
    d = torch.max_pool2d(q.view(1, 1, 4, 6), [2, 2], [2, 2], [0, 0], [1, 1], False)
    e = torch.flatten(torch.hardtanh(q, -0.5, 0.5))
    return a.dequantize(), b.dequantize(), c.dequantize(), d, e, q.dequantize() + s.dequantize(), e.int_repr()
)";

class QuantizedOps : public ::testing::TestWithParam<int> {};

// Every op on quantized tensors, from float inputs (with NaN-free values straddling the
// quantization range) to floats, and quantized outputs as three values each.
TEST_P(QuantizedOps, MatchLibTorch) {
  torch::manual_seed(1);
  Tensor x = torch::randn({4, 6}) * 4;  // beyond the uint8 range at scale 0.05: clamped
  x[0][0] = 0;
  ExportOptions opt;
  opt.opset_version = GetParam();
  std::string path =
      expect_script_matches(kQuantizedOps, {x}, opt, "quantized_ops_" + std::to_string(GetParam()));
  auto ops = op_types(path);
  EXPECT_NE(std::find(ops.begin(), ops.end(), "QuantizeLinear"), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), "DequantizeLinear"), ops.end());
}

INSTANTIATE_TEST_SUITE_P(Opsets, QuantizedOps, ::testing::Values(10, 13, 17));

// A quantized example input is three graph inputs (values, scale as double, zero point as
// int64) and a quantized output three outputs (values, scale as float, zero point of the
// integer type), as torch.onnx's are; graph_inputs() expands the example accordingly.
TEST(Quantized, InputsAndOutputs) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, q, y):
    return torch.relu(q), q.dequantize() * y
)");
  Tensor q = torch::quantize_per_tensor(torch::randn({3, 5}), 0.1, 120, torch::kQUInt8);
  std::vector<Tensor> in{q, torch::randn({3, 5})};
  std::string path = temp_dir("quantized_io") + "/model.onnx";
  ExportSummary s = export_model(m, in, path);
  ASSERT_EQ(s.inputs.size(), 4u);
  EXPECT_EQ(s.inputs[0].type.str(), "Byte(3, 5)");
  EXPECT_EQ(s.inputs[1].type.str(), "Double()");
  EXPECT_EQ(s.inputs[2].type.str(), "Long()");
  ASSERT_EQ(s.outputs.size(), 4u);
  EXPECT_EQ(s.outputs[1].type.str(), "Float()");
  EXPECT_EQ(s.outputs[2].type.str(), "Byte()");
  EXPECT_EQ(s.input_positions, (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_NE(s.str().find("(example input 1)"), std::string::npos) << s.str();
  std::vector<Tensor> fed = s.graph_inputs(in);
  ASSERT_EQ(fed.size(), 4u);
  EXPECT_EQ(fed[0].scalar_type(), torch::kByte);
  EXPECT_EQ(fed[1].item<double>(), q.q_scale());
  EXPECT_EQ(fed[2].item<int64_t>(), 120);
  expect_outputs_match(path, fed, s.eager_outputs, "quantized_io");
}

// An example input whose values the model never reads is not a graph input; the summary says
// which example input feeds each graph input.
TEST(Quantized, SummaryNamesExampleInputs) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x, y):
    return y * float(x.size(0))
)");
  std::vector<Tensor> in{torch::randn({2, 3}), torch::randn({4})};
  ExportSummary s = export_model(m, in, temp_dir("summary_positions") + "/model.onnx");
  EXPECT_EQ(s.input_positions, (std::vector<int64_t>{1}));
  EXPECT_NE(s.str().find("(example input 1)"), std::string::npos) << s.str();
}

// A data set that holds every example input, the dropped one too, is read by name by both
// runtimes (ONNX Runtime's tool fed input_K.pb to the K-th model input, so the dropped first
// input went to `y`); unnamed and too many, it is an error that says what to do.
TEST(Quantized, DataSetWithTheDroppedInputIsReadByName) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x, y):
    return y * float(x.size(0))
)");
  ExportOptions opt;
  opt.input_names = {"x", "y"};
  std::vector<Tensor> in{torch::randn({2, 3}), torch::randn({4})};
  std::string dir = temp_dir("dropped_input_data");
  export_model(m, in, dir + "/model.onnx", opt);
  TestDataSet set;
  set.inputs = in;
  set.input_names = {"x", "y"};
  set.outputs = {m.forward({in[0], in[1]}).toTensor()};
  write_test_data(dir + "/data", set);
  RunResult r = run_ort(dir + "/model.onnx", dir + "/data");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto rep = backend::prepare(dir + "/model.onnx", "CPU");
  TestDataSet read = read_test_data(dir + "/data")[0];
  auto outs = rep.run(set_inputs(read, rep.input_names()));
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(torch::equal(outs[0], set.outputs[0]));
  read.input_names = {"", ""};
  try {
    set_inputs(read, rep.input_names(), 3);
    FAIL() << "two unnamed inputs for one model input should be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("test_data_set_3: 2 input files for a model with 1 "
                                         "inputs (y)"),
              std::string::npos)
        << e.what();
  }
  read.input_names = {"y", "y"};
  EXPECT_THROW(set_inputs(read, rep.input_names()), std::invalid_argument);  // which y?
  read.input_names = {"x", "y"};
  read.inputs = {in[1], in[0]};  // the files' order does not matter when they are named
  EXPECT_TRUE(torch::equal(set_inputs(read, rep.input_names())[0], in[0]));
}

// An If whose branches return quantized tensors with the same scale and zero point (views and
// clamps keep their input's) returns a quantized tensor.
TEST(Quantized, ThroughIf) {
  ExportOptions opt;
  opt.opset_version = 13;
  for (float sign : {1.0f, -1.0f}) {
    Tensor x = torch::randn({3, 4}) + sign * 10;
    expect_script_matches(R"(
def forward(self, x):
    q = torch.quantize_per_tensor(x, 0.05, 100, 13)
    if bool(x.sum() > 0):
        r = torch.relu(q)
    else:
        r = torch.hardtanh(q, -1.0, 1.0)
    return r, r.dequantize() * 2.0
)",
                          {x}, opt, "quantized_if");
  }
}

void expect_export_fails(const std::string& source, const std::vector<Tensor>& in, int opset,
                         const std::vector<std::string>& needles) {
  torch::jit::Module m("Scripted");
  m.define(source);
  ExportOptions opt;
  opt.opset_version = opset;
  try {
    export_model(m, in, temp_dir("quantized_refused") + "/model.onnx", opt);
    FAIL() << "the export should have failed";
  } catch (const ExportError& e) {
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

// Where tonnx cannot follow a quantized tensor, the export fails and says what to do.
TEST(Quantized, Refused) {
  std::vector<Tensor> in{torch::randn({3, 4})};
  // An op whose quantized result tonnx has no rule for (LibTorch computes it in integers).
  expect_export_fails(R"(
def forward(self, x):
    q = torch.quantize_per_tensor(x, 0.1, 10, 13)
    return torch.mean(q, [1]).dequantize()
)",
                      in, 13, {"aten::mean", "dequantize()"});
  // QuantizeLinear is opset 10.
  expect_export_fails(R"(
def forward(self, x):
    return torch.quantize_per_tensor(x, 0.1, 10, 13).dequantize()
)",
                      in, 9, {"opset"});
  // Branches whose quantized results have different scales (sigmoid's is fixed).
  expect_export_fails(R"(
def forward(self, x):
    q = torch.quantize_per_tensor(x, 0.1, 10, 13)
    if bool(x.sum() > 0):
        r = torch.sigmoid(q)
    else:
        r = torch.relu(q)
    return r.dequantize()
)",
                      in, 13, {"differ between the branches"});
  // A quantized tensor carried through a loop.
  expect_export_fails(R"(
def forward(self, x):
    q = torch.quantize_per_tensor(x, 0.1, 10, 13)
    for i in range(int(x.size(0))):
        q = torch.relu(q)
    return q.dequantize()
)",
                      in, 13, {"loop"});
}

}  // namespace
}  // namespace tonnx::test
