// Matrix products of the backend that tests look into (gemm.cpp).
#pragma once

#include <cstdint>

namespace tonnx::backend {

// How many MatMuls, over all Reps, ran their batch of small products over the threads, one
// product per task, instead of at::matmul's one after the other (for tests).
uint64_t batched_matmul_runs();
// Whether that path can run here: libtonnx built with OpenMP and LibTorch's BLAS OpenBLAS's
// OpenMP build (elsewhere every MatMul stays on at::matmul).
bool batched_matmul_available();

}  // namespace tonnx::backend
