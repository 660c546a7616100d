// The trace-divergence check: a model whose trace depends on its inputs' values is warned
// about (or, strict, refused), naming the first differing op and its scope; a model whose
// trace does not depend on them exports without a word; the second trace changes no state.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "test_util.h"
#include "tonnx/export.h"

namespace tonnx {
namespace {

namespace nn = torch::nn;
using torch::Tensor;

// Branches on the sign of its input's sum: the trace holds one branch. (ScopeGuard: a C++
// module's own scope, as the README shows.)
struct GateImpl : nn::Module {
  Tensor forward(Tensor x) {
    ScopeGuard scope(this);
    if (x.sum().item<double>() > 0) return torch::relu(x);
    return torch::sigmoid(x);
  }
};
TORCH_MODULE(Gate);

// Multiplies by its input's largest value, read as a number: a constant in the trace.
struct ScaleByMaxImpl : nn::Module {
  Tensor forward(Tensor x) { return x * x.max().item<double>(); }
};
TORCH_MODULE(ScaleByMax);

// Counts its calls in a buffer, written in place.
struct CounterImpl : nn::Module {
  CounterImpl() { calls = register_buffer("calls", torch::zeros({1})); }
  Tensor forward(Tensor x) {
    calls.add_(1);
    return x + 1;
  }
  Tensor calls;
};
TORCH_MODULE(Counter);

// Picks one of its inputs by the first one's sign: the same op either way, reading another
// input.
struct PickImpl : nn::Module {
  Tensor forward(Tensor x, Tensor y) { return (x.sum().item<double>() > 0 ? x : y) * 2; }
};
TORCH_MODULE(Pick);

// Doubles its input once per element above 0.5: nonzero sizes the loop, read on the host
// through the result's shape rather than through item().
struct DoublePerLargeImpl : nn::Module {
  Tensor forward(Tensor x) {
    Tensor large = torch::nonzero(x > 0.5);
    Tensor y = x;
    for (int64_t i = 0; i < large.size(0); ++i) y = y * 2;
    return y;
  }
};
TORCH_MODULE(DoublePerLarge);

// Counts its forward calls in a plain member, which no restore puts back.
struct CountedImpl : nn::Module {
  Tensor forward(Tensor x) {
    ++forwards;
    return torch::relu(x) * 3;
  }
  int forwards = 0;
};
TORCH_MODULE(Counted);

Tensor positive() { return torch::rand({3, 4}) + 1; }

TEST(TraceCheck, ValueBranchWarnsNamingTheOpAndScope) {
  torch::manual_seed(0);
  nn::Sequential net(Gate(), nn::Linear(4, 2));
  std::string path = test::temp_dir("trace_check") + "/gate.onnx";
  ExportSummary s = export_model(net, {positive()}, path);
  ASSERT_EQ(s.warnings.size(), 1u);
  const std::string& w = s.warnings[0];
  EXPECT_NE(w.find("records aten::relu where the other one records aten::sigmoid"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("at scope Sequential/Gate[0]"), std::string::npos) << w;
  EXPECT_NE(w.find("control flow"), std::string::npos) << w;
  EXPECT_TRUE(std::filesystem::exists(path));  // a warning: the export is written
}

TEST(TraceCheck, StrictFailsAndWritesNothing) {
  torch::manual_seed(0);
  nn::Sequential net(Gate(), nn::Linear(4, 2));
  std::string path = test::temp_dir("trace_check") + "/strict.onnx";
  ExportOptions o;
  o.trace_check = TraceCheck::STRICT;
  test::expect_error([&] { export_model(net, {positive()}, path, o); },
                     "records aten::relu where the other one records aten::sigmoid");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceCheck, OffTracesOnce) {
  torch::manual_seed(0);
  nn::Sequential net(Gate(), nn::Linear(4, 2));
  ExportOptions o;
  o.trace_check = TraceCheck::OFF;
  ExportSummary s = export_model(net, {positive()}, test::temp_dir("trace_check") + "/off.onnx", o);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(TraceCheck, NumberReadFromATensorIsAConstantThatDiffers) {
  ScaleByMax m;
  ExportSummary s = export_model(m, {positive()}, test::temp_dir("trace_check") + "/max.onnx");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("a constant is"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[0].find("read by aten::mul"), std::string::npos) << s.warnings[0];
}

TEST(TraceCheck, ModelsWithoutValueDependenceExportQuietly) {
  torch::manual_seed(0);
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(3, 4, 3)), nn::BatchNorm2d(4), nn::ReLU(),
                     nn::Flatten(), nn::Linear(4 * 4 * 4, 3), nn::Softmax(1));
  ExportSummary s = export_model(net, {torch::randn({2, 3, 6, 6})},
                                 test::temp_dir("trace_check") + "/quiet.onnx");
  EXPECT_TRUE(s.warnings.empty()) << s.warnings[0];
  // Integer inputs (token ids) are shuffled, not drawn: they stay valid indices.
  nn::Embedding emb(10, 3);
  s = export_model(emb, {torch::randint(0, 10, {2, 5})},
                   test::temp_dir("trace_check") + "/emb.onnx");
  EXPECT_TRUE(s.warnings.empty()) << s.warnings[0];
}

TEST(TraceCheck, SameOpsReadingOtherValuesDiffer) {
  Pick m;
  ExportSummary s =
      export_model(m, {positive(), positive()}, test::temp_dir("trace_check") + "/pick.onnx");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("feeds aten::mul (node "), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[0].find("from input 0 where the other one feeds it from input 1"),
            std::string::npos)
      << s.warnings[0];
}

TEST(TraceCheck, StateReadByForwardIsNotBlamedOnInputs) {
  // BatchNorm with momentum None in training reads num_batches_tracked as a number: both
  // traces start from the same count, so the check sees the same constant.
  torch::manual_seed(0);
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(4).momentum(c10::nullopt));
  ExportOptions o;
  o.training = TrainingMode::TRAINING;
  o.trace_check = TraceCheck::STRICT;
  ExportSummary s =
      export_model(bn, {torch::randn({2, 4, 3, 3})}, test::temp_dir("trace_check") + "/bn.onnx", o);
  EXPECT_TRUE(s.warnings.empty());
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);  // one forward's worth, as one trace
}

