// Edge values of the symbolic tests (tests/symbolic/): NaN, the infinities, signed zeros and
// values near float's largest, where ONNX's ops and LibTorch's most often part ways.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace tonnx::test {

inline constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

// -2.5, -1, 0, 0.5, 3, NaN, inf, -inf.
inline torch::Tensor special_values() {
  return torch::tensor({-2.5f, -1.f, 0.f, 0.5f, 3.f, NAN, INFINITY, -INFINITY});
}

// -2.5, -0, 0, 0.5, 3e38 (near float's largest), NaN, inf, -inf.
inline torch::Tensor special() {
  return torch::tensor({-2.5f, -0.f, 0.f, 0.5f, 3e38f, NAN, INFINITY, -INFINITY});
}

}  // namespace tonnx::test
