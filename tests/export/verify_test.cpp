// tonnx::verify: a correct export passes on both runtimes; an export made wrong on purpose (a
// user symbolic emitting a slightly different op) is caught at that node, with its scope, and
// its one-node reproduction reproduces the difference.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"
#include "tonnx/verify.h"

namespace tonnx {
namespace {

using torch::Tensor;
namespace nn = torch::nn;

nn::Sequential small_net() {
  torch::manual_seed(3);
  return nn::Sequential(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 4), nn::Tanh());
}

// Registers a symbolic for the duration of a test.
struct UserSymbolic {
  std::string op;
  template <typename F>
  UserSymbolic(std::string name, F f) : op(std::move(name)) {
    register_symbolic(op, 9, std::move(f));
  }
  ~UserSymbolic() { unregister_symbolic(op); }
};

TEST(Verify, CorrectExportPassesOnBothRuntimes) {
  VerifyOptions o;
  o.require_runtimes = true;  // ONNX Runtime is part of the test environment
  o.always_search = true;
  VerifyReport r = verify(make_traceable(small_net()), {torch::randn({5, 6})}, o);
  ASSERT_EQ(r.outputs.size(), 2u) << r.str();
  EXPECT_EQ(r.outputs[0].runtime, "tonnx");
  EXPECT_EQ(r.outputs[1].runtime, "ort");
  for (const auto& c : r.outputs) EXPECT_TRUE(c.comparison.ok) << r.str();
  EXPECT_TRUE(r.ok) << r.str();
  EXPECT_FALSE(r.divergence) << r.str();
  EXPECT_NE(r.str().find("verify: PASS"), std::string::npos);
  EXPECT_TRUE(r.model_path.empty());  // a temporary file, removed
}

TEST(Verify, WrongSymbolicIsNamedWithItsScope) {
  // relu exported as LeakyRelu(0.01): negative inputs come out slightly different.
  UserSymbolic wrong("aten::relu", [](SymbolicContext& g, ir::Value* x) -> Outputs {
    return g.op("LeakyRelu", {x}, {{"alpha", 0.01}});
  });
  std::string repro = test::temp_dir("verify_repro");
  VerifyOptions o;
  o.runtimes = {"tonnx", "ort"};
  o.require_runtimes = true;
  o.repro_dir = repro;
  Tensor x = torch::randn({5, 6});
  VerifyReport r = verify(make_traceable(small_net()), {x}, o);
  EXPECT_FALSE(r.ok) << r.str();
  for (const auto& c : r.outputs) EXPECT_FALSE(c.comparison.ok) << r.str();
  ASSERT_TRUE(r.divergence) << r.str();
  const Divergence& d = *r.divergence;
  EXPECT_EQ(d.op_type, "LeakyRelu");
  EXPECT_EQ(d.aten_op, "aten::relu");
  EXPECT_NE(d.scope.find("ReLU[1]"), std::string::npos) << d.scope;
  EXPECT_EQ(d.got, "Float(5, 8)");
  EXPECT_GT(d.comparison.max_abs, 0);
  std::string text = r.str();
  EXPECT_NE(text.find("first divergent node: LeakyRelu"), std::string::npos) << text;
  EXPECT_NE(text.find("verify: FAIL"), std::string::npos) << text;

  // The reproduction: the node alone, fed what tonnx computed before it, differs from
  // LibTorch's value just as in the whole model.
  ASSERT_EQ(d.repro_dir, repro);
  auto sets = read_test_data(repro);
  ASSERT_EQ(sets.size(), 1u);
  ASSERT_EQ(sets[0].inputs.size(), 1u);
  backend::Rep rep = backend::prepare(repro + "/node.onnx");
  std::vector<at::Tensor> got = rep.run(sets[0].inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(torch::equal(got[0], torch::leaky_relu(sets[0].inputs[0], 0.01)));
  // (LibTorch's relu of LibTorch's own input: the same bits as on tonnx's input where tonnx's
  // Linear rounds as LibTorch's; close where it runs on oneDNN's GEMM, as on AVX2-only CPUs)
  EXPECT_TRUE(compare(sets[0].outputs[0], torch::relu(sets[0].inputs[0])).ok);
  EXPECT_FALSE(compare(got[0], sets[0].outputs[0]).ok);
}

TEST(Verify, FirstOfSeveralDifferencesIsReported) {
  // Two wrong ops: the report names the earlier one (tanh after relu).
  UserSymbolic relu("aten::relu", [](SymbolicContext& g, ir::Value* x) -> Outputs {
    return g.op("LeakyRelu", {x}, {{"alpha", 0.5}});
  });
  UserSymbolic tanh("aten::tanh", [](SymbolicContext& g, ir::Value* x) -> Outputs {
    return g.op("Sigmoid", {x});
  });
  VerifyOptions o;
  o.runtimes = {"tonnx"};
  VerifyReport r = verify(make_traceable(small_net()), {torch::randn({3, 6})}, o);
  ASSERT_TRUE(r.divergence) << r.str();
  EXPECT_EQ(r.divergence->op_type, "LeakyRelu") << r.str();
}

TEST(Verify, InPlaceOpsDoNotDisturbReferences) {
  // ReLU(inplace) overwrites the Linear's result in LibTorch; the reference must be the value
  // before that.
  torch::manual_seed(1);
  nn::Sequential net(nn::Linear(4, 4), nn::ReLU(nn::ReLUOptions().inplace(true)), nn::Linear(4, 2));
  VerifyOptions o;
  o.runtimes = {"tonnx"};
  o.always_search = true;
  VerifyReport r = verify(make_traceable(net), {torch::randn({3, 4})}, o);
  EXPECT_TRUE(r.ok) << r.str();
  EXPECT_FALSE(r.divergence) << r.str();
  EXPECT_NE(r.str().find("no node differs"), std::string::npos) << r.str();
}

TEST(Verify, TorchScriptModule) {
  torch::jit::Module m("M");
  m.define(R"(
def forward(self, x):
    if bool(x.sum() > 0):
        y = torch.relu(x)
    else:
        y = -x
    return y * 2
)");
  UserSymbolic wrong("aten::relu",
                     [](SymbolicContext& g, ir::Value* x) -> Outputs { return g.op("Abs", {x}); });
  VerifyOptions o;
  o.runtimes = {"tonnx"};
  o.export_options.opset_version = 13;
  Tensor x = torch::randn({4, 3}).abs();
  x[0][0] = -1;
  VerifyReport r = verify(m, {x}, o);
  EXPECT_FALSE(r.ok) << r.str();
  // The relu sits in a branch: the divergent top-level node is the If.
  ASSERT_TRUE(r.divergence) << r.str();
  EXPECT_EQ(r.divergence->op_type, "If") << r.str();
}

TEST(Verify, ModuleStateIsNotWrittenTwice) {
  // forward counts its calls in a buffer: the reference run works on a copy of it, so the
  // module and the export hold one call's worth.
  struct CounterImpl : nn::Module {
    CounterImpl() { calls = register_buffer("calls", torch::zeros({1})); }
    torch::Tensor forward(torch::Tensor x) {
      calls.add_(1);
      return x + 1;
    }
    torch::Tensor calls;
  };
  auto c = std::make_shared<CounterImpl>();
  VerifyOptions o;
  o.runtimes = {"tonnx"};
  o.always_search = true;
  VerifyReport r = verify(make_traceable(nn::AnyModule(nn::ModuleHolder<CounterImpl>(c))),
                          {torch::randn({3})}, o);
  EXPECT_EQ(c->calls.item<double>(), 1.0) << r.str();
  EXPECT_TRUE(r.ok) << r.str();
}

TEST(Verify, UnknownRuntimeIsAnError) {
  VerifyOptions o;
  o.runtimes = {"tensorrt"};
  test::expect_error(
      [&] {
        verify(make_traceable(small_net()), {torch::randn({1, 6})}, o);
      },
      "unknown runtime 'tensorrt'");
}

}  // namespace
}  // namespace tonnx
