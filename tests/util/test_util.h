// Test harness: export a model, then check tonnx's backend and ONNX Runtime (the
// independent oracle) against LibTorch eager outputs.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "expect_close.h"
#include "tonnx/compare.h"
#include "tonnx/export.h"

namespace tonnx::test {

// A model of one node `op` named "n": y = op(inputs...), float inputs of unknown shape (an
// empty name is an omitted optional input), a float output, ai.onnx at `opset`.
// Expects `f` to throw an exception whose message contains `what` (a gtest failure naming
// both otherwise).
void expect_error(const std::function<void()>& f, const std::string& what);
// f fails as libonnx does on tests/data/libonnx_convtranspose_crash.onnx, whose dims libonnx
// reads past: undefined behaviour, which ends in a SIGSEGV or, reading a huge count there, in
// std::bad_alloc. Either way an error naming the ONNX check, and the caller goes on.
void expect_libonnx_failure(const std::function<void()>& f);
// Whether an error's message is that failure's.
bool is_libonnx_failure(const std::string& message);

onnx::ModelProto one_node_model(const std::string& op, const std::vector<std::string>& inputs,
                                int opset = 17);
// x Float(2, 3) -> Relu -> y -> Neg -> z, a model libonnx accepts: inference gives y's type.
onnx::ModelProto relu_neg_model();

std::string source_dir();
// A fresh, empty folder for this test (under the build tree).
std::string temp_dir(const std::string& name);

struct RunResult {
  int exit_code = 0;
  std::string output;
};
RunResult run_command(const std::string& cmd);

// Runs ONNX Runtime on model + test data; returns its exit code and output.
RunResult run_ort(const std::string& model, const std::string& data_dir, double rtol = 1e-3,
                  double atol = 1e-5);

// expect_close: the one tensor assertion (expect_close.h).

// Exports `model` on `inputs` at opt.opset_version, checks the file, then asserts that tonnx's
// backend and ONNX Runtime both reproduce the LibTorch outputs. Returns the .onnx path.
std::string expect_export_matches(const Traceable& model, const std::vector<torch::Tensor>& inputs,
                                  const ExportOptions& opt, const std::string& name,
                                  Tolerance tol = {});

// Convenience: a callable over tensors.
template <typename F>
std::string expect_fn_matches(F f, const std::vector<torch::Tensor>& inputs, int opset,
                              const std::string& name, Tolerance tol = {}) {
  ExportOptions opt;
  opt.opset_version = opset;
  return expect_export_matches(make_traceable_fn(f), inputs, opt,
                               name + "_opset" + std::to_string(opset), tol);
}

// Asserts that tonnx's backend and ONNX Runtime reproduce `eager_outputs` (LibTorch's, flat) on
// the exported model at `path`, fed `inputs`. An output that is an ONNX sequence (a list of
// tensors a scripted model returns) stands for its elements, in order; ONNX Runtime's Node
// binding returns tensors only, so it reads them through SequenceAt in a copy of the model.
void expect_outputs_match(const std::string& path, const std::vector<torch::Tensor>& inputs,
                          const std::vector<torch::Tensor>& eager_outputs, const std::string& name,
                          Tolerance tol = {});

// Compiles `source` (TorchScript: `def forward(self, ...)`) into a module, exports it with
// `opt` and checks it by expect_outputs_match. Returns the .onnx path.
std::string expect_script_matches(const std::string& source,
                                  const std::vector<torch::Tensor>& inputs,
                                  const ExportOptions& opt, const std::string& name,
                                  Tolerance tol = {});

// The ONNX op types in a model file, in order.
std::vector<std::string> op_types(const std::string& path);

// Opsets where symbolics differ; tests are parameterized over these.
inline std::vector<int> key_opsets() { return {9, 11, 13, 17}; }

}  // namespace tonnx::test
