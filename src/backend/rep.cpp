// prepare / run: the plan is built once; run() executes kernels over a slot table.
// Subgraphs (If/Loop/Scan bodies) get plans of their own; the values they read from
// enclosing graphs are passed in as "captures", resolved by name when the plan is built.
#include <algorithm>
#include <ATen/Parallel.h>

#include <chrono>
#include <mutex>
#include <set>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "ir/schemas.h"
#include "backend/validate.h"
#include "backend/arena.h"
#include "backend/kernels/kernel.h"
#include "backend/blocked_plan.h"
#include "passes/fuse.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace tonnx::backend {

struct Step {
  const ir::Node* node;
  Kernel kernel;
  std::vector<int> in, out;
  std::vector<int> free_after;
};

struct InputSpec {
  std::string name;
  int slot;
  std::optional<ir::TensorType> type;
};

struct SubPlan {
  size_t num_slots = 0;
  std::vector<std::pair<int, RunValue>> constants;
  std::vector<InputSpec> inputs;
  std::vector<int> captures;  // slots of the captured outer values, in capture order
  std::vector<int> outputs;
  std::vector<std::string> output_names;
  std::vector<Step> steps;
  bool check_shapes = false;
  // Accumulated per-step times when profiling (PrepareOptions::profile).
  struct Profile {
    std::mutex mu;
    std::vector<double> ms;
    std::vector<int64_t> calls;
    // Output 0's H and W in the latest run, {-1, -1} where not an image (NodeProfile::plane)
    std::vector<std::pair<int64_t, int64_t>> plane;
  };
  std::unique_ptr<Profile> profile;
};

struct Plan {
  ir::Model model;
  SubPlan graph;
  std::vector<std::string> input_names;
  double prepare_seconds = 0;
  std::shared_ptr<Arena> arena;  // null when PrepareOptions::memory_arena is off
};

bool supports_device(const std::string& device) {
  std::string d = device;
  for (auto& c : d) c = static_cast<char>(toupper(c));
  return d == "CPU" || d == "CPU:0";
}

// ---- planning ---------------------------------------------------------------------------

namespace {

void check_input(const InputSpec& spec, const at::Tensor& t, bool check_shape) {
  if (!t.defined()) throw std::invalid_argument("input '" + spec.name + "' is an undefined tensor");
  if (!spec.type) return;
  const ir::TensorType& want = *spec.type;
  if (want.dtype != ir::DType::Undefined) {
    ir::DType got = ir::dtype_from_scalar_type(t.scalar_type());
    bool widened = (want.dtype == ir::DType::UInt16 && got == ir::DType::Int32) ||
                   ((want.dtype == ir::DType::UInt32 || want.dtype == ir::DType::UInt64) &&
                    got == ir::DType::Int64);
    if (got != want.dtype && !widened)
      throw std::invalid_argument("input '" + spec.name + "' must be " +
                                  ir::dtype_name(want.dtype) + " but a " + ir::dtype_name(got) +
                                  " tensor was given");
  }
  if (!want.shape || !check_shape) return;
  if (static_cast<size_t>(t.dim()) != want.shape->size())
    throw std::invalid_argument("input '" + spec.name + "' must have rank " +
                                std::to_string(want.shape->size()) + " " + want.str() +
                                " but a tensor of shape " + c10::str(t.sizes()) + " was given");
  for (size_t i = 0; i < want.shape->size(); ++i) {
    const auto& d = (*want.shape)[i];
    if (d.value && *d.value != t.size(static_cast<int64_t>(i)))
      throw std::invalid_argument("input '" + spec.name + "' dim " + std::to_string(i) +
                                  " must be " + std::to_string(*d.value) + " (" + want.str() +
                                  ") but a tensor of shape " + c10::str(t.sizes()) + " was given");
  }
}

int opset_of(const std::vector<ir::OpsetImport>& opsets, const std::string& domain) {
  int64_t v = ir::opset_version(opsets, domain);
  return v < 0 ? 1 : static_cast<int>(v);  // not imported: the oldest version
}

void collect_free_names(const ir::Graph& g, std::vector<std::string>& out,
                        std::set<std::string>& seen) {
  std::set<std::string> defined;
  for (const ir::Value* v : g.inputs()) defined.insert(v->name());
  for (const auto& [v, t] : g.initializers()) defined.insert(v->name());
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.nodes()) {
    for (const ir::Value* in : n->inputs())
      if (in) use(in->name());
    for (const std::string& name : subgraph_captures(*n)) use(name);
    for (const ir::Value* o : n->outputs()) defined.insert(o->name());
  }
  for (const ir::Value* v : g.outputs()) use(v->name());
}

