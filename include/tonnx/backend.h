// tonnx's CPU backend, shaped like the seed's Caffe2 one:
//   auto rep = tonnx::backend::prepare("model.onnx", "CPU");
//   std::vector<torch::Tensor> outputs = rep.run({input});
// prepare() does all graph work once (read, fold constants, bind kernels with parsed
// attributes, plan buffer lifetimes); run() only executes the plan.
#pragma once

#include <onnx/onnx_pb.h>

#include <ATen/Tensor.h>

#include <initializer_list>
#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "tonnx/ir.h"

namespace tonnx::backend {

// "Conv node 'conv1'": how the backend names a node in messages and profiles.
std::string node_label(const ir::Node& n);

// An error of prepare or run about one node: what() starts with the node's label, then says
// what is wrong with which value and what was expected ("Gather node 'g': index 7 is out of
// range for axis 0 of size 3"). Errors about the model as a whole (inputs, missing kernels)
// are std::invalid_argument or std::runtime_error.
class BackendError : public std::runtime_error {
 public:
  // "<label>: what"
  BackendError(const ir::Node& node, const std::string& what);
  // "<label> failed: cause": a failure inside the node's computation (an ATen error, a
  // node of a subgraph the node runs).
  static BackendError failed(const ir::Node& node, const std::string& cause);
  const std::string& op_type() const { return op_type_; }
  const std::string& node_name() const { return node_name_; }
  // The node itself; valid while the model it belongs to (the Rep) lives.
  const ir::Node* node() const { return node_; }

