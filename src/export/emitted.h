// Recording which ONNX ops each symbolic function emits (see tonnx/coverage.h); called by the
// symbolic context for every node it emits.
#pragma once

#include <string>

namespace tonnx::detail {

void record_emitted(const std::string& aten_kind, int opset, const std::string& onnx_op);

}  // namespace tonnx::detail