void build_plan(SubPlan& p, const ir::Graph& g, const std::vector<ir::OpsetImport>& opsets,
                const std::vector<std::string>& captures, KernelChoices choices) {
  std::unordered_map<const ir::Value*, int> slot;
  auto slot_of = [&](const ir::Value* v) {
    auto it = slot.find(v);
    if (it != slot.end()) return it->second;
    int s = static_cast<int>(p.num_slots++);
    slot[v] = s;
    return s;
  };
  // Names visible to this graph's nodes: captures first, then what the graph defines.
  std::unordered_map<std::string, int> by_name;
  for (const std::string& c : captures) {
    int s = static_cast<int>(p.num_slots++);
    p.captures.push_back(s);
    by_name[c] = s;
  }
  std::set<const ir::Value*> defined;
  auto define = [&](const ir::Value* v) {
    defined.insert(v);
    int s = slot_of(v);
    if (!v->name().empty()) by_name[v->name()] = s;
  };
  for (const auto& [v, t] : g.initializers()) {
    define(v);
    p.constants.push_back({slot_of(v), RunValue(t)});
  }
  for (ir::Value* v : g.inputs()) {
    if (g.is_initializer(v)) continue;
    define(v);
    p.inputs.push_back({v->name(), slot_of(v), v->type()});
  }
  auto resolve = [&](const ir::Node& n, const ir::Value* in) -> int {
    if (defined.count(in)) return slot_of(in);
    auto it = by_name.find(in->name());
    if (!in->producer() && it != by_name.end()) return it->second;
    throw BackendError(n, "input '" + in->name() +
                              "' is not a graph input, an initializer or an output of an earlier "
                              "node (missing, or the graph has a cycle / is not topologically "
                              "sorted)");
  };
  int default_opset = opset_of(opsets, "");
  std::vector<std::string> missing;
  const std::set<std::string> blocked =
      choices.blocked_layout ? blocked_values(g) : std::set<std::string>();
  // By name, but only for a node's output: a read of an outer graph's value (or of an
  // initializer) of the same name is never taken for it.
  auto is_blocked = [&](const ir::Value* v) {
    return v && v->producer() && blocked.count(v->name()) > 0;
  };
  for (const auto& node : g.nodes()) {
    const ir::Node& n = *node;
    Step s;
    s.node = &n;
    for (const ir::Value* in : n.inputs()) s.in.push_back(in ? resolve(n, in) : -1);
    std::vector<std::string> caps = subgraph_captures(n);
    for (const std::string& c : caps) {
      auto it = by_name.find(c);
      if (it == by_name.end())
        throw BackendError(
            n, "a subgraph reads '" + c + "', which no enclosing graph defines before this node");
      s.in.push_back(it->second);
    }
    for (const ir::Value* o : n.outputs()) define(o);
    int op_opset = n.domain().empty() ? default_opset : opset_of(opsets, n.domain());
    KernelSpec spec{n, op_opset, {}, &opsets};
    spec.choices = choices;
    for (const ir::Value* in : n.inputs()) {
      const at::Tensor* c = in ? g.initializer(in) : nullptr;
      spec.constant_inputs.push_back(c ? *c : at::Tensor());
      spec.blocked_in.push_back(is_blocked(in));
    }
    spec.blocked_out = !n.outputs().empty() && is_blocked(n.output(0));
    if (const KernelFactory* f = find_kernel(n.op_type(), n.domain(), op_opset)) {
      // Attribute errors (a wrong type, a bad value) name the node.
      try {
        s.kernel = (*f)(spec);
      } catch (const BackendError& e) {
        if (e.node() == &n) throw;
        kernel_fail(n, e.what());
      } catch (const std::exception& e) {
        kernel_fail(n, e.what());
      }
    } else {
      // From opset 18, the op's version too: which one tonnx lacks.
      int version =
          n.domain().empty() && op_opset > 17 ? ir::semantic_version(n.op_type(), op_opset) : -1;
      missing.push_back((n.domain().empty() ? "" : n.domain() + "::") + n.op_type() + " (opset " +
                        std::to_string(op_opset) +
                        (version > 17 ? ": " + n.op_type() + "-" + std::to_string(version) : "") +
                        ")");
      continue;
    }
    for (const ir::Value* o : n.outputs()) s.out.push_back(o->name().empty() ? -1 : slot_of(o));
    p.steps.push_back(std::move(s));
  }
  if (!missing.empty()) {
    std::set<std::string> uniq(missing.begin(), missing.end());
    std::ostringstream os;
    os << "tonnx's backend has no kernel for:";
    for (const auto& m : uniq) os << " " << m << ";";
    throw std::runtime_error(os.str());
  }
  for (const ir::Value* v : g.outputs()) {
    int s = -1;
    if (defined.count(v)) {
      s = slot_of(v);
    } else {
      auto it = by_name.find(v->name());
      if (v->producer() || it == by_name.end())
        throw std::runtime_error("graph output '" + v->name() + "' is never computed");
      s = it->second;
    }
    p.outputs.push_back(s);
    p.output_names.push_back(v->name());
  }
  // Free each intermediate after its last reader.
  std::set<int> keep(p.outputs.begin(), p.outputs.end());
  std::unordered_map<int, size_t> last_use;
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (int s : p.steps[i].in)
      if (s >= 0) last_use[s] = i;
  for (const auto& [s, i] : last_use)
    if (!keep.count(s)) p.steps[i].free_after.push_back(s);
}

