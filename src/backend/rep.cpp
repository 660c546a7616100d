// prepare / run: the plan is built once; run() executes kernels over a slot table.
#include <ATen/Parallel.h>

#include <chrono>
#include <set>
#include <sstream>
#include <unordered_map>

#include "backend/kernel.h"
#include "passes/passes.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace tonnx::backend {

struct Step {
  const ir::Node* node;
  KernelFn fn;
  std::vector<int> in, out;
  std::vector<int> free_after;
};

struct InputSpec {
  std::string name;
  int slot;
  std::optional<ir::TensorType> type;
};

struct Plan {
  ir::Model model;
  size_t num_slots = 0;
  std::vector<std::pair<int, at::Tensor>> constants;
  std::vector<InputSpec> inputs;
  std::vector<std::string> input_names, output_names;
  std::vector<int> outputs;
  std::vector<Step> steps;
  double prepare_seconds = 0;
};

bool supports_device(const std::string& device) {
  std::string d = device;
  for (auto& c : d) c = static_cast<char>(toupper(c));
  return d == "CPU" || d == "CPU:0";
}

namespace {

void check_input(const InputSpec& spec, const at::Tensor& t) {
  if (!t.defined()) throw std::invalid_argument("input '" + spec.name + "' is an undefined tensor");
  if (!spec.type) return;
  const ir::TensorType& want = *spec.type;
  if (want.dtype != ir::DType::Undefined) {
    ir::DType got = ir::dtype_from_scalar_type(t.scalar_type());
    if (got != want.dtype)
      throw std::invalid_argument("input '" + spec.name + "' must be " +
                                  ir::dtype_name(want.dtype) + " but a " + ir::dtype_name(got) +
                                  " tensor was given");
  }
  if (!want.shape) return;
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

}  // namespace

Rep prepare(ir::Model model, const std::string& device, const PrepareOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  if (!supports_device(device))
    throw std::invalid_argument("device '" + device +
                                "' is not supported: tonnx's backend runs on the CPU "
                                "(Debian's LibTorch has no CUDA)");
  if (opts.num_threads > 0) at::set_num_threads(opts.num_threads);
  auto plan = std::make_shared<Plan>();
  plan->model = std::move(model);
  ir::Graph& g = *plan->model.graph;
  int opset = static_cast<int>(plan->model.opset(""));
  if (opset < 0) opset = 1;  // no default-domain import: treat as the oldest
  if (opts.optimize) passes::fold_constants(g, opset, false);

  std::unordered_map<const ir::Value*, int> slot;
  auto slot_of = [&](const ir::Value* v) {
    auto it = slot.find(v);
    if (it != slot.end()) return it->second;
    int s = static_cast<int>(plan->num_slots++);
    slot[v] = s;
    return s;
  };
  for (const auto& [v, t] : g.initializers()) plan->constants.push_back({slot_of(v), t});
  for (ir::Value* v : g.inputs()) {
    if (g.is_initializer(v)) continue;
    plan->inputs.push_back({v->name(), slot_of(v), v->type()});
    plan->input_names.push_back(v->name());
  }
  // Bind kernels; report every op without one at once.
  std::vector<std::string> missing;
  std::set<const ir::Value*> defined;
  for (const auto& [v, t] : g.initializers()) defined.insert(v);
  for (ir::Value* v : g.inputs()) defined.insert(v);
  for (const auto& node : g.nodes()) {
    const ir::Node& n = *node;
    for (const ir::Value* in : n.inputs())
      if (in && !defined.count(in))
        throw std::runtime_error(
            node_label(n) + ": input '" + in->name() +
            "' is not a graph input, an initializer or an output of an earlier node "
            "(missing, or the graph has a cycle / is not topologically sorted)");
    for (const ir::Value* o : n.outputs()) defined.insert(o);
    int op_opset = static_cast<int>(plan->model.opset(n.domain()));
    if (op_opset < 0) op_opset = n.domain().empty() ? opset : 1;
    const KernelFactory* f = find_kernel(n.op_type(), n.domain(), op_opset);
    if (!f) {
      missing.push_back((n.domain().empty() ? "" : n.domain() + "::") + n.op_type() + " (opset " +
                        std::to_string(op_opset) + ")");
      continue;
    }
    Step s;
    s.node = &n;
    KernelSpec spec{n, op_opset, {}};
    s.fn = (*f)(spec);
    for (const ir::Value* in : n.inputs()) s.in.push_back(in ? slot_of(in) : -1);
    for (const ir::Value* o : n.outputs()) s.out.push_back(slot_of(o));
    plan->steps.push_back(std::move(s));
  }
  if (!missing.empty()) {
    std::set<std::string> uniq(missing.begin(), missing.end());
    std::ostringstream os;
    os << "tonnx's backend has no kernel for:";
    for (const auto& m : uniq) os << " " << m << ";";
    throw std::runtime_error(os.str());
  }
  for (const ir::Value* v : g.outputs()) {
    if (!defined.count(v))
      throw std::runtime_error("graph output '" + v->name() + "' is never computed");
    plan->outputs.push_back(slot_of(v));
    plan->output_names.push_back(v->name());
  }
  // Free each intermediate after its last reader.
  std::set<int> keep(plan->outputs.begin(), plan->outputs.end());
  for (const auto& c : plan->constants) keep.insert(c.first);
  std::unordered_map<int, size_t> last_use;
  for (size_t i = 0; i < plan->steps.size(); ++i)
    for (int s : plan->steps[i].in)
      if (s >= 0) last_use[s] = i;
  for (const auto& [s, i] : last_use)
    if (!keep.count(s)) plan->steps[i].free_after.push_back(s);
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

std::vector<at::Tensor> Rep::run(const std::vector<at::Tensor>& inputs) const {
  const Plan& p = *plan_;
  if (inputs.size() != p.inputs.size()) {
    std::ostringstream os;
    os << "the model takes " << p.inputs.size() << " input(s) (";
    for (size_t i = 0; i < p.inputs.size(); ++i) os << (i ? ", " : "") << p.inputs[i].name;
    os << ") but " << inputs.size() << " were given";
    throw std::invalid_argument(os.str());
  }
  std::vector<at::Tensor> slots(p.num_slots);
  for (const auto& [s, t] : p.constants) slots[s] = t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_input(p.inputs[i], inputs[i]);
    slots[p.inputs[i].slot] = inputs[i];
  }
  Tensors args;
  for (const Step& s : p.steps) {
    args.clear();
    for (int i : s.in) args.push_back(i >= 0 ? slots[i] : at::Tensor());
    Tensors outs;
    try {
      outs = s.fn(args);
    } catch (const c10::Error& e) {
      throw std::runtime_error(node_label(*s.node) + " failed: " + e.what_without_backtrace());
    } catch (const std::runtime_error& e) {
      std::string msg = e.what();
      if (msg.rfind(node_label(*s.node), 0) == 0) throw;
      throw std::runtime_error(node_label(*s.node) + " failed: " + msg);
    }
    if (outs.size() < s.out.size())
      throw std::runtime_error(node_label(*s.node) + " produced " + std::to_string(outs.size()) +
                               " outputs; the graph expects " + std::to_string(s.out.size()));
    for (size_t k = 0; k < s.out.size(); ++k) slots[s.out[k]] = std::move(outs[k]);
    for (int f : s.free_after) slots[f] = at::Tensor();
  }
  std::vector<at::Tensor> out;
  for (int s : p.outputs) out.push_back(slots[s]);
  return out;
}

std::vector<at::Tensor> Rep::run(const std::map<std::string, at::Tensor>& named) const {
  const Plan& p = *plan_;
  std::vector<at::Tensor> inputs;
  for (const auto& spec : p.inputs) {
    auto it = named.find(spec.name);
    if (it == named.end()) throw std::invalid_argument("input '" + spec.name + "' is not given");
    inputs.push_back(it->second);
  }
  for (const auto& [name, t] : named) {
    bool known = false;
    for (const auto& spec : p.inputs) known = known || spec.name == name;
    if (!known) throw std::invalid_argument("the model has no input named '" + name + "'");
  }
  return run(inputs);
}

const std::vector<std::string>& Rep::input_names() const { return plan_->input_names; }
const std::vector<std::string>& Rep::output_names() const { return plan_->output_names; }
double Rep::prepare_seconds() const { return plan_->prepare_seconds; }

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
