// The TorchScript frontend: a loaded torch::jit::Module's forward graph, inlined, with its
// attribute reads (prim::GetAttr on self) turned into parameter inputs named by attribute
// path, module scopes from the inlined call stacks, and tensor types observed by running
// the graph on the example inputs. The result goes through the same pipeline as a C++ trace.
#include "tonnx/torchscript.h"

#include <cstdlib>
#include <iostream>

#include "export/pipeline.h"
#include "export/script_passes.h"
#include "export/trace.h"
#include "passes/passes.h"
#include "tonnx/check.h"

namespace tonnx {
namespace jit = torch::jit;

namespace {

// The TorchScript frontend: its stages in order (script_passes.h), then the shared pipeline.
detail::Exported run_export(jit::Module& module, const std::vector<c10::IValue>& args,
                            const ExportOptions& o) {
  detail::validate_options(o);
  OnnxSchemasLoading schemas;  // for the check, while the graph is prepared
  detail::ScriptExport s = detail::load_forward(module, args, o);
  detail::run_forward(s);
  detail::bind_arguments(s);
  detail::bind_parameters(s);
  detail::simplify_script_graph(s);
  detail::observe_script_types(s);
  detail::specialize_script_graph(s);
  // The graph the converter gets, with observed types: for debugging an export.
  if (std::getenv("TONNX_DEBUG_GRAPH")) std::cerr << s.g->toString();
  return detail::finish_export(detail::script_trace_result(s), o);
}

}  // namespace

ir::Model export_to_model(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                          const ExportOptions& options) {
  ir::Model m =
      run_export(module, std::vector<c10::IValue>(inputs.begin(), inputs.end()), options).model;
  passes::materialize_initializers(*m.graph);
  return m;
}

ExportSummary export_model(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                           const std::string& path, const ExportOptions& options) {
  return export_model_args(module, std::vector<c10::IValue>(inputs.begin(), inputs.end()), path,
                           options);
}

ExportSummary export_model_args(torch::jit::Module& module, const std::vector<c10::IValue>& args,
                                const std::string& path, const ExportOptions& options) {
  return detail::export_to_path(path, options, [&] { return run_export(module, args, options); });
}

}  // namespace tonnx