TEST(TraceCheck, SecondTraceChangesNoState) {
  Counter c;
  ExportOptions o;
  o.trace_check = TraceCheck::STRICT;  // (WARN traces once: this forward reads no values)
  export_model(c, {torch::randn({2})}, test::temp_dir("trace_check") + "/counter.onnx", o);
  // One forward ran for the export (as torch.onnx's one trace), not two.
  EXPECT_EQ(c->calls.item<double>(), 1.0);
}

TEST(TraceCheck, ForwardThatReadsNoValuesIsTracedOnce) {
  // Nothing in it reads a value on the host, so its ops cannot depend on the values: WARN
  // runs forward once, as torch.onnx does; STRICT checks anyway.
  // (Without eager_outputs: they would run forward once more on the values, outside a trace.)
  Counted m;
  ExportOptions shapes;
  shapes.eager_outputs = false;
  ExportSummary s =
      export_model(m, {positive()}, test::temp_dir("trace_check") + "/once.onnx", shapes);
  EXPECT_TRUE(s.traced_shapes_only);
  EXPECT_EQ(m->forwards, 1);
  EXPECT_TRUE(s.warnings.empty());
  ExportOptions values = shapes;
  values.shapes_only_trace = false;
  s = export_model(m, {positive()}, test::temp_dir("trace_check") + "/values.onnx", values);
  EXPECT_FALSE(s.traced_shapes_only);
  EXPECT_EQ(m->forwards, 2);
  EXPECT_TRUE(s.warnings.empty());
  ExportOptions o = shapes;
  o.trace_check = TraceCheck::STRICT;
  export_model(m, {positive()}, test::temp_dir("trace_check") + "/twice.onnx", o);
  EXPECT_EQ(m->forwards, 4);
}

TEST(TraceCheck, ShapeMadeFromValuesIsChecked) {
  // No item() anywhere: nonzero's size decides how many ops are recorded.
  torch::manual_seed(0);
  DoublePerLarge m;
  ExportSummary s = export_model(m, {positive()}, test::temp_dir("trace_check") + "/nz.onnx");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("the trace depends on the input values"), std::string::npos)
      << s.warnings[0];
}

}  // namespace
}  // namespace tonnx
