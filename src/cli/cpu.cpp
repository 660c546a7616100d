// tonnx cpu: the backend's CPU-dependent choices on this machine (tonnx::backend::cpu_info).
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/backend.h"

namespace tonnx::cli {

namespace {

const char kCpuHelp[] = R"(usage: tonnx cpu

Prints what tonnx's backend chooses on this CPU: the instruction set the CPU has and the one
tonnx's own kernels use, ATen's and oneDNN's, the blocked layout's width, and which of
tonnx's own kernels run (Winograd, GEMV, blocked pooling).

TONNX_MAX_ISA=avx512|avx2|none caps tonnx's kernels, ATen (ATEN_CPU_CAPABILITY) and oneDNN
(ONEDNN_MAX_CPU_ISA) together, so that this CPU chooses as a smaller one would. OpenBLAS
chooses when it loads: cap it with OPENBLAS_CORETYPE (e.g. Haswell).
)";

int run_cpu(const Args& a) {
  if (!a.positional.empty()) throw UsageError("takes no arguments");
  std::cout << backend::cpu_info().str();
  return 0;
}

}  // namespace

const Command kCpuCommand{"cpu", kCpuHelp, Spec{}, run_cpu};

}  // namespace tonnx::cli
