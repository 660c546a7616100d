// Coverage that the code and its tests prove: which ONNX ops each symbolic function emits
// (recorded while tests run), and the generated table of docs/operators.md.
#pragma once

#include <string>
#include <vector>

namespace tonnx {

// While on, every symbolic function records the ONNX ops it emits, per opset.
void set_emitted_recording(bool on);
struct EmittedRecord {
  std::string aten_kind;
  int opset;
  std::string onnx_op;  // empty: the op converted to its input (identity)
};
std::vector<EmittedRecord> emitted_records();  // sorted, unique

// The records as "aten op<TAB>opset<TAB>ONNX op" lines, appended to `path` / read back.
void append_emitted_records(const std::string& path, const std::vector<EmittedRecord>& records);
std::vector<EmittedRecord> read_emitted_records(const std::string& path);

// docs/operators.md: every built-in symbolic (the opsets it is registered at, and the ONNX
// ops the records saw it emit) and every backend kernel. Without records (nullptr) the ONNX
// ops column stays empty.
std::string operators_markdown(const std::vector<EmittedRecord>* emitted);

}  // namespace tonnx
