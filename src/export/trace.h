// Tracing C++ modules and callables into a TorchScript graph with module scopes.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <map>

#include "export/traced.h"
#include "tonnx/export.h"

namespace tonnx::detail {

// Parameters then buffers of each module, modules in pre-order: torch's state_dict order.
// Tensors shared between modules appear once, under their first name.
std::vector<TracedParam> state_dict(const torch::nn::Module& root);

// Traces the model. With dynamic axes on the inputs, the model is traced a second time at
// other sizes of those axes, and every constant of the first trace that changed with them
// is replaced by arithmetic on the inputs' sizes (see dynamic.cpp).
// Then checks that the trace does not depend on the inputs' values (check_trace): STRICT
// always, WARN when forward read values (TraceResult::value_reads; a model that reads none
// runs once, as with torch.onnx), OFF never.
TraceResult trace(const Traceable& model, const std::vector<torch::Tensor>& args, TrainingMode mode,
                  const std::map<std::string, std::map<int64_t, std::string>>& dynamic_axes = {},
                  const std::vector<std::string>& input_names = {},
                  TraceCheck check = TraceCheck::OFF, bool shapes_only = false,
                  bool eager_outputs = true);
// With shapes_only, trace() first traces on meta tensors (the parameters, buffers and inputs
// stand in as meta tensors of their sizes and dtypes; the forward computes nothing) and uses
// that graph unless the model needs values: an op without a meta kernel, a read of values
// (item(), a bool of a tensor, data_ptr<T>()), inputs that are not dense CPU tensors or share
// memory, a graph with a meta constant or an op that takes strides. Then it traces on values
// as without. eager_outputs: after a shapes-only trace, run forward once more on the example
// values for TraceResult::eager_outputs (else they are meta tensors).
// Kernels for the meta dispatch key that LibTorch's C++ library lacks (meta_kernels.cpp):
// registered once, on the first shapes-only trace.
void register_meta_kernels();
// One trace, as it is; on meta tensors with shapes_only.
TraceResult trace_once(const Traceable& model, const std::vector<torch::Tensor>& args,
                       TrainingMode mode, bool shapes_only = false);
// A module's buffers and the default random generator's state, to run forward again from the
// same start (trace_check.cpp).
class ModelState {
 public:
  explicit ModelState(const Traceable& model);
  void restore() const noexcept;  // warns on stderr when a buffer cannot be put back

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> buffers_;  // the tensor, its saved values
  at::Tensor rng_;
};
// While alive, notes in `reads` (once each) the ops this thread runs that read tensor values
// on the host or size a result by them: item() and conversions to numbers and bools, equal,
// nonzero, masked_select, unique, repeat_interleave. Without one of them, a forward's ops
// cannot depend on its inputs' values, except through raw reads (data_ptr, accessors) that
// no op records.
class ValueReadProbe {
 public:
  explicit ValueReadProbe(std::vector<std::string>& reads);
  ~ValueReadProbe();
  ValueReadProbe(const ValueReadProbe&) = delete;
  ValueReadProbe& operator=(const ValueReadProbe&) = delete;

 private:
  uint64_t handle_;
  std::vector<std::string>* previous_;
};
// Traces `model` again on `args`' shapes with other values (trace_check.cpp) and compares with
// `a`: the warning to give, or empty when the graphs agree or the model cannot run on other
// values. STRICT throws ExportError instead of warning, and when the model cannot run.
// `before`: the state before `a` was traced (the second trace starts from it).
std::string check_trace(const TraceResult& a, const Traceable& model,
                        const std::vector<torch::Tensor>& args, TrainingMode mode, TraceCheck check,
                        const ModelState* before);

// A symbolic dim: where it occurs among the user inputs, and its sizes in three traces.
struct DynamicDim {
  std::string symbol;
  std::vector<std::pair<size_t, int64_t>> uses;  // (user input index, axis)
  int64_t size_a = 0, size_b = 0, size_c = 0;
};
// The dynamic axes of the user inputs `args` grouped by symbol, with size_b and size_c set to
// other sizes: each symbol grows by a different amount, and by amounts that are not
// proportional between b and c. Fails naming an axis out of range or a symbol whose sizes
// disagree between inputs.
std::vector<DynamicDim> dynamic_dims(
    const std::vector<torch::Tensor>& args,
    const std::map<std::string, std::map<int64_t, std::string>>& dynamic_axes,
    const std::vector<std::string>& input_names);
// `args` with every dynamic dim grown to its size `size` (&DynamicDim::size_b or size_c), by
// repeating leading slices: values stay in the input's own domain (token ids stay valid ids).
std::vector<torch::Tensor> grown_inputs(const std::vector<torch::Tensor>& args,
                                        const std::vector<DynamicDim>& dims,
                                        int64_t DynamicDim::*size);
// Rewrites `a` so that constants that differ between traces a, b and c (taken at other sizes
// of the dynamic axes) are computed from the inputs' shapes. An explanation found from a and b
// must also give c's value: two traces alone cannot tell seq + 1 from 2 * batch + 2.
void generalize_sizes(TraceResult& a, const TraceResult& b, const TraceResult& c,
                      const std::vector<DynamicDim>& dims);

}  // namespace tonnx::detail
