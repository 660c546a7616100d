// The fusions of tonnx: structural rewrites of the IR that compute exactly what the unfused
// nodes compute, one per file in passes/fuse/. The exporter applies the ONNX-to-ONNX one
// (fuse/transpose_gemm.cpp); the backend's prepare applies the CPU ones (fuse/for_cpu.cpp lists
// them and the kernel serving each), whose fused nodes are internal ops of kFusedDomain.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "tonnx/ir.h"

namespace tonnx::passes {

// Gemm(Transpose(B)) -> Gemm(B, transB=1) (and likewise for A): the weight of a Linear stays
// the parameter itself instead of a transposed copy. Valid ONNX in, valid ONNX out.
size_t fuse_transpose_into_gemm(ir::Graph& g);

// n is the ai.onnx op `op` (false for nullptr): the fusions' pattern test.
inline bool is_op(const ir::Node* n, const char* op) {
  return n && n->domain().empty() && n->op_type() == op;
}

// The domain of the backend's internal fused ops; never written to a file.
inline constexpr const char* kFusedDomain = "ai.tonnx";

// The activation a fused node applies in place after its main op: its "activation" string
// attribute, parsed once by the kernel that serves the node, with its parameters in
// activation_alpha (LeakyRelu, HardSigmoid), activation_beta (HardSigmoid) and
// activation_min/activation_max (Clip). Swish is x * Sigmoid(x), as exporters write SiLU.
enum class FusedActivation {
  None,
  Relu,
  LeakyRelu,
  Sigmoid,
  Tanh,
  Clip,
  HardSigmoid,
  HardSwish,
  Swish
};
// nullopt for a name that is none of these ("" is None).
std::optional<FusedActivation> parse_fused_activation(const std::string& name);

// Rewrites Conv/ConvTranspose [+BN] [+Add] [+activation], BN + activation, Concat + BN
// [+activation], Gemm + activation and MatMul + bias [+activation] chains and written-out GELUs
// into fused nodes of kFusedDomain (fuse/for_cpu.cpp). Graphs with
// subgraphs are left alone (a body may read an intermediate by name). `opset` is the graph's
// default-domain opset. Returns the number of chains fused.
size_t fuse_for_cpu(ir::Graph& g, int opset, bool fold_batchnorm);

// GELU as both exporters write it in ONNX ops (exact, with Erf, or the tanh approximation)
// -> ai.tonnx::Gelu(x) with approximate "none" or "tanh": ATen's gelu, which is what LibTorch
// ran (results within an ulp or so of the written-out form). Part of fuse_for_cpu.
size_t fuse_gelu(ir::Graph& g);

}  // namespace tonnx::passes
