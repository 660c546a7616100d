// The commands of `tonnx`, one file each (main.cpp lists them and runs one), and what the
// export's forms share.
#pragma once

#include <string>
#include <vector>

#include "cli/args.h"
#include "tonnx/export.h"

namespace tonnx::cli {

extern const Command kExportCommand;       // export.cpp (TorchScript files: export_script.cpp)
extern const Command kModelsCommand;       // models.cpp
extern const Command kCheckCommand;        // check.cpp
extern const Command kPrintCommand;        // print.cpp
extern const Command kConvertCommand;      // convert.cpp
extern const Command kRunCommand;          // run.cpp
extern const Command kVerifyCommand;       // verify.cpp
extern const Command kSymbolicsCommand;    // symbolics.cpp
extern const Command kConformanceCommand;  // conformance.cpp
extern const Command kCpuCommand;          // cpu.cpp

// The options of `tonnx export` (verify takes them too).
Spec export_spec();
// `tonnx export` on parsed arguments (verify calls it with its own output and test data).
int run_export(const Args& a);

// --input-shape "1x3x224x224,1x10": the example input shapes.
std::vector<std::vector<int64_t>> parse_shapes(const std::string& s);

// The export options every `tonnx export` form shares (--opset, names, dynamic axes, flags).
ExportOptions export_options(const Args& a);

// Writes `inputs` and the summary's eager outputs as DIR/test_data_set_0 (ONNX TensorProto),
// named like the exported graph's inputs and outputs.
void write_export_test_data(const std::string& dir, const std::vector<at::Tensor>& inputs,
                            const tonnx::ExportSummary& summary);
// DIR/float64_reference/output_K.pb: `model` (its module converted in place) run in double on
// `inputs` (floating ones in double), the float64 reference of the accuracy rule
// (reference.cpp).
void write_float64_reference(const std::string& dir, Traceable& model,
                             const std::vector<at::Tensor>& inputs);

}  // namespace tonnx::cli
