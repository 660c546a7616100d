// Memory layout and the prim ops of TorchScript's passes (src/symbolic/strided_and_prim.cpp):
// as_strided (and its refusal for views) and prim::ConstantChunk. Modules are scripted from
// source, exported at several opsets, and checked against LibTorch on ONNX Runtime and tonnx's
// backend.
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "script_check.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

// Exports `m` at `opset`; ONNX Runtime and the backend must reproduce LibTorch's outputs.
void check_module(torch::jit::Module& m, const std::vector<Tensor>& inputs, int opset,
                  const std::string& name, Tolerance tol = {}) {
  ExportOptions opt;
  opt.opset_version = opset;
  std::string path = temp_dir(name + "_opset" + std::to_string(opset)) + "/model.onnx";
  ExportSummary s;
  try {
    s = export_model(m, inputs, path, opt);
  } catch (const std::exception& e) {
    FAIL() << name << " (opset " << opset << "): export failed: " << e.what();
  }
  expect_outputs_match(path, s.graph_inputs(inputs), s.eager_outputs,
                       name + " (opset " + std::to_string(opset) + ")", tol);
}

class StridedAndPrimParity11 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, StridedAndPrimParity11, ::testing::Values(11, 16, 17));

// as_strided reads storage: exported for graph inputs and new tensors, refused for views.
TEST_P(StridedAndPrimParity11, AsStrided) {
  check_script(R"(
def forward(self, x):
    a = torch.as_strided(x, [3, 3, 3], [1, 4, 2], 2)
    b = torch.as_strided(x + 1, [4, 15, 7], [56, 3, 1])
    return a, b
)",
               {torch::randn({5, 8, 7})}, opset(), "as_strided");
  expect_export_error(R"(
def forward(self, x):
    return torch.as_strided(x.t(), [2, 2], [1, 2])
)",
                      {torch::randn({3, 4})}, opset(), "share another tensor's storage");
}

// prim::ConstantChunk comes from TorchScript's passes (torch.chunk with constant arguments);
// the graph is rewritten here the way those passes do.
TEST_P(StridedAndPrimParity11, ConstantChunk) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x):
    a, b, c = torch.chunk(x, 3, 1)
    return a * 2, b, c - 1
)");
  auto graph = m.get_method("forward").graph();
  for (auto it = graph->nodes().begin(); it != graph->nodes().end(); ++it) {
    torch::jit::Node* n = *it;
    if (n->kind() != c10::Symbol::fromQualString("aten::chunk")) continue;
    torch::jit::Node* unpack = n->output()->uses().at(0).user;
    auto* repl = graph->create(c10::Symbol::fromQualString("prim::ConstantChunk"), {n->input(0)},
                               unpack->outputs().size());
    repl->i_(c10::Symbol::attr("chunks"), 3);
    repl->i_(c10::Symbol::attr("dim"), 1);
    repl->insertBefore(n);
    for (size_t k = 0; k < unpack->outputs().size(); ++k)
      unpack->output(k)->replaceAllUsesWith(repl->output(k));
  }
  torch::jit::EliminateDeadCode(graph);
  check_module(m, {torch::randn({2, 7, 6})}, opset(), "constant_chunk");
}

}  // namespace
}  // namespace tonnx::test
