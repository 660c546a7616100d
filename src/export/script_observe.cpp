// The TorchScript frontend's sixth and seventh stages (script_passes.h): types observed by
// running the graph, then the graph specialized to what does not depend on data.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/lower_tuples.h>

#include <cstdlib>
#include <iostream>
#include <unordered_set>

#include "export/script_graph.h"
#include "export/script_passes.h"
#include "export/specialize.h"
#include "export/trace.h"

namespace tonnx::detail {
namespace jit = torch::jit;

namespace {

// The inputs the graph runs on: copies of the example's, then the parameters (copies of those
// forward writes into, so that the exported initializers keep the module's values).
void gather_run_inputs(ScriptExport& s) {
  for (const auto& t : s.inputs) s.run_inputs.emplace_back(t.clone());
  for (size_t i = 0; i < s.params.size(); ++i) {
    bool written = false;
    for (const jit::Use& u : s.g->inputs()[s.inputs.size() + i]->uses()) {
      const c10::FunctionSchema* sch = u.user->maybeSchema();
      if (sch && u.offset < sch->arguments().size() && sch->arguments()[u.offset].alias_info() &&
          sch->arguments()[u.offset].alias_info()->isWrite())
        written = true;
    }
    at::Tensor t = s.params[i].tensor.detach();
    s.run_inputs.emplace_back(written ? t.clone() : t);
    if (written) s.written_params.push_back(s.inputs.size() + i);
  }
}

}  // namespace

void observe_script_types(ScriptExport& s) {
  gather_run_inputs(s);
  const ExportOptions& o = s.o;
  const std::vector<torch::Tensor>& inputs = s.inputs;
  std::shared_ptr<jit::Graph>& g = s.g;
  // With dynamic axes, the graph also runs with those axes at other sizes (as the C++
  // frontend traces again): sizes that follow them become unknown, so no symbolic freezes
  // them. Doubled first (a net that needs sizes divisible by 32 keeps working), else each grown
  // by one or more (a positional table may cap a length); if neither runs, every size computed
  // from an input is unknown.
  std::vector<DynamicDim> dims = dynamic_dims(inputs, o.dynamic_axes, o.input_names);
  std::vector<std::vector<DynamicDim>> candidates;
  if (!dims.empty()) {
    std::vector<DynamicDim> doubled = dims;
    for (auto& d : doubled) d.size_b = std::max(2 * d.size_a, d.size_a + 1);
    candidates = {doubled, dims};
  }
  auto grown_set = [&](const std::vector<DynamicDim>& ds) {
    std::vector<c10::IValue> grown = s.run_inputs;
    auto g_in = grown_inputs(inputs, ds, &DynamicDim::size_b);
    for (size_t i = 0; i < g_in.size(); ++i) grown[i] = g_in[i].clone();
    for (size_t i : s.written_params)
      grown[i] = s.params[i - inputs.size()].tensor.detach().clone();
    return grown;
  };
  {
    torch::NoGradGuard no_grad;
    if (candidates.empty()) observe_types(g, s.run_inputs, &s.conditions);
    std::string errors;
    for (size_t k = 0; k < candidates.size(); ++k) {
      ObservedConditions seen;
      try {
        observe_types(g, {s.run_inputs, grown_set(candidates[k])}, &seen,
                      k == 0 ? "with the dynamic axes doubled, "
                             : "with the dynamic axes grown by one or more, ");
        s.conditions = std::move(seen);
        errors.clear();
        break;
      } catch (const ExportError& e) {
        errors += std::string(errors.empty() ? "" : "; ") + e.what();
      }
    }
    // Neither ran (inputs whose sizes are tied: x.view(other.shape)): the example run alone,
    // and every size computed from an input is taken to vary.
    if (!errors.empty()) {
      s.probe_failed = true;
      std::cerr << "tonnx: warning: dynamic_axes: the module could not run at other sizes of its "
                   "dynamic axes ("
                << errors
                << "); every size computed from an input is taken to vary, and the model is "
                   "right at the sizes where forward runs\n";
      observe_types(g, s.run_inputs, &s.conditions);
    }
  }
}

void specialize_script_graph(ScriptExport& s) {
  const ExportOptions& o = s.o;
  std::shared_ptr<jit::Graph>& g = s.g;
  std::unordered_set<const jit::Value*> data_shaped;
  if (s.probe_failed)
    for (size_t i = 0; i < s.inputs.size(); ++i) data_shaped.insert(g->inputs()[i]);
  // What the inputs' values decide (parameters and buffers are fixed: not data).
  std::unordered_set<const jit::Value*> data;
  for (size_t i = 0; i < s.inputs.size(); ++i) data.insert(g->inputs()[i]);
  if (!o.dynamic_axes.empty()) dynamic_sizes(g->block(), data);
  data_values(g->block(), data);
  forget_data_shapes(g->block(), data_shaped, data);
  specialize_data_free_ifs(g, s.conditions, !o.dynamic_axes.empty(), data_shaped);
  infer_unobserved(g->block(), !o.dynamic_axes.empty());
  fold_observed(*g, g->block(), !o.dynamic_axes.empty());
  jit::ConstantPropagation(g);
  if (unroll_number_loops(g)) {  // sizes read in the unrolled bodies fold now
    fold_observed(*g, g->block(), !o.dynamic_axes.empty());
    jit::ConstantPropagation(g);
  }
  // Ifs fixed above may have made two values one (`query is key` in the second layer of a
  // scripted nn.TransformerEncoder under dynamic axes): fold those tests again.
  if (fold_export_constants(*g, g->block()) > 0) jit::ConstantPropagation(g);
  // Dicts under ifs that did not depend on data are in straight-line code now.
  if (lower_constant_key_dicts(*g) > 0) {
    jit::LowerAllTuples(g);  // a returned dict is a tuple now
    jit::ConstantPropagation(g);
  }
  jit::EliminateDeadCode(g);
  refuse_dicts(*g);
}

TraceResult script_trace_result(ScriptExport& s) {
  TraceResult tr;
  tr.num_user_inputs = s.inputs.size();
  tr.example_inputs = s.inputs;
  tr.eager_outputs = s.eager_outputs;
  tr.graph = s.g;
  for (const auto& p : s.params) tr.params.push_back({p.name, p.tensor.detach(), nullptr});
  return tr;
}

}  // namespace tonnx::detail
