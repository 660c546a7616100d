// The fixture of the symbolic tests (tests/symbolic/): one run per opset (the test's
// parameter), LibTorch's generator seeded with Seed, and check(), which exports a function at
// that opset and compares tonnx's backend and ONNX Runtime with LibTorch eager. A test file may
// hold several fixtures, one per seed and list of opsets that its tests use.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test_util.h"

namespace tonnx::test {

template <uint64_t Seed>
class SymbolicTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(Seed); }
  int opset() const { return GetParam(); }
  template <typename Fn>
  void check(Fn f, std::vector<torch::Tensor> in, const std::string& name, Tolerance tol = {}) {
    expect_fn_matches(f, in, opset(), name, tol);
  }
};

}  // namespace tonnx::test
