// Tracing: LibTorch's tracer records the aten ops; tonnx adds module scopes. The C++
// frontend has no forward hooks, so scopes come from two places: ScopeGuard in a user
// module's forward, and wrappers that tonnx puts around the children of every Sequential
// for the duration of the trace (restored afterwards, even on error).
#include "export/trace.h"

#include "export/pipeline.h"
#include "ir/cpu_allocator.h"

#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/torch.h>

#include <iostream>
#include <optional>
#include <set>
#include <unordered_map>

namespace tonnx {
namespace detail {
namespace jit = torch::jit;

namespace {

// Short type name for a scope component: torch::nn::Conv2dImpl -> Conv2d.
std::string short_type_name(const std::string& cpp_name) {
  std::string s = cpp_name;
  auto pos = s.rfind("::");
  if (pos != std::string::npos) s = s.substr(pos + 2);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, "Impl") == 0) s.resize(s.size() - 4);
  return s;
}

struct ActiveTrace {
  std::unordered_map<const torch::nn::Module*, jit::ScopePtr> scopes;
};
thread_local ActiveTrace* g_active = nullptr;

// Modules of torch::nn whose forward takes and returns one tensor: safe to wrap.
bool wrappable(const std::string& type) {
  static const std::set<std::string> names = {"Conv1d",
                                              "Conv2d",
                                              "Conv3d",
                                              "ConvTranspose1d",
                                              "ConvTranspose2d",
                                              "ConvTranspose3d",
                                              "Linear",
                                              "ReLU",
                                              "ReLU6",
                                              "LeakyReLU",
                                              "PReLU",
                                              "ELU",
                                              "SELU",
                                              "CELU",
                                              "GELU",
                                              "SiLU",
                                              "Mish",
                                              "Sigmoid",
                                              "Tanh",
                                              "Hardtanh",
                                              "Hardshrink",
                                              "Softshrink",
                                              "Softplus",
                                              "Softsign",
                                              "Tanhshrink",
                                              "Threshold",
                                              "LogSigmoid",
                                              "Softmax",
                                              "LogSoftmax",
                                              "Softmin",
                                              "GLU",
                                              "MaxPool1d",
                                              "MaxPool2d",
                                              "MaxPool3d",
                                              "AvgPool1d",
                                              "AvgPool2d",
                                              "AvgPool3d",
                                              "AdaptiveAvgPool1d",
                                              "AdaptiveAvgPool2d",
                                              "AdaptiveAvgPool3d",
                                              "AdaptiveMaxPool1d",
                                              "AdaptiveMaxPool2d",
                                              "AdaptiveMaxPool3d",
                                              "LPPool1d",
                                              "LPPool2d",
                                              "BatchNorm1d",
                                              "BatchNorm2d",
                                              "BatchNorm3d",
                                              "InstanceNorm1d",
                                              "InstanceNorm2d",
                                              "InstanceNorm3d",
                                              "LayerNorm",
                                              "GroupNorm",
                                              "LocalResponseNorm",
                                              "CrossMapLRN2d",
                                              "Dropout",
                                              "Dropout2d",
                                              "Dropout3d",
                                              "AlphaDropout",
                                              "FeatureAlphaDropout",
                                              "Flatten",
                                              "Unflatten",
                                              "Identity",
                                              "Embedding",
                                              "PixelShuffle",
                                              "PixelUnshuffle",
                                              "Upsample",
                                              "ZeroPad2d",
                                              "ReflectionPad1d",
                                              "ReflectionPad2d",
                                              "ReflectionPad3d",
                                              "ReplicationPad1d",
                                              "ReplicationPad2d",
                                              "ReplicationPad3d",
                                              "ConstantPad1d",
                                              "ConstantPad2d",
                                              "ConstantPad3d",
                                              "Fold",
                                              "Unfold"};
  return names.count(type) > 0;
}

class ScopedChildImpl : public torch::nn::Module {
 public:
  ScopedChildImpl(torch::nn::AnyModule inner, const torch::nn::Module* target)
      : inner(std::move(inner)), target_(target) {}
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard guard(target_);
    return inner.forward<torch::Tensor>(std::move(x));
  }
  torch::nn::AnyModule inner;

