// Matrix products of the backend that tests look into (gemm.cpp).
#pragma once

#include <cstdint>

namespace tonnx::backend {

// How many MatMuls, over all Reps, ran their batch of small products over the threads, one
// product per task, instead of at::matmul's one after the other (for tests).
uint64_t batched_matmul_runs();

}  // namespace tonnx::backend
