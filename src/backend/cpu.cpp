// See cpu.h.
#include "backend/cpu.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tonnx::backend::cpu {
namespace {

Isa detect() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
  return Isa::none;
}

}  // namespace

Isa detected() {
  static const Isa d = detect();
  return d;
}

namespace {

struct Cap {
  bool set = false;
  Isa isa = Isa::avx512;
  std::string error;  // an unknown TONNX_MAX_ISA, reported at the first isa()
};

Cap read_cap() {
  Cap c;
  const char* v = std::getenv("TONNX_MAX_ISA");
  if (!v || !*v) return c;
  const std::string s = v;
  if (s == "avx512")
    c.isa = Isa::avx512;
  else if (s == "avx2")
    c.isa = Isa::avx2;
  else if (s == "none")
    c.isa = Isa::none;
  else {
    c.error = "TONNX_MAX_ISA='" + s + "' is not avx512, avx2 or none";
    return c;
  }
  c.set = true;
  // ATen's and oneDNN's own switches (the cap wins over theirs): ATen reads its
  // variable at its first dispatched kernel, oneDNN at its first primitive, both after
  // libtonnx's static initializers have run. (ATen on AVX-512 CPUs uses AVX2 unless told.)
  // Only below what the CPU has: ATen takes ATEN_CPU_CAPABILITY=avx2 without asking the CPU.
  if (c.isa < detected()) {
    ::setenv("ATEN_CPU_CAPABILITY", c.isa == Isa::avx2 ? "avx2" : "default", 1);
    ::setenv("ONEDNN_MAX_CPU_ISA", c.isa == Isa::avx2 ? "AVX2" : "SSE41", 1);
  }
  return c;
}

const Cap& cap() {
  static const Cap c = read_cap();
  return c;
}

// Applied while libtonnx loads (see cpu.h).
[[maybe_unused]] const bool g_cap_applied = (cap(), true);

}  // namespace

Isa isa() {
  const Cap& c = cap();
  if (!c.error.empty()) throw std::invalid_argument(c.error);
  return c.set && c.isa < detected() ? c.isa : detected();
}

const char* name(Isa i) {
  switch (i) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::none:
      break;
  }
  return "none";
}

}  // namespace tonnx::backend::cpu