// The limits of the run on this thread (Rep::run_values with RunOptions).
struct RunLimits {
  std::chrono::steady_clock::time_point deadline;
  double timeout = 0;
  const std::atomic<bool>* terminate = nullptr;
};
thread_local const RunLimits* t_limits = nullptr;

RunValues run_plan(const SubPlan& p, const RunValues& inputs, const RunValues& captures) {
  if (inputs.size() != p.inputs.size()) {
    std::ostringstream os;
    os << "the graph takes " << p.inputs.size() << " input(s) (";
    for (size_t i = 0; i < p.inputs.size(); ++i) os << (i ? ", " : "") << p.inputs[i].name;
    os << ") but " << inputs.size() << " were given";
    throw std::invalid_argument(os.str());
  }
  std::vector<RunValue> slots(p.num_slots);
  for (size_t i = 0; i < captures.size() && i < p.captures.size(); ++i)
    slots[p.captures[i]] = captures[i];
  for (const auto& [s, t] : p.constants) slots[s] = t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_tensor()) check_input(p.inputs[i], inputs[i].tensor(), p.check_shapes);
    if (inputs[i].is_strings()) {
      // Kernels index a string tensor's data by its shape: they must agree.
      const StringTensor& st = inputs[i].strings();
      int64_t numel = 1;
      for (int64_t d : st.shape) {
        if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / d))
          throw std::invalid_argument("input '" + p.inputs[i].name + "' has a bad shape");
        numel *= d;
      }
      if (static_cast<size_t>(numel) != st.data.size())
        throw std::invalid_argument("input '" + p.inputs[i].name + "' holds " +
                                    std::to_string(st.data.size()) +
                                    " strings but its shape needs " + std::to_string(numel));
    }
    slots[p.inputs[i].slot] = inputs[i];
  }
  RunValues args;
  std::vector<double> step_ms(p.profile ? p.steps.size() : 0);
  std::vector<std::pair<int64_t, int64_t>> step_plane(p.profile ? p.steps.size() : 0, {-1, -1});
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& s = p.steps[si];
    auto t0 =
        p.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    try {
      check_run_limits(*s.node);
      args.clear();
      for (int i : s.in) args.push_back(i >= 0 ? slots[i] : RunValue());
      RunValues outs = s.kernel(args, *s.node);
      if (outs.size() < s.out.size())
        kernel_fail(*s.node, "produced " + std::to_string(outs.size()) +
                                 " outputs; the graph expects " + std::to_string(s.out.size()));
      if (p.profile && !outs.empty() && outs[0].is_tensor() && !outs[0].empty()) {
        const at::Tensor& y = outs[0].tensor();
        if (y.dim() == 4 || y.dim() == 5) step_plane[si] = {y.size(2), y.size(3)};
      }
      for (size_t k = 0; k < s.out.size(); ++k)
        if (s.out[k] >= 0) slots[s.out[k]] = std::move(outs[k]);
    } catch (const RunCancelled&) {
      throw;
    } catch (const BackendError& e) {
      if (e.node() == s.node) throw;
      throw BackendError::failed(*s.node, e.what());
    } catch (const c10::Error& e) {
      throw BackendError::failed(*s.node, e.what_without_backtrace());
    } catch (const std::exception& e) {
      throw BackendError::failed(*s.node, e.what());
    }
    for (int f : s.free_after) slots[f] = RunValue();
    if (p.profile)
      step_ms[si] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  if (p.profile) {
    std::lock_guard<std::mutex> lock(p.profile->mu);
    for (size_t i = 0; i < step_ms.size(); ++i) {
      p.profile->ms[i] += step_ms[i];
      ++p.profile->calls[i];
      p.profile->plane[i] = step_plane[i];
    }
  }
  RunValues out;
  for (int s : p.outputs) out.push_back(slots[s]);
  return out;
}

}  // namespace

