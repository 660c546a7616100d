// Records which ONNX ops each symbolic function emits, per opset, when enabled (the tests
// turn it on to generate the coverage table in docs/operators.md).
#pragma once

#include <string>
#include <vector>

namespace tonnx::detail {

void set_emitted_recording(bool on);
void record_emitted(const std::string& aten_kind, int opset, const std::string& onnx_op);
struct EmittedRecord {
  std::string aten_kind;
  int opset;
  std::string onnx_op;
};
std::vector<EmittedRecord> emitted_records();  // sorted, unique

}  // namespace tonnx::detail
