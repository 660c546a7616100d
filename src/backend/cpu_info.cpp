// tonnx::backend::cpu_info(): the backend's CPU-dependent choices as this process makes them,
// from the places that make them (cpu.h, the kernels' own probes, ATen and oneDNN).
#include <ATen/Version.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>

#include "backend/cpu.h"
#include "backend/kernels/batchnorm_one_pass.h"
#include "backend/kernels/gemm.h"
#include "backend/kernels/pool_vectorized.h"
#include "backend/kernels/conv/winograd.h"
#include "tonnx/backend.h"

namespace tonnx::backend {
namespace {

const char* onednn_isa_name(dnnl::cpu_isa i) {
  switch (i) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "all";
  }
}

bool onednn_avx512(dnnl::cpu_isa i) {
  return i == dnnl::cpu_isa::avx512_core || i == dnnl::cpu_isa::avx512_core_vnni ||
         i == dnnl::cpu_isa::avx512_core_bf16 || i == dnnl::cpu_isa::avx512_core_amx;
}

// "CPU capability usage: AVX2" in ATen's build report (at::get_cpu_capability is not exported).
std::string aten_capability() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  auto at = config.find(key);
  if (at == std::string::npos) return "unknown";
  at += key.size();
  return config.substr(at, config.find('\n', at) - at);
}

const char* gemv_name(GemvIsa i) {
  return i == GemvIsa::Avx512 ? "avx512" : i == GemvIsa::Avx2 ? "avx2" : "none";
}

}  // namespace

CpuInfo cpu_info() {
  CpuInfo r;
  r.detected = cpu::name(cpu::detected());
  r.isa = cpu::name(cpu::isa());
  if (const char* v = std::getenv("TONNX_MAX_ISA")) r.max_isa = v;
  r.aten = aten_capability();
  const dnnl::cpu_isa dnn = dnnl::get_effective_cpu_isa();
  r.onednn = onednn_isa_name(dnn);
  r.blocked_width = onednn_avx512(dnn) ? 16 : 8;
  r.winograd = Winograd2x3::available();
  r.gemv = gemv_name(gemv_isa());
  r.blocked_pool = pool_kernel_runs(r.blocked_width);
  r.batchnorm = batchnorm_kernel_runs();
  return r;
}

std::string CpuInfo::str() const {
  std::ostringstream os;
  os << "cpu: " << detected << "\n"
     << "tonnx kernels: " << isa << (max_isa.empty() ? "" : " (TONNX_MAX_ISA=" + max_isa + ")")
     << "\n"
     << "ATen: " << aten << "\n"
     << "oneDNN: " << onednn << "\n"
     << "blocked layout: " << blocked_width << " channels per block\n"
     << "Winograd F(2x2, 3x3): "
     << (winograd ? "oneDNN's where it offers it, else tonnx's own" : "none (direct convolution)")
     << "\n"
     << "single-row GEMV: " << (gemv == "none" ? "OpenBLAS" : "tonnx's own, " + gemv) << "\n"
     << "blocked pooling: " << (blocked_pool ? "tonnx's own" : "ATen's") << "\n"
     << "BatchNormalization: " << (batchnorm ? "tonnx's one pass" : "ATen's") << "\n";
  return os.str();
}

}  // namespace tonnx::backend