void check_run_limits(const ir::Node& n) {
  const RunLimits* l = t_limits;
  if (!l) return;
  if (l->terminate && l->terminate->load(std::memory_order_relaxed))
    throw RunCancelled("the run was stopped (RunOptions::terminate) at " + node_label(n));
  if (l->timeout > 0 && std::chrono::steady_clock::now() > l->deadline) {
    std::ostringstream os;
    os << "the run passed its time limit of " << l->timeout << " s at " << node_label(n);
    throw RunCancelled(os.str());
  }
}

std::vector<std::string> subgraph_captures(const ir::Node& n) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& a : n.attrs())
    if (a.value.kind() == ir::AttrValue::Kind::Graph) collect_free_names(*a.value.g(), out, seen);
  return out;
}

std::shared_ptr<const SubPlan> plan_subgraph(const ir::Graph& g, const KernelSpec& parent,
                                             const std::vector<std::string>& captures) {
  static const std::vector<ir::OpsetImport> none;
  auto p = std::make_shared<SubPlan>();
  build_plan(*p, g, parent.opsets ? *parent.opsets : none, captures, parent.choices);
  return p;
}

RunValues run_subplan(const SubPlan& p, const RunValues& inputs, const RunValues& captures) {
  return run_plan(p, inputs, captures);
}

Rep prepare(ir::Model model, const std::string& device, const PrepareOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  if (!supports_device(device))
    throw std::invalid_argument("device '" + device +
                                "' is not supported: tonnx's backend runs on the CPU "
                                "(Debian's LibTorch has no CUDA)");
  if (opts.num_threads > 0) at::set_num_threads(opts.num_threads);
  validate_model(model);
  auto plan = std::make_shared<Plan>();
  plan->model = std::move(model);
  ir::Graph& g = *plan->model.graph;
  int opset = opset_of(plan->model.opsets, "");
  // Folding renames folded values, which subgraphs would no longer find by name; a Gradient
  // node recomputes the nodes between its xs and y, which folding and fusion would replace.
  bool has_gradient = std::any_of(g.nodes().begin(), g.nodes().end(), [](const auto& n) {
    return n->op_type() == "Gradient" && n->domain() == "ai.onnx.preview.training";
  });
  if (opts.optimize && !ir::has_subgraphs(g) && !has_gradient) {
    fold_constants(g, opset, false);
    passes::fuse_for_cpu(g, opset, opts.fold_batchnorm);
  }
  build_plan(
      plan->graph, g, plan->model.opsets, {},
      {opts.onednn_conv, opts.onednn_gemm && !opts.exact, opts.blocked_layout && !opts.onednn_conv,
       opts.exact, opts.winograd && !opts.exact && !opts.onednn_conv});
  plan->graph.check_shapes = opts.check_input_shapes;
  if (opts.memory_arena) plan->arena = make_arena();
  if (opts.profile) {
    plan->graph.profile = std::make_unique<SubPlan::Profile>();
    plan->graph.profile->ms.assign(plan->graph.steps.size(), 0);
    plan->graph.profile->calls.assign(plan->graph.steps.size(), 0);
    plan->graph.profile->plane.assign(plan->graph.steps.size(), {-1, -1});
  }
  for (const auto& in : plan->graph.inputs) plan->input_names.push_back(in.name);
  plan->prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Rep(plan);
}

Rep prepare(const onnx::ModelProto& model, const std::string& device, const PrepareOptions& opts,
            const std::string& base_dir) {
  return prepare(model_from_proto(model, base_dir), device, opts);
}

Rep prepare(const std::string& path, const std::string& device, const PrepareOptions& opts) {
  return prepare(load_model(path), device, opts);
}

