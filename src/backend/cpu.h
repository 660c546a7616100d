// The instruction sets tonnx's own kernels may use: what this CPU has, capped by TONNX_MAX_ISA.
// The one place the backend (and its tests) ask; nothing else calls __builtin_cpu_supports.
// The cap is applied to ATen (ATEN_CPU_CAPABILITY) and oneDNN (ONEDNN_MAX_CPU_ISA) when
// libtonnx loads, before either has chosen its kernels, so that one variable makes this CPU
// behave as a smaller one for every library tonnx calls (OpenBLAS aside: it chooses when it
// loads, from OPENBLAS_CORETYPE). Public report: tonnx::backend::cpu_info() (tonnx/backend.h).
#pragma once

namespace tonnx::backend::cpu {

enum class Isa { none = 0, avx2 = 1, avx512 = 2 };  // ordered: each includes the one below

// AVX-512 here means F, BW, DQ and VL (Skylake-X and later, Zen 4 and later); AVX2 means AVX2
// and FMA. detected(): what the CPU has; isa(): that, capped. isa() throws
// std::invalid_argument naming the value when TONNX_MAX_ISA is not avx512, avx2 or none.
Isa detected();
Isa isa();
inline bool has(Isa want) { return isa() >= want; }
const char* name(Isa);

}  // namespace tonnx::backend::cpu
