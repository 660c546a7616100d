// Matrix products of the backend that tests look into (gemm.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tonnx::backend {

// How many MatMuls, over all Reps, ran their batch of small products over the threads, one
// product per task, instead of at::matmul's one after the other (for tests).
uint64_t batched_matmul_runs();
// Whether that path can run here: libtonnx built with OpenMP and LibTorch's BLAS OpenBLAS's
// OpenMP build (elsewhere every MatMul stays on at::matmul).
bool batched_matmul_available();

// tonnx's GEMV (gemm.cpp): alpha * x @ b + beta * c for x [K] and b [K, N] float, b stored
// row-major or as b^T row-major; c [N], [1] or undefined. `isa` picks the kernel (tests run
// both where the CPU has AVX-512); undefined where it does not apply (another dtype or layout,
// an empty operand, an ISA this CPU lacks): the caller then runs LibTorch's addmv.
enum class GemvIsa { None, Avx2, Avx512 };
GemvIsa gemv_isa();  // the best this CPU has
at::Tensor gemv(const at::Tensor& x, const at::Tensor& b, const at::Tensor& c, double alpha,
                double beta, GemvIsa isa);
// How many products gemv has computed, over all callers (for tests: in the columns form its
// result can equal OpenBLAS's for one row bit for bit, and then only this tells them apart).
uint64_t gemv_runs();

}  // namespace tonnx::backend
