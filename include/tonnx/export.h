// tonnx::export_model: torch.onnx.export for LibTorch.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tonnx/ir.h"
#include "tonnx/symbolic.h"

namespace torch::jit {
struct Module;
}

namespace tonnx {

enum class TrainingMode { EVAL, PRESERVE, TRAINING };
enum class OperatorExportTypes { ONNX, ONNX_ATEN_FALLBACK, ONNX_FALLTHROUGH };
// Weights in a file beside the model (ONNX external data): never, when the model would pass
// protobuf's 2 GB limit (as torch.onnx does), or always.
enum class ExternalData { OFF, AUTO, ON };
// A trace holds only the path its example inputs took. After tracing, the exporter traces again
// on inputs of the same shapes with other values and compares: where the graphs differ (an if
// on a tensor's value, .item()), WARN prints a warning naming the first differing op and its
// scope (and keeps it in ExportSummary::warnings), STRICT fails, OFF skips the second trace.
// WARN traces again only when forward read tensor values on the host through an op (item(),
// a tensor's bool, equal, nonzero, masked_select, unique, repeat_interleave): without one, the
// ops cannot depend on the values, and forward runs once as with torch.onnx. STRICT traces
// again always (it also catches raw reads through data_ptr or accessors, which no op records).
// C++ modules and callables only: a TorchScript file keeps its own control flow, or was
// traced in Python already.
enum class TraceCheck { OFF, WARN, STRICT };

constexpr int kMinOpset = 9;
// The newest opset the symbolic functions write (libonnx 1.12, which checks exports, knows up
// to 17).
constexpr int kMaxOpset = 17;
// The newest opset_version an export takes: from 18 the model is converted with
// tonnx::convert_opset (tonnx/opset.h) after the symbolics wrote it at 17, and judged by the
// backend's validation (libonnx cannot check it).
constexpr int kMaxExportOpset = 23;
constexpr int kDefaultOpset = 17;
// kMinOpset..kMaxExportOpset: the opsets tonnx exports.
constexpr bool is_supported_opset(int v) { return v >= kMinOpset && v <= kMaxExportOpset; }

struct ExportOptions {
  bool export_params = true;
  bool verbose = false;
  TrainingMode training = TrainingMode::EVAL;
  // Names the graph inputs first, then the parameters (and buffers) in state_dict order.
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  OperatorExportTypes operator_export_type = OperatorExportTypes::ONNX;
  int opset_version = kDefaultOpset;
  bool do_constant_folding = true;
  // Input or output name -> {axis -> symbolic dim name}.
  std::map<std::string, std::map<int64_t, std::string>> dynamic_axes;
  bool keep_initializers_as_inputs = false;
  // Extra domain -> opset version imported into the model.
  std::map<std::string, int64_t> custom_opsets;
  // Where verbose output goes; std::cout when null.
  std::ostream* verbose_stream = nullptr;
  // External data: initializers of at least external_data_threshold bytes go into one file,
  // each at an offset aligned to 4096 bytes (mmappable in place). The file's name is
  // relative to the model's folder; empty: the model's file name + ".data".
  ExternalData external_data = ExternalData::AUTO;
  int64_t external_data_threshold = 1024;
  std::string external_data_location;
  TraceCheck trace_check = TraceCheck::WARN;
  // A dynamic_axes name that is neither an input nor an output name: an error (a misspelt
  // name would export static sizes without a word), or with this set, a warning in
  // ExportSummary::warnings and the name is ignored, as torch.onnx 1.13 does.
  bool ignore_unknown_dynamic_axes = false;
  // Trace on meta tensors first: sizes and dtypes, no values, so that forward computes nothing
  // and the export takes a fraction of the time and memory of running the model. The graph is
  // the one a trace on the example values records. tonnx traces on the values instead when
  // the model needs them or a meta trace could differ: an op without a meta kernel, item() or
  // a bool of a tensor, data_ptr<T>() or an accessor, inputs or parameters that are not
  // dense CPU tensors or share memory, TraceCheck::STRICT, tonnx::verify. Caveats: forward
  // runs twice when it falls back, and the untyped data_ptr() of a meta tensor is null. See
  // docs/export_speed.md.
  bool shapes_only_trace = true;
  // Fill ExportSummary::eager_outputs. After a shapes-only trace that runs forward once more
  // on the example inputs; without it, eager_outputs is empty then (`tonnx export` sets it
  // false).
  bool eager_outputs = true;
};

// Marks `axes` of `name` dynamic with generated names (name_dynamic_axes_K), like the
// list form of torch.onnx's dynamic_axes.
void add_dynamic_axes(ExportOptions& opt, const std::string& name,
                      const std::vector<int64_t>& axes);

struct ValueSummary {
  std::string name;
  ir::TensorType type;    // a sequence's: its elements' type
  bool sequence = false;  // an ONNX sequence (a list of tensors or numbers)
};

// What an export produced.
struct ExportSummary {
  std::string path;
  int opset = 0;
  std::vector<ValueSummary> inputs, outputs;
  std::map<std::string, int64_t> op_counts;  // ONNX op type -> count
  int64_t num_nodes = 0;
  int64_t num_initializers = 0;
  int64_t parameter_bytes = 0;
  int64_t file_bytes = 0;
  // The external data file written with the model (empty: none) and its size.
  std::string external_data_path;
  int64_t external_data_bytes = 0;
  double seconds = 0;
  // What LibTorch computes on the example inputs: the reference outputs for any runtime.
  // Empty after a shapes-only trace with ExportOptions::eager_outputs off.
  std::vector<torch::Tensor> eager_outputs;
  // For each graph input (in `inputs`' order), its position among the example inputs. As
  // torch.onnx does, an input the exported graph never reads (used only for its static
  // shape, or not at all) is not a graph input; feed the model inputs[input_positions[k]].
  std::vector<int64_t> input_positions;
  // What the export warned about (also printed to stderr): a trace that depends on values.
  std::vector<std::string> warnings;
  // How the model was traced: on meta tensors (ExportOptions::shapes_only_trace), or on the
  // example values, and then why not shapes only when that was asked for (the first line of
  // the reason: an op without a meta kernel, a read of values, ...).
  bool traced_shapes_only = false;
  std::string traced_on_values_because;
  // The example inputs the exported model takes, in its order.
  std::vector<torch::Tensor> graph_inputs(const std::vector<torch::Tensor>& example) const;
  std::string str() const;  // a short human-readable report
};

// A model to trace: the root module (for parameter names and scopes, may be null) and a
// function from the example inputs to the outputs.
struct Traceable {
  std::shared_ptr<torch::nn::Module> module;
  std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)> forward;
};