 private:
  const torch::nn::Module* target_;
};
TORCH_MODULE(ScopedChild);

// Wraps the children of every Sequential under root; undoes it when destroyed.
class SequentialWrapper {
 public:
  explicit SequentialWrapper(torch::nn::Module& root) {
    for (const auto& m : root.modules(/*include_self=*/true)) {
      auto* seq = dynamic_cast<torch::nn::SequentialImpl*>(m.get());
      if (!seq) continue;
      size_t idx = 0;
      for (auto it = seq->begin(); it != seq->end(); ++it, ++idx) {
        const torch::nn::Module* child = it->ptr().get();
        if (!wrappable(short_type_name(child->name()))) continue;
        torch::nn::AnyModule original = std::move(*it);
        *it = torch::nn::AnyModule(ScopedChild(std::move(original), child));
        wrapped_.push_back({seq, idx});
      }
    }
  }
  ~SequentialWrapper() {
    for (auto& [seq, idx] : wrapped_) {
      auto it = seq->begin() + static_cast<std::ptrdiff_t>(idx);
      torch::nn::AnyModule inner = std::move(it->get<ScopedChild>()->inner);
      *it = std::move(inner);
    }
  }

 private:
  std::vector<std::pair<torch::nn::SequentialImpl*, size_t>> wrapped_;
};

// Scope of every module: Root/Type[name]/Type[name]...
void build_scopes(const torch::nn::Module& root, ActiveTrace& active) {
  auto root_scope =
      c10::make_intrusive<jit::Scope>()->push(c10::Symbol::scope(short_type_name(root.name())));
  std::function<void(const torch::nn::Module&, jit::ScopePtr)> visit =
      [&](const torch::nn::Module& m, jit::ScopePtr scope) {
        active.scopes[&m] = scope;
        for (const auto& item : m.named_children()) {
          auto child_scope = scope->push(
              c10::Symbol::scope(short_type_name(item.value()->name()) + "[" + item.key() + "]"));
          visit(*item.value(), child_scope);
        }
      };
  visit(root, root_scope);
}

// Modules called directly from a user forward (self.conv1(x)) have no hook to open their
// scope. A node that reads a parameter of a module below its current scope is attributed
// to that module: Conv reading conv1.weight gets ResNet/Conv2d[conv1].
void refine_scopes(jit::Graph& graph, size_t n_user, const std::vector<TracedParam>& params,
                   const ActiveTrace& active) {
  std::unordered_map<const jit::Value*, jit::ScopePtr> owner_scope;
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = active.scopes.find(params[i].owner);
    if (it != active.scopes.end()) owner_scope[graph.inputs()[n_user + i]] = it->second;
  }
  auto is_below = [](jit::ScopePtr s, const jit::ScopePtr& ancestor) {
    for (; s && !s->isRoot(); s = s->parent())
      if (s == ancestor) return true;
    return false;
  };
  for (jit::Node* n : graph.nodes()) {
    for (const jit::Value* in : n->inputs()) {
      auto it = owner_scope.find(in);
      if (it == owner_scope.end() || it->second == n->scope()) continue;
      if (is_below(it->second, n->scope())) {
        n->setScope(it->second);
        break;
      }
    }
  }
}

}  // namespace

std::vector<TracedParam> state_dict(const torch::nn::Module& root) {
  std::vector<TracedParam> out;
  std::set<const void*> seen;
  for (const auto& item : root.named_modules("", /*include_self=*/true)) {
    const std::string prefix = item.key().empty() ? "" : item.key() + ".";
    auto add = [&](const std::string& name, const at::Tensor& t) {
      if (!t.defined()) return;
      if (!seen.insert(t.unsafeGetTensorImpl()).second) return;
      out.push_back({prefix + name, t, item.value().get()});
    };
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) add(p.key(), p.value());
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false)) add(b.key(), b.value());
  }
  return out;
}

