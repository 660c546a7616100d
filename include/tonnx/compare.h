// Comparing what a runtime computed with what was expected: one comparer and one tolerance
// for the CLI, the conformance runner and the tests.
#pragma once

#include <ATen/Tensor.h>

#include <string>

#include "tonnx/backend.h"

namespace tonnx {

// ONNX's test tolerances: |got - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 1e-3, atol = 1e-5;
};

struct Comparison {
  bool ok = true;
  // Over the elements that differ (NaN against NaN and equal infinities do not); relative to
  // |expected|. Zero when nothing differs, or when kind, dtype or shape do.
  double max_abs = 0, max_rel = 0;
  // Empty when ok; else what differs: "dtype: got Float, expected Long", "shape: got [2],
  // expected [3]", or the first element out of tolerance: "[1, 2]: got 1.5, expected 1.25
  // (3 of 12 differ)".
  std::string mismatch;
};

// Same dtype and shape, then values: floating (and complex, per component) within `tol`,
// NaN equal to NaN; integers and bools exactly.
Comparison compare(const at::Tensor& got, const at::Tensor& expected, Tolerance tol = {});
// Tensors as above; string tensors, sequences (item by item) and optionals by kind too.
Comparison compare(const backend::RunValue& got, const backend::RunValue& expected,
                   Tolerance tol = {});

}  // namespace tonnx
