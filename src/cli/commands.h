#pragma once

#include <string>
#include <vector>

#include "tonnx/export.h"

namespace tonnx::cli {

// Writes `inputs` and the summary's eager outputs as DIR/test_data_set_0 (ONNX TensorProto),
// named like the exported graph's inputs and outputs.
struct Args;
// The export options every `tonnx export` form shares (--opset, names, dynamic axes, flags).
ExportOptions export_options(const Args& a);

void write_export_test_data(const std::string& dir, const std::vector<at::Tensor>& inputs,
                            const tonnx::ExportSummary& summary);
// DIR/float64_reference/output_K.pb: `model` (its module converted in place) run in double on
// `inputs` (floating ones in double), the float64 reference of the accuracy rule
// (reference.cpp).
void write_float64_reference(const std::string& dir, Traceable& model,
                             const std::vector<at::Tensor>& inputs);

// Each returns the process exit code. Errors are thrown (UsageError -> 2, others -> 1).
int cmd_export(const std::vector<std::string>& args);
int cmd_models(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_print(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);  // run.cpp
int cmd_symbolics(const std::vector<std::string>& args);
int cmd_conformance(const std::vector<std::string>& args);  // conformance.cpp
int cmd_convert(const std::vector<std::string>& args);      // convert.cpp
int cmd_verify(const std::vector<std::string>& args);       // verify.cpp
int cmd_cpu(const std::vector<std::string>& args);          // cpu.cpp

}  // namespace tonnx::cli
