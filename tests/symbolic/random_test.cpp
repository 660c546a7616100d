// Random ops (src/symbolic/random.cpp): rand, randn and their *_like, normal, bernoulli and
// multinomial. They cannot match LibTorch's numbers: they are checked for shape, type and range
// on tonnx's backend, and ONNX Runtime must run the model.
#include "script_check.h"
#include "symbolic_test.h"
#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class RandomParity11 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, RandomParity11, ::testing::Values(11, 16, 17));

// The random ops: the same shape and type as LibTorch's, values in range. ONNX Runtime only
// checks that the model runs (its numbers differ by nature).
TEST_P(RandomParity11, RandomOps) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x, p, probs):
    a = torch.rand([2, 3]) + x * 0
    b = torch.randn([2, 3], dtype=7)
    c = torch.rand_like(x)
    d = torch.randn_like(x)
    e = torch.rand([x.size(0), 4])
    f = torch.normal(x, 0.5)
    g = torch.bernoulli(p)
    h = torch.bernoulli(x, 0.25)
    k = torch.multinomial(probs, 5, True)
    n = torch.multinomial(probs[0], 1)
    return a, b, c, d, e, f, g, h, k, n
)");
  Tensor x = torch::randn({2, 3}), p = torch::tensor({{0.f, 1.f, 0.5f}, {1.f, 0.f, 0.f}});
  Tensor probs = torch::tensor({{0.f, 1.f, 3.f}, {2.f, 0.f, 0.f}});
  std::vector<Tensor> in{x, p, probs};
  ExportOptions opt;
  opt.opset_version = opset();
  std::string dir = temp_dir("random_ops_opset" + std::to_string(opset()));
  ExportSummary s = export_model(m, in, dir + "/model.onnx", opt);
  auto outs = backend::prepare(dir + "/model.onnx", "CPU").run(s.graph_inputs(in));
  ASSERT_EQ(outs.size(), 10u);
  for (size_t i = 0; i < outs.size(); ++i) {
    EXPECT_EQ(outs[i].sizes(), s.eager_outputs[i].sizes()) << "output " << i;
    EXPECT_EQ(outs[i].scalar_type(), s.eager_outputs[i].scalar_type()) << "output " << i;
  }
  for (int i : {0, 2, 4}) EXPECT_TRUE(((outs[i] >= 0) & (outs[i] < 1)).all().item<bool>()) << i;
  for (int i : {1, 3, 5}) EXPECT_TRUE(torch::isfinite(outs[i]).all().item<bool>()) << i;
  // bernoulli of probabilities 0 and 1 is certain.
  Tensor certain = (p == 0) | (p == 1);
  EXPECT_TRUE(torch::equal(outs[6].masked_select(certain), p.masked_select(certain))) << outs[6];
  EXPECT_TRUE(((outs[6] == 0) | (outs[6] == 1)).all().item<bool>());
  EXPECT_TRUE(((outs[7] == 0) | (outs[7] == 1)).all().item<bool>());
  // multinomial never draws a class of probability 0.
  Tensor k = outs[8];
  EXPECT_TRUE((k.select(0, 0) != 0).all().item<bool>()) << k;
  EXPECT_TRUE((k.select(0, 1) == 0).all().item<bool>()) << k;
  EXPECT_NE(outs[9].item<int64_t>(), 0);
  TestDataSet set;
  set.inputs = s.graph_inputs(in);
  write_test_data(dir + "/data", set);
  RunResult r = run_ort(dir + "/model.onnx", dir + "/data");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_export_error(R"(
def forward(self, probs):
    return torch.multinomial(probs, 2)
)",
                      {probs}, opset(), "without replacement");
}

}  // namespace
}  // namespace tonnx::test
