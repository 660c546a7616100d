// The C++ frontend's entry points (tonnx/export.h): trace a LibTorch module or callable
// (trace.cpp), then the shared pipeline (pipeline.cpp).
#include <malloc.h>

#include "export/pipeline.h"
#include "export/trace.h"
#include "passes/passes.h"
#include "tonnx/check.h"
#include "tonnx/export.h"

namespace tonnx {
namespace {

// eager_outputs: whether the caller hands ExportSummary::eager_outputs to the user.
detail::Exported run_export(const Traceable& model, const std::vector<torch::Tensor>& args,
                            const ExportOptions& o, bool eager_outputs) {
  detail::validate_options(o);
  OnnxSchemasLoading schemas;  // for the check, while the trace runs
  detail::StageTimer timer;
  timer.lap("start");
  detail::TraceResult tr = detail::trace(model, args, o.training, o.dynamic_axes, o.input_names,
                                         o.trace_check, o.shapes_only_trace, eager_outputs);
  // The traced forward frees what it computed: give the heap back before the weights are
  // written (glibc keeps freed memory below the mmap threshold otherwise).
  malloc_trim(0);
  timer.lap("trace");
  return detail::finish_export(std::move(tr), o);
}

}  // namespace

ir::Model export_to_model(const Traceable& model, const std::vector<torch::Tensor>& args,
                          const ExportOptions& options) {
  ir::Model m = run_export(model, args, options, false).model;
  passes::materialize_initializers(*m.graph);
  return m;
}

ExportSummary export_traceable(const Traceable& model, const std::vector<torch::Tensor>& args,
                               const std::string& path, const ExportOptions& options) {
  return detail::export_to_path(
      path, options, [&] { return run_export(model, args, options, options.eager_outputs); });
}

}  // namespace tonnx