 private:
  BackendError(const ir::Node& node, std::string message, int);
  const ir::Node* node_;
  std::string op_type_, node_name_;
};

// A tensor of strings (ATen has no string dtype): row-major data and its shape.
struct StringTensor {
  std::vector<int64_t> shape;
  std::vector<std::string> data;
};

class RunValue;
// An ONNX sequence: the element type (for empty sequences) and its items.
struct Sequence {
  ir::DType elem = ir::DType::Undefined;
  std::vector<RunValue> items;
};

// What a plan slot holds at run time: a tensor (the fast path), a string tensor, a
// sequence, or nothing. An ONNX optional is its element when present and `none` when
// empty; an undefined tensor stands for an omitted optional input.
class RunValue {
 public:
  enum class Kind { None, Tensor, Strings, Sequence };
  RunValue() : v_(at::Tensor()) {}
  RunValue(at::Tensor t) : v_(std::move(t)) {}
  RunValue(StringTensor s) : v_(std::make_shared<const StringTensor>(std::move(s))) {}
  RunValue(Sequence s) : v_(std::make_shared<const Sequence>(std::move(s))) {}
  static RunValue none() { return RunValue(std::monostate{}); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_strings() const { return kind() == Kind::Strings; }
  bool is_sequence() const { return kind() == Kind::Sequence; }
  // An absent value: none, or an undefined tensor.
  bool empty() const { return is_none() || (is_tensor() && !std::get<at::Tensor>(v_).defined()); }
  // Accessors throw std::runtime_error naming both kinds on a mismatch.
  const at::Tensor& tensor() const;
  const StringTensor& strings() const;
  const Sequence& sequence() const;
  std::string describe() const;  // "Float(2, 3)", "sequence of 3", "none", ...

 private:
  explicit RunValue(std::monostate m) : v_(m) {}
  std::variant<std::monostate, at::Tensor, std::shared_ptr<const StringTensor>,
               std::shared_ptr<const Sequence>>
      v_;
};
using RunValues = std::vector<RunValue>;

struct PrepareOptions {
  int num_threads = 0;   // 0: leave LibTorch's setting
  bool optimize = true;  // constant folding at prepare time
  // Inputs must match the shapes the model declares (dtypes are always checked). The ONNX
  // test data has cases whose inputs contradict the declared shape; conformance turns it off.
  bool check_input_shapes = true;
  // Reuse activation buffers across runs (like ONNX Runtime's CPU memory arena): large
  // blocks are kept for the next run instead of going back to the system.
  bool memory_arena = true;
  // With optimize: fold BatchNormalization into the preceding convolution's weights, as ONNX
  // Runtime does. One pass over the activations less, but results round differently from
  // LibTorch (ResNet-50 on random weights: 1.8e-3 relative); off by default.
  bool fold_batchnorm = false;
  // Run 2-D Conv on oneDNN with weights reordered once and activations in channels-last
  // layout from one convolution to the next, with BatchNormalization, Add and LeakyRelu as
  // post-ops (ResNet-50: 0.85x the default's time). oneDNN sums in another order than
  // LibTorch: VGG-16 and AlexNet outputs move 3e-5, random-weight ResNet-50 1.2e-3
  // relative, beyond ONNX's test tolerances (ONNX Runtime: about half that), so off by default.
  bool onednn_conv = false;
  // Keep activations in oneDNN's blocked layout (nChw16c) along chains of 2-D convolutions
  // with constant weights and the Relu, Add, BatchNormalization, Concat and pooling nodes
  // between them, instead of reordering to NCHW and back around every convolution, as ONNX
  // Runtime's NCHWc transformer does. The same kernels and sums as the default path, so the
  // same results bit for bit (docs/backend.md, "Blocked layout"); off runs every node on NCHW.
  // Ignored with onednn_conv, which keeps channels-last instead.
  bool blocked_layout = true;
  // Run MatMul and Gemm whose B is an initializer on oneDNN's matmul, B packed once at
  // prepare (BERT-base: 0.6x the time of LibTorch's OpenBLAS GEMMs, which use AVX2 kernels on
  // this project's AVX-512 CPU). Sums in another order than LibTorch: outputs move about 1e-6
  // relative (docs/backend.md), within ONNX's test tolerances; off gives LibTorch's results.
  bool onednn_gemm = true;
  // LibTorch's own kernels wherever the default takes a faster one that rounds differently:
  // implies onednn_gemm and winograd off, a single row's Gemm stays a GEMM (not a GEMV), and
  // small batch-1 convolutions stay on ATen's native path (docs/backend.md). With one thread
  // the zoo's conv nets then give LibTorch's results bit for bit. `tonnx verify` runs this way, so
  // that a difference it reports is the export's, not rounding; `tonnx run --exact`.
  bool exact = false;
  // 3x3, stride-1 convolutions with 64 or more input channels (and enough work) on a Winograd
  // F(2x2, 3x3) kernel, on AVX-512 CPUs (cpu_info().winograd): oneDNN's where it offers one
  // for the shape (some CPUs do, some do not), else tonnx's own where the channels come in
  // blocks of 16 and there are 64 or more outputs. About 2x faster per layer than the direct
  // one, 4 products per output instead of 9. Only tonnx's kernel gives the same bits at any
  // thread count. Results round differently from LibTorch's (about 1e-6 relative; whole
  // models are held to the accuracy rule, docs/backend.md); where an output is NaN or inf
  // the direct convolution's result is returned instead, so non-finite values land where
  // LibTorch puts them (docs/backend.md, "Winograd"). The transformed weights take 16/9 of
  // the weight's memory and are made at the first run of each input shape. Off with exact.
  bool winograd = true;
  // Time every node of every run (like ONNX Runtime's enable_profiling); read Rep::profile().
  bool profile = false;
};

// Time spent per node over all runs since prepare or Rep::reset_profile (PrepareOptions::profile).
struct NodeProfile {
  std::string node;     // "Conv 'name'" as in error messages
  std::string op_type;  // for totals per op type
  double total_ms = 0;
  int64_t calls = 0;
  // Output 0's plane, "HxW", for an image-shaped output (4-D, or 5-D in the blocked layout);
  // "-" otherwise: for totals per op type and plane, as bench/ort_profile.py prints ONNX
  // Runtime's.
  std::string plane = "-";
  // Which path ran the node and why, where its kernel has several (a convolution: "oneDNN
  // blocked: ..."); empty otherwise.
  std::string kernel;
};

// Totals per op type, per op type and output plane, then the ten slowest nodes; times per run
// (averaged over all runs).
// Empty when nothing was profiled.
std::string profile_report(const std::vector<NodeProfile>& profile);

struct Plan;

// Limits of one run, like ONNX Runtime's RunOptions: a time limit and a flag another thread may
// set. The planner checks them before every node (subgraphs included), Loop and Scan before
// every iteration; a run past either throws RunCancelled, naming the node it stopped at.
struct RunOptions {
  double timeout_seconds = 0;                    // 0: no limit
  const std::atomic<bool>* terminate = nullptr;  // set to true to stop the run
};
class RunCancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Rep {
 public:
  explicit Rep(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  // Positional inputs map onto the graph inputs that are not initializers, in order.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) const;
  // rep.run({a, b}): a braced list of tensors is positional (without this overload two
  // tensors would also match the by-name map).
  std::vector<at::Tensor> run(std::initializer_list<at::Tensor> inputs) const {
    return run(std::vector<at::Tensor>(inputs));
  }
  // Inputs by name; every graph input must be given.
  std::vector<at::Tensor> run(const std::map<std::string, at::Tensor>& inputs) const;
  // With limits (RunOptions): positional tensors, or any kind of value.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs, const RunOptions& opts) const;
  // Any kind of value (sequences, optionals, string tensors), positional.
  RunValues run_values(const RunValues& inputs, const RunOptions& opts = {}) const;
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  double prepare_seconds() const;
  // Per-node times of the top-level graph, in plan order; empty unless profiling is on.
  std::vector<NodeProfile> profile() const;
  // Zero the per-node times, e.g. after a warm-up run whose first-touch page faults and
  // primitive builds would otherwise land on whichever node allocates first.
  void reset_profile() const;

 private:
  std::shared_ptr<const Plan> plan_;
};

// The backend's choices that depend on the CPU, as this process makes them: what the CPU
// has, what tonnx's own kernels use (TONNX_MAX_ISA=avx512|avx2|none caps it, and caps ATen
// and oneDNN with it as libtonnx loads), and what follows. Tests derive their expectations
// from this, never from the machine they were written on. `tonnx cpu` prints it.
struct CpuInfo {
  std::string detected;       // avx512 (F, BW, DQ, VL), avx2 (with FMA) or none
  std::string isa;            // what tonnx's own kernels use: detected, capped by TONNX_MAX_ISA
  std::string max_isa;        // TONNX_MAX_ISA as given, or empty
  std::string aten;           // ATen's CPU capability: AVX512, AVX2 or NO AVX
  std::string onednn;         // oneDNN's effective ISA: avx512_core_bf16, avx2, sse41, ...
  int blocked_width = 0;      // channels per block of the blocked layout oneDNN writes: 16 or 8
  bool winograd = false;      // tonnx's own Winograd F(2x2, 3x3) runs (AVX-512)
  std::string gemv;           // tonnx's single-row GEMV: avx512, avx2 or none (OpenBLAS's)
  bool blocked_pool = false;  // tonnx's pooling on the blocked layout, this width
  bool batchnorm = false;     // tonnx's one-pass BatchNormalization (AVX2)
  std::string str() const;    // one "name: value" line per field
};
CpuInfo cpu_info();

Rep prepare(const std::string& path, const std::string& device = "CPU", const PrepareOptions& = {});
Rep prepare(const onnx::ModelProto& model, const std::string& device = "CPU",
            const PrepareOptions& = {}, const std::string& base_dir = {});
Rep prepare(ir::Model model, const std::string& device = "CPU", const PrepareOptions& = {});

// Checks `m` as prepare() does before it plans: the opsets it imports (ai.onnx 1 to 23), and
// every node of an ONNX domain (subgraphs included) against its operator's schema at that
// opset (libonnx's up to 17, ONNX's specification from 18: input and output counts, required
// inputs and attributes, attribute types), and the graph's inputs, outputs and producers.
// Throws std::invalid_argument, or BackendError naming the node. No kernel is looked up.
void validate(const ir::Model& m);

// Evaluates nodes whose inputs are all known (initializers, Constant outputs) with the
// backend's kernels, so that export and run agree on semantics, and replaces their outputs
// with initializers. With fold_shapes, Shape of a value whose shape is fully static folds too.
// Skips non-deterministic ops, nodes with subgraphs, graph outputs, and results that would
// blow a small input up into a large constant. With keep_dequantize, DequantizeLinear stays (an
// exported model keeps its integer weights, in the QuantizeLinear/DequantizeLinear form that
// runtimes fuse into integer kernels). Returns the nodes folded.
size_t fold_constants(ir::Graph& g, int opset, bool fold_shapes, bool keep_dequantize = false);

// A registered kernel: the ONNX op, its domain ("" is ai.onnx) and its opset range.
struct KernelInfo {
  std::string op_type, domain;
  int since, until;  // until is INT_MAX for "any later opset"
  // For ai.onnx: the newest opset (up to 23) at which this kernel runs the op: a later version
  // of the op that changed its meaning needs a kernel that implements it.
  int runs_until = 0;
};
std::vector<KernelInfo> registered_kernels();

// "CPU" only: Debian's LibTorch is built without CUDA.
bool supports_device(const std::string& device);

// Runs one node (the onnx backend API's run_node).
std::vector<at::Tensor> run_node(const onnx::NodeProto& node, const std::vector<at::Tensor>& inputs,
                                 int opset = 17);

}  // namespace tonnx::backend
