// Checks of the tests whose modules are compiled from TorchScript source
// (torch::jit::Module::define; a C++ trace would decompose several ops, and scripted graphs keep
// what a trace folds): export at an opset, then tonnx's backend and ONNX Runtime against
// LibTorch, or an export error naming the problem.
#pragma once

#include <torch/script.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tonnx/torchscript.h"

namespace tonnx::test {

// Compiles `source` (`def forward(self, ...)`), exports it at `opset` and checks it
// (expect_script_matches, under `name` and the opset).
inline void check_script(const std::string& source, const std::vector<torch::Tensor>& inputs,
                         int opset, const std::string& name, Tolerance tol = {}) {
  ExportOptions opt;
  opt.opset_version = opset;
  expect_script_matches(source, inputs, opt, name + "_opset" + std::to_string(opset), tol);
}

// Exports at `opset`, with a dynamic batch when asked: sizes stay computed (aten::size, len,
// min, max are exported, not folded).
inline void expect_script_matches(const std::string& source,
                                  const std::vector<torch::Tensor>& inputs, const std::string& name,
                                  int opset = 17, bool dynamic_batch = false) {
  ExportOptions opt;
  opt.opset_version = opset;
  if (dynamic_batch)
    for (size_t i = 0; i < inputs.size(); ++i)
      add_dynamic_axes(opt, inputs.size() == 1 ? "input" : "input_" + std::to_string(i), {0});
  expect_script_matches(source, inputs, opt, name);
}

// The export of `source` at `opset` fails with an error that contains `what`.
inline void expect_export_error(const std::string& source, const std::vector<torch::Tensor>& inputs,
                                int opset, const std::string& what) {
  torch::jit::Module m("Scripted");
  m.define(source);
  ExportOptions opt;
  opt.opset_version = opset;
  expect_error([&] { export_model(m, inputs, temp_dir("refused") + "/m.onnx", opt); }, what);
}

}  // namespace tonnx::test
