// Runs ONNX backend test cases (a folder with model.onnx and test_data_set_N/{input,output}_K.pb)
// on tonnx's backend: the logic behind `tonnx conformance`.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "tonnx/backend.h"
#include "tonnx/compare.h"

namespace tonnx::backend {

// Reads a TensorProto (numeric or string), SequenceProto or OptionalProto as `type` says.
RunValue value_from_proto_file(const std::string& path, const onnx::TypeProto& type,
                               const std::string& base_dir);
RunValue tensor_value_from_proto(const onnx::TensorProto& p, const std::string& base_dir);

// The conformance runner's default: ONNX's rtol, and an atol tight enough for the test data's
// small values.
inline constexpr Tolerance kConformanceTolerance{1e-3, 1e-7};

enum class CaseStatus { Pass, Fail, Skip };
struct CaseResult {
  std::string name;
  CaseStatus status = CaseStatus::Pass;
  std::string message;  // why it failed or was skipped
};

// `case_name<TAB>reason` lines; '#' starts a comment. Errors name the file and line.
std::map<std::string, std::string> read_skip_list(const std::string& path);
// Each path is a case folder (holds model.onnx) or a folder of case folders; sorted by name.
std::vector<std::string> find_cases(const std::vector<std::string>& paths);
// Never throws for a broken case: errors become a failure with the message.
CaseResult run_case(const std::string& case_dir, const std::map<std::string, std::string>& skips,
                    Tolerance tol = kConformanceTolerance);

}  // namespace tonnx::backend