inline void append_outputs(std::vector<torch::Tensor>& out, std::vector<torch::Tensor> more) {
  out.insert(out.end(), more.begin(), more.end());
}
// Turns what a forward returns into a flat list of tensors.
std::vector<torch::Tensor> flatten_outputs(torch::nn::AnyValue&& v);
inline std::vector<torch::Tensor> flatten_outputs(const torch::Tensor& t) { return {t}; }
inline std::vector<torch::Tensor> flatten_outputs(const std::vector<torch::Tensor>& v) { return v; }
template <typename... T>
std::vector<torch::Tensor> flatten_outputs(const std::tuple<T...>& t) {
  std::vector<torch::Tensor> out;
  std::apply([&](const auto&... e) { (append_outputs(out, flatten_outputs(e)), ...); }, t);
  return out;
}

Traceable make_traceable(torch::nn::AnyModule module);
Traceable make_traceable(std::shared_ptr<torch::nn::SequentialImpl> seq);

template <typename Impl>
Traceable make_traceable(const torch::nn::ModuleHolder<Impl>& holder) {
  if constexpr (std::is_base_of_v<torch::nn::SequentialImpl, Impl>) {
    return make_traceable(holder.ptr());
  } else {
    return make_traceable(torch::nn::AnyModule(holder));
  }
}

// Any callable over tensors: f(t0, t1, ...) with up to four tensors, or
// f(const std::vector<Tensor>&). It may return a tensor, a vector or a tuple of tensors.
template <typename F>
Traceable make_traceable_fn(F f) {
  using T = torch::Tensor;
  Traceable t;
  t.forward = [f](const std::vector<T>& in) mutable -> std::vector<T> {
    if constexpr (std::is_invocable_v<F&, const std::vector<T>&>) {
      return flatten_outputs(f(in));
    } else {
      auto need = [&](size_t n) {
        if (in.size() != n)
          throw ExportError("the function takes " + std::to_string(n) + " tensor(s) but " +
                            std::to_string(in.size()) + " example input(s) were given");
      };
      if constexpr (std::is_invocable_v<F&, T>) {
        need(1);
        return flatten_outputs(f(in[0]));
      } else if constexpr (std::is_invocable_v<F&, T, T>) {
        need(2);
        return flatten_outputs(f(in[0], in[1]));
      } else if constexpr (std::is_invocable_v<F&, T, T, T>) {
        need(3);
        return flatten_outputs(f(in[0], in[1], in[2]));
      } else if constexpr (std::is_invocable_v<F&, T, T, T, T>) {
        need(4);
        return flatten_outputs(f(in[0], in[1], in[2], in[3]));
      } else {
        static_assert(sizeof(F) == 0, "tonnx: the callable must take 1-4 tensors or a vector");
      }
    }
  };
  return t;
}

// The core: traces, converts, checks and writes. Returns the summary.
ExportSummary export_traceable(const Traceable& model, const std::vector<torch::Tensor>& args,
                               const std::string& path, const ExportOptions& options = {});

// Same, but returns the model instead of writing it (checked all the same).
ir::Model export_to_model(const Traceable& model, const std::vector<torch::Tensor>& args,
                          const ExportOptions& options = {});

template <typename Impl>
ExportSummary export_model(const torch::nn::ModuleHolder<Impl>& model,
                           const std::vector<torch::Tensor>& args, const std::string& path,
                           const ExportOptions& options = {}) {
  return export_traceable(make_traceable(model), args, path, options);
}
inline ExportSummary export_model(torch::nn::AnyModule model,
                                  const std::vector<torch::Tensor>& args, const std::string& path,
                                  const ExportOptions& options = {}) {
  return export_traceable(make_traceable(std::move(model)), args, path, options);
}
inline ExportSummary export_model(const Traceable& model, const std::vector<torch::Tensor>& args,
                                  const std::string& path, const ExportOptions& options = {}) {
  return export_traceable(model, args, path, options);
}
template <typename F,
          typename = std::enable_if_t<!std::is_base_of_v<torch::nn::Module, std::decay_t<F>>>>
ExportSummary export_function(F f, const std::vector<torch::Tensor>& args, const std::string& path,
                              const ExportOptions& options = {}) {
  return export_traceable(make_traceable_fn(std::move(f)), args, path, options);
}

// Opens a module scope for the nodes traced in the current forward (a no-op when not
// exporting). Sequential children get theirs automatically; a user module writes
//   tonnx::ScopeGuard scope(this);
// as the first line of its forward so that its nodes read AlexNet/Sequential[features]/...
class ScopeGuard {
 public:
  explicit ScopeGuard(const torch::nn::Module* module);
  ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  bool active_ = false;
  void* saved_ = nullptr;
};

}  // namespace tonnx