RunValues Rep::run_values(const RunValues& inputs, const RunOptions& opts) const {
  if (opts.timeout_seconds < 0)
    throw std::invalid_argument("RunOptions::timeout_seconds must be >= 0, got " +
                                std::to_string(opts.timeout_seconds));
  RunLimits limits;
  limits.timeout = opts.timeout_seconds;
  limits.terminate = opts.terminate;
  if (limits.timeout > 0)
    limits.deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(limits.timeout));
  struct Scope {
    const RunLimits* saved;
    explicit Scope(const RunLimits* l) : saved(t_limits) {
      if (l->timeout > 0 || l->terminate) t_limits = l;
    }
    ~Scope() { t_limits = saved; }
  } scope(&limits);
  // No autograd bookkeeping while running: outputs are inference tensors.
  c10::InferenceMode inference;
  ArenaScope arena(plan_->arena.get());
  if (inputs.size() != plan_->graph.inputs.size()) {
    const auto& ins = plan_->graph.inputs;
    std::ostringstream os;
    os << "the model takes " << ins.size() << " input(s) (";
    for (size_t i = 0; i < ins.size(); ++i) os << (i ? ", " : "") << ins[i].name;
    os << ") but " << inputs.size() << " were given";
    throw std::invalid_argument(os.str());
  }
  RunValues outs = run_plan(plan_->graph, inputs, {});
  // oneDNN convolutions hand channels-last tensors on; callers get the usual layout.
  for (RunValue& v : outs)
    if (v.is_tensor() && v.tensor().dim() == 4 && !v.tensor().is_contiguous() &&
        v.tensor().is_contiguous(at::MemoryFormat::ChannelsLast))
      v = RunValue(v.tensor().contiguous());
  return outs;
}

std::vector<at::Tensor> Rep::run(const std::vector<at::Tensor>& inputs) const {
  return run(inputs, RunOptions{});
}

std::vector<at::Tensor> Rep::run(const std::vector<at::Tensor>& inputs,
                                 const RunOptions& opts) const {
  RunValues in(inputs.begin(), inputs.end());
  RunValues outs = run_values(in, opts);
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].is_tensor())
      throw std::runtime_error("output '" + plan_->graph.output_names[i] + "' is " +
                               outs[i].describe() + ", not a tensor: use Rep::run_values");
    out.push_back(outs[i].tensor());
  }
  return out;
}

std::vector<at::Tensor> Rep::run(const std::map<std::string, at::Tensor>& named) const {
  const Plan& p = *plan_;
  auto listing = [&] {
    std::string names;
    for (const auto& spec : p.graph.inputs) names += (names.empty() ? "" : ", ") + spec.name;
    return " (its inputs: " + (names.empty() ? std::string("none") : names) + ")";
  };
  // Unknown names first: a misspelt name is the likelier mistake than a forgotten one.
  for (const auto& [name, t] : named) {
    bool known = false;
    for (const auto& spec : p.graph.inputs) known = known || spec.name == name;
    if (!known)
      throw std::invalid_argument("the model has no input named '" + name + "'" + listing());
  }
  std::vector<at::Tensor> inputs;
  for (const auto& spec : p.graph.inputs) {
    auto it = named.find(spec.name);
    if (it == named.end())
      throw std::invalid_argument("input '" + spec.name + "' is not given" + listing());
    inputs.push_back(it->second);
  }
  return run(inputs);
}

const std::vector<std::string>& Rep::input_names() const { return plan_->input_names; }
const std::vector<std::string>& Rep::output_names() const { return plan_->graph.output_names; }
double Rep::prepare_seconds() const { return plan_->prepare_seconds; }

std::vector<NodeProfile> Rep::profile() const {
  const SubPlan& g = plan_->graph;
  std::vector<NodeProfile> out;
  if (!g.profile) return out;
  std::lock_guard<std::mutex> lock(g.profile->mu);
  for (size_t i = 0; i < g.steps.size(); ++i) {
    auto [h, w] = g.profile->plane[i];
    out.push_back({node_label(*g.steps[i].node), g.steps[i].node->op_type(), g.profile->ms[i],
                   g.profile->calls[i], h < 0 ? "-" : std::to_string(h) + "x" + std::to_string(w),
                   g.steps[i].kernel.note()});
  }
  return out;
}

void Rep::reset_profile() const {
  const SubPlan& g = plan_->graph;
  if (!g.profile) return;
  std::lock_guard<std::mutex> lock(g.profile->mu);
  std::fill(g.profile->ms.begin(), g.profile->ms.end(), 0.0);
  std::fill(g.profile->calls.begin(), g.profile->calls.end(), 0);
}

std::vector<at::Tensor> run_node(const onnx::NodeProto& node, const std::vector<at::Tensor>& inputs,
                                 int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  auto* g = m.mutable_graph();
  *g->add_node() = node;
  size_t k = 0;
  for (const auto& name : node.input()) {
    if (name.empty()) continue;
    g->add_input()->set_name(name);
    ++k;
  }
  if (k != inputs.size())
    throw std::invalid_argument("run_node: the node has " + std::to_string(k) + " inputs but " +
                                std::to_string(inputs.size()) + " tensors were given");
  for (const auto& name : node.output()) g->add_output()->set_name(name);
  PrepareOptions opts;
  opts.optimize = false;
  return prepare(m, "CPU", opts).run(inputs);
}

}  // namespace tonnx::backend
