// The tests' one tensor assertion, on the library's comparer (tonnx::compare): same dtype and
// shape, values within the tolerance, NaN equal to NaN and equal infinities equal.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tonnx/compare.h"

namespace tonnx::test {

inline void expect_close(const at::Tensor& got, const at::Tensor& want, Tolerance tol,
                         const std::string& what) {
  Comparison c = compare(got, want, tol);
  EXPECT_TRUE(c.ok) << what << ": " << c.mismatch << ", max abs diff " << c.max_abs << "\n got "
                    << got << "\n want " << want;
}

inline void expect_close(const at::Tensor& got, const at::Tensor& want, double rtol = 1e-5,
                         double atol = 1e-5) {
  expect_close(got, want, Tolerance{rtol, atol}, "");
}

}  // namespace tonnx::test