namespace {

// Whether forward runs in training mode during the export: asked for, or kept (PRESERVE)
// from a module in training mode.
bool runs_in_training_mode(const Traceable& model, TrainingMode mode) {
  return model.module && (mode == TrainingMode::TRAINING ||
                          (mode == TrainingMode::PRESERVE && model.module->is_training()));
}

// The module in the training mode the export asks for, restored on destruction.
class TrainingModeScope {
 public:
  TrainingModeScope(const Traceable& model, TrainingMode mode) {
    if (!model.module || mode == TrainingMode::PRESERVE) return;
    module_ = model.module.get();
    was_training_ = module_->is_training();
    module_->train(mode == TrainingMode::TRAINING);
  }
  ~TrainingModeScope() {
    if (module_) module_->train(was_training_);
  }
  TrainingModeScope(const TrainingModeScope&) = delete;
  TrainingModeScope& operator=(const TrainingModeScope&) = delete;

 private:
  torch::nn::Module* module_ = nullptr;
  bool was_training_ = false;
};

// A meta tensor of t's sizes, strides and dtype: t's stand-in in a shapes-only trace.
at::Tensor meta_stand_in(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// For the duration of a shapes-only trace, each parameter and buffer becomes a meta tensor of
// its sizes, strides and dtype: its own TensorImpl changes in place, so that the module's
// members, which share it, change too. Put back on destruction, also on error.
class MetaParams {
 public:
  explicit MetaParams(const std::vector<TracedParam>& params) {
    // What may throw comes first, so that a failure leaves every tensor as it was.
    std::vector<at::Tensor> metas;
    std::vector<c10::intrusive_ptr<c10::TensorImpl>> saved;
    for (const auto& p : params) {
      c10::TensorImpl* impl = p.tensor.unsafeGetTensorImpl();
      metas.push_back(meta_stand_in(p.tensor));
      saved.push_back(impl->shallow_copy_and_detach(impl->version_counter(), true));
      versions_.push_back(impl->version_counter().current_version());
    }
    saved_.reserve(params.size());
    try {
      for (size_t k = 0; k < params.size(); ++k) {
        c10::TensorImpl* impl = params[k].tensor.unsafeGetTensorImpl();
        impl->shallow_copy_from(metas[k].getIntrusivePtr());
        saved_.emplace_back(impl, std::move(saved[k]));
      }
    } catch (...) {
      restore();
      throw;
    }
  }
  // Whether forward wrote to a parameter or buffer in place (its version counter moved): a
  // trace on values would write the new values to the file.
  bool written() const {
    for (size_t k = 0; k < saved_.size(); ++k)
      if (saved_[k].first->version_counter().current_version() != versions_[k]) return true;
    return false;
  }
  ~MetaParams() { restore(); }
  MetaParams(const MetaParams&) = delete;
  MetaParams& operator=(const MetaParams&) = delete;

 private:
  void restore() noexcept {
    for (auto& [impl, saved] : saved_) impl->shallow_copy_from(saved);
    saved_.clear();
  }
  std::vector<std::pair<c10::TensorImpl*, c10::intrusive_ptr<c10::TensorImpl>>> saved_;
  std::vector<uint32_t> versions_;
};
}  // namespace

namespace {

// Whether a trace on meta tensors can stand for one on these inputs and this module's
// parameters: dense CPU tensors at the start of their storage (a meta stand-in has no
// offset), no two of them sharing memory (a meta tensor shares nothing, so a write through
// one would no longer show through the other).
bool shapes_only_possible(const Traceable& model, const std::vector<torch::Tensor>& args) {
  std::vector<at::Tensor> all = args;
  if (model.module)
    for (const auto& p : state_dict(*model.module)) all.push_back(p.tensor);
  std::set<const void*> storages;
  for (const at::Tensor& t : all) {
    if (!t.defined() || !t.device().is_cpu() || t.layout() != at::kStrided || t.is_quantized() ||
        t.is_nested() || t.is_neg() || t.is_conj() || !t.has_storage() || t.storage_offset() != 0)
      return false;
    if (!storages.insert(t.storage().unsafeGetStorageImpl()).second) return false;
  }
  return true;
}

// Whether a shapes-only trace's graph is the graph a trace on values gives: no tensor
// constant that is a meta tensor (its values are unknown), and no op that takes strides, which
// a meta kernel may lay out otherwise than the CPU kernel.
bool stands_for_values(const jit::Block& block) {
  static const std::set<c10::Symbol> strided = {
      c10::Symbol::fromQualString("aten::as_strided"),
      c10::Symbol::fromQualString("aten::as_strided_"),
      c10::Symbol::fromQualString("aten::as_strided_scatter"),
      c10::Symbol::fromQualString("aten::empty_strided"),
      c10::Symbol::fromQualString("aten::new_empty_strided")};
  for (const jit::Node* n : block.nodes()) {
    if (strided.count(n->kind())) return false;
    if (n->kind() == c10::prim::Constant && n->output()->type()->cast<c10::TensorType>()) {
      c10::optional<c10::IValue> v = jit::toIValue(n->output());
      if (!v || !v->isTensor() || v->toTensor().is_meta()) return false;
    }
    for (const jit::Block* b : n->blocks())
      if (!stands_for_values(*b)) return false;
  }
  return true;
}

// What forward returns on the example inputs, run as the trace would run it (training mode,
// no autograd), outside any trace.
std::vector<torch::Tensor> run_forward(const Traceable& model,
                                       const std::vector<torch::Tensor>& args, TrainingMode mode) {
  TrainingModeScope training(model, mode);
  torch::NoGradGuard no_grad;
  HugePageScope huge_pages;
  return model.forward(args);
}

// The shapes-only trace: the graph, or nothing when the export must trace on values (an op
// without a meta kernel, a read of values, a graph that may not stand for one on values),
// and then `why`.
std::optional<TraceResult> trace_shapes_only(
    const Traceable& model, const std::vector<torch::Tensor>& args, TrainingMode mode,
    const std::map<std::string, std::map<int64_t, std::string>>& dynamic_axes,
    const std::vector<std::string>& input_names, bool eager_outputs, std::string& why) {
  // Training mode: batch norm updates its running statistics, which the file holds, in a
  // kernel that no version counter sees.
  if (runs_in_training_mode(model, mode)) {
    why = "the module runs in training mode (its buffers may change in forward)";
    return std::nullopt;
  }
  if (!shapes_only_possible(model, args)) {
    why = "an input or parameter is not a dense CPU tensor, or two share memory";
    return std::nullopt;
  }
  try {
    auto once = [&](const std::vector<torch::Tensor>& in) -> std::optional<TraceResult> {
      TraceResult r = trace_once(model, in, mode, /*shapes_only=*/true);
      if (!r.value_reads.empty())
        why = "forward reads values (" + r.value_reads[0] + ")";
      else if (!stands_for_values(*r.graph->block()))
        why = "the graph has a meta constant or an op that takes strides";
      else
        return r;
      return std::nullopt;
    };
    std::optional<TraceResult> a = once(args);
    if (!a) return std::nullopt;
    std::vector<DynamicDim> dims = dynamic_dims(args, dynamic_axes, input_names);
    if (!dims.empty()) {
      std::optional<TraceResult> b = once(grown_inputs(args, dims, &DynamicDim::size_b));
      std::optional<TraceResult> c = once(grown_inputs(args, dims, &DynamicDim::size_c));
      if (!b || !c) return std::nullopt;
      generalize_sizes(*a, *b, *c, dims);
    }
    // The outputs of a shapes-only trace are meta tensors; the pipeline keeps them for their
    // ranks and hands none to the user.
    if (eager_outputs) {
      std::vector<torch::Tensor> values = run_forward(model, args, mode);
      // The same outputs as the meta trace's, or a trace on values says what differs.
      bool same = values.size() == a->eager_outputs.size();
      for (size_t k = 0; same && k < values.size(); ++k)
        same = values[k].defined() && values[k].sizes() == a->eager_outputs[k].sizes() &&
               values[k].scalar_type() == a->eager_outputs[k].scalar_type();
      if (!same) {
        why = "forward on the values returned other sizes or dtypes than on meta tensors";
        return std::nullopt;
      }
      a->eager_outputs = std::move(values);
    }
    return a;
  } catch (const std::exception& e) {
    // The trace on values says what went wrong, if anything does.
    why = e.what();
    const std::string prefix = "tracing the model failed: ";
    if (why.compare(0, prefix.size(), prefix) == 0) why.erase(0, prefix.size());
    return std::nullopt;
  }
}

}  // namespace

TraceResult trace(const Traceable& model, const std::vector<torch::Tensor>& args, TrainingMode mode,
                  const std::map<std::string, std::map<int64_t, std::string>>& dynamic_axes,
                  const std::vector<std::string>& input_names, TraceCheck check, bool shapes_only,
                  bool eager_outputs) {
  // STRICT traces twice on values to catch raw reads no op records; verify (a recording)
  // compares the graph with what LibTorch computed on the example values.
  std::string why;
  if (shapes_only && check != TraceCheck::STRICT && !active_recording()) {
    if (std::optional<TraceResult> r =
            trace_shapes_only(model, args, mode, dynamic_axes, input_names, eager_outputs, why))
      return std::move(*r);
  }
  std::optional<ModelState> before;
  if (check != TraceCheck::OFF) before.emplace(model);
  TraceResult a = trace_once(model, args, mode);
  a.on_values_because = why.substr(0, why.find('\n'));
  if (check == TraceCheck::WARN && a.value_reads.empty()) check = TraceCheck::OFF;
  std::string warning = check_trace(a, model, args, mode, check, before ? &*before : nullptr);
  if (!warning.empty()) {
    std::cerr << "tonnx: warning: " << warning << "\n";
    a.warnings.push_back(warning);
  }
  // Which input axes are dynamic, grouped by symbol; two more traces at other sizes, so that
  // one explanation fits all three sets of sizes.
  std::vector<DynamicDim> dims = dynamic_dims(args, dynamic_axes, input_names);
  if (dims.empty()) return a;
  auto trace_grown = [&](int64_t DynamicDim::*size) {
    try {
      return trace_once(model, grown_inputs(args, dims, size), mode);
    } catch (const ExportError& e) {
      throw ExportError(
          std::string("dynamic_axes: the model could not be traced again at other sizes of "
                      "the dynamic axes (each grown by one or more): ") +
          e.what());
    }
  };
  TraceResult b = trace_grown(&DynamicDim::size_b);
  TraceResult c = trace_grown(&DynamicDim::size_c);
  generalize_sizes(a, b, c, dims);
  return a;
}

TraceResult trace_once(const Traceable& model, const std::vector<torch::Tensor>& args,
                       TrainingMode mode, bool shapes_only) {
  if (!model.forward) throw ExportError("the model to export has no forward function");
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].defined())
      throw ExportError("example input " + std::to_string(i) + " is an undefined tensor");

  TraceResult result;
  result.num_user_inputs = args.size();
  result.shapes_only = shapes_only;
  // tonnx::verify runs the graph again on these: copies, in case forward writes into its inputs.
  if (active_recording())
    for (const auto& a : args) result.example_inputs.push_back(a.clone());
  if (model.module) result.params = state_dict(*model.module);

  TrainingModeScope training(model, mode);

  ActiveTrace active;
  std::optional<SequentialWrapper> wrapper;
  if (model.module) {
    build_scopes(*model.module, active);
    wrapper.emplace(*model.module);
  }
  struct ActiveGuard {
    explicit ActiveGuard(ActiveTrace* a) { g_active = a; }
    ~ActiveGuard() { g_active = nullptr; }
  } active_guard(&active);

  // A shapes-only trace: the parameters, buffers and inputs are meta tensors while it runs.
  std::optional<MetaParams> meta_params;
  if (shapes_only) {
    register_meta_kernels();
    meta_params.emplace(result.params);
  }
  jit::Stack stack;
  for (const auto& a : args) stack.emplace_back(shapes_only ? meta_stand_in(a) : a);
  for (const auto& p : result.params) stack.emplace_back(p.tensor);

  const size_t n_user = args.size();
  auto fn = [&](jit::Stack in) -> jit::Stack {
    std::vector<torch::Tensor> inputs;
    for (size_t i = 0; i < n_user; ++i) inputs.push_back(in[i].toTensor());
    std::unique_ptr<ScopeGuard> root_scope;
    if (model.module) root_scope = std::make_unique<ScopeGuard>(model.module.get());
    std::vector<torch::Tensor> outs = model.forward(inputs);
    jit::Stack out;
    for (auto& t : outs) {
      if (!t.defined()) throw ExportError("the model returned an undefined tensor");
      out.emplace_back(t);
    }
    if (out.empty()) throw ExportError("the model returned no tensors");
    return out;
  };
  torch::NoGradGuard no_grad;
  HugePageScope huge_pages;  // activations in huge pages (ir/cpu_allocator.h)
  std::pair<std::shared_ptr<jit::tracer::TracingState>, jit::Stack> traced;
  try {
    ValueReadProbe probe(result.value_reads);
    traced = jit::tracer::trace(
        std::move(stack), fn, [](const torch::autograd::Variable&) { return std::string(); },
        /*strict=*/false, /*force_outplace=*/false);
  } catch (const ExportError&) {
    throw;
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    if (msg.find("Cannot insert a Tensor that requires grad as a constant") != std::string::npos)
      msg +=
          "\nThe function uses a module's parameters: export the module itself, or pass a "
          "tonnx::Traceable whose .module is that module, so that its parameters are traced as "
          "inputs";
    throw ExportError("tracing the model failed: " + msg);
  } catch (const std::exception& e) {
    throw ExportError(std::string("tracing the model failed: ") + e.what());
  }
  if (meta_params && meta_params->written())
    throw ExportError(
        "forward writes to a parameter or buffer in place: a trace on values exports the values "
        "it writes");
  result.graph = traced.first->graph;
  if (model.module) refine_scopes(*result.graph, n_user, result.params, active);
  for (auto& v : traced.second) result.eager_outputs.push_back(v.toTensor());
  jit::EliminateDeadCode(result.graph);
  return result;
}

}  // namespace detail

ScopeGuard::ScopeGuard(const torch::nn::Module* module) {
  if (!detail::g_active || !module) return;
  const auto& state = torch::jit::tracer::getTracingState();
  if (!state) return;
  auto it = detail::g_active->scopes.find(module);
  if (it == detail::g_active->scopes.end()) return;
  saved_ = new torch::jit::ScopePtr(state->graph->current_scope());
  state->graph->set_current_scope(it->second);
  active_ = true;
}

ScopeGuard::~ScopeGuard() {
  if (!active_) return;
  auto* saved = static_cast<torch::jit::ScopePtr*>(saved_);
  if (const auto& state = torch::jit::tracer::getTracingState())
    state->graph->set_current_scope(*saved);
  delete saved;
}

}  // namespace tonnx
