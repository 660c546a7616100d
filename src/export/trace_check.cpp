// The trace-divergence check: a trace holds only the path its example inputs took. Traced
// again on inputs of the same shapes but other values, a model whose control flow or numbers
// depend on input values records other ops or other constants; the export then warns (or,
// strict, fails) naming the first difference.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/torch.h>

#include <ATen/record_function.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <set>
#include <string_view>
#include <sstream>
#include <unordered_map>

#include "export/trace.h"

namespace tonnx::detail {
namespace jit = torch::jit;
namespace {

// Same shapes and dtypes, other values from the same domain: floats drawn around the negated
// mean with the same spread (a branch on a sign or a threshold goes the other way), integers
// and bools shuffled (token ids and masks stay valid).
std::vector<torch::Tensor> other_values(const std::vector<torch::Tensor>& args) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(0x7e57);
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& x : args) {
    if (x.numel() == 0) {
      out.push_back(x.clone());
      continue;
    }
    if (at::isFloatingType(x.scalar_type())) {
      at::Tensor d = x.detach().to(at::kDouble);
      double mean = d.mean().item<double>();
      double sd = x.numel() > 1 ? d.std().item<double>() : 0;
      if (!(sd > 0) || !std::isfinite(sd)) sd = std::max(1.0, std::abs(mean));
      if (!std::isfinite(mean)) mean = 0;
      at::Tensor r = at::randn(x.sizes(), gen, at::TensorOptions().dtype(at::kDouble));
      out.push_back((r * sd - mean).to(x.scalar_type()).contiguous());
    } else {
      at::Tensor flat = x.reshape({-1});
      at::Tensor perm = at::randperm(flat.numel(), gen, at::TensorOptions().dtype(at::kLong));
      out.push_back(flat.index_select(0, perm).reshape(x.sizes()).contiguous());
    }
  }
  return out;
}

std::string scope_of(jit::Node* n) {
  return n->scope() && !n->scope()->isRoot() ? n->scope()->namesFromRoot() : "";
}

std::string shown(const c10::IValue& v) {
  std::ostringstream os;
  if (v.isTensor())
    os << "a tensor " << c10::str(v.toTensor().sizes());
  else
    os << v;
  std::string s = os.str();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

bool same_constant(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() && b.isTensor()) {
    const at::Tensor &x = a.toTensor(), &y = b.toTensor();
    return x.sizes() == y.sizes() && x.scalar_type() == y.scalar_type() &&
           (x.numel() == 0 || at::equal(x, y));
  }
  if (a.isTensor() != b.isTensor()) return false;
  std::ostringstream sa, sb;
  sa << a;
  sb << b;
  return sa.str() == sb.str();
}

// The first difference between two traces, or empty.
// Where a value comes from, the same in both traces when they agree: "input 0", "output 1 of
// node 7 (aten::add)".
std::unordered_map<const jit::Value*, std::string> origins(jit::Graph& g) {
  std::unordered_map<const jit::Value*, std::string> o;
  for (size_t k = 0; k < g.inputs().size(); ++k) o[g.inputs()[k]] = "input " + std::to_string(k);
  size_t i = 0;
  for (jit::Node* n : g.nodes()) {
    for (size_t k = 0; k < n->outputs().size(); ++k)
      o[n->outputs()[k]] = "output " + std::to_string(k) + " of node " + std::to_string(i) + " (" +
                           n->kind().toQualString() + ")";
    ++i;
  }
  return o;
}

std::string first_difference(jit::Graph& a, jit::Graph& b) {
  std::vector<jit::Node*> na(a.nodes().begin(), a.nodes().end());
  std::vector<jit::Node*> nb(b.nodes().begin(), b.nodes().end());
  auto oa = origins(a), ob = origins(b);
  auto origin = [](const std::unordered_map<const jit::Value*, std::string>& o,
                   const jit::Value* v) {
    auto it = o.find(v);
    return it == o.end() ? std::string("an outer value") : it->second;
  };
  for (size_t i = 0; i < std::max(na.size(), nb.size()); ++i) {
    if (i >= na.size() || i >= nb.size()) {
      jit::Node* extra = i < na.size() ? na[i] : nb[i];
      std::string scope = scope_of(extra);
      return std::string(i < na.size() ? "the example's trace goes on with "
                                       : "the other trace goes on with ") +
             extra->kind().toQualString() + (scope.empty() ? "" : " at scope " + scope) +
             " where the other one ends";
    }
    jit::Node *x = na[i], *y = nb[i];
    std::string scope = scope_of(x);
    std::string where = scope.empty() ? "" : " at scope " + scope;
    if (x->kind() != y->kind())
      return std::string("the example's trace records ") + x->kind().toQualString() +
             " where the other one records " + y->kind().toQualString() + where;
    // The same op reading other values: a branch between two equal-looking paths.
    if (x->inputs().size() != y->inputs().size())
      return std::string("the example's trace gives ") + x->kind().toQualString() + " " +
             std::to_string(x->inputs().size()) + " inputs where the other one gives " +
             std::to_string(y->inputs().size()) + where;
    for (size_t k = 0; k < x->inputs().size(); ++k) {
      std::string fx = origin(oa, x->inputs()[k]), fy = origin(ob, y->inputs()[k]);
      if (fx != fy)
        return std::string("the example's trace feeds ") + x->kind().toQualString() + " (node " +
               std::to_string(i) + ") input " + std::to_string(k) + " from " + fx +
               " where the other one feeds it from " + fy + where;
    }
    if (x->kind() != c10::prim::Constant) continue;
    auto vx = jit::toIValue(x->output()), vy = jit::toIValue(y->output());
    if (!vx || !vy || same_constant(*vx, *vy)) continue;
    std::string user;
    if (x->output()->hasUses()) {
      jit::Node* u = x->output()->uses()[0].user;
      user = std::string(", read by ") + u->kind().toQualString();
      std::string us = scope_of(u);
      if (where.empty() && !us.empty()) where = " at scope " + us;
    }
    return "a constant is " + shown(*vx) + " in the example's trace and " + shown(*vy) +
           " in the other one" + user + where + " (a number read from a tensor's values)";
  }
  for (size_t k = 0; k < a.outputs().size() && k < b.outputs().size(); ++k)
    if (origin(oa, a.outputs()[k]) != origin(ob, b.outputs()[k]))
      return "the example's trace returns " + origin(oa, a.outputs()[k]) + " as output " +
             std::to_string(k) + " where the other one returns " + origin(ob, b.outputs()[k]);
  if (a.outputs().size() != b.outputs().size())
    return "the traces return " + std::to_string(a.outputs().size()) + " and " +
           std::to_string(b.outputs().size()) + " outputs";
  return {};
}

thread_local std::vector<std::string>* t_value_reads = nullptr;

// The ops whose results carry tensor values into host numbers or into a result's shape.
// (Called for every op of a trace: a lookup that allocates nothing.)
bool reads_values(const char* name) {
  static const std::set<std::string_view> ops = {"aten::_local_scalar_dense",
                                                 "aten::item",
                                                 "aten::is_nonzero",
                                                 "aten::equal",
                                                 "aten::allclose",
                                                 "aten::nonzero",
                                                 "aten::nonzero_numpy",
                                                 "aten::argwhere",
                                                 "aten::masked_select",
                                                 "aten::unique",
                                                 "aten::_unique",
                                                 "aten::_unique2",
                                                 "aten::unique_dim",
                                                 "aten::unique_consecutive",
                                                 "aten::unique_dim_consecutive",
                                                 "aten::repeat_interleave",
                                                 "aten::bincount",
                                                 "aten::_assert_async"};
  return ops.count(name) != 0;
}

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  std::vector<std::string>* reads = t_value_reads;
  if (reads && reads_values(fn.name()) &&
      std::find(reads->begin(), reads->end(), fn.name()) == reads->end())
    reads->push_back(fn.name());
  return nullptr;
}

}  // namespace

ValueReadProbe::ValueReadProbe(std::vector<std::string>& reads) : previous_(t_value_reads) {
  t_value_reads = &reads;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_op).scopes({at::RecordScope::FUNCTION}));
}

ValueReadProbe::~ValueReadProbe() {
  at::removeCallback(handle_);
  t_value_reads = previous_;
}

ModelState::ModelState(const Traceable& model) {
  torch::NoGradGuard no_grad;
  if (model.module)
    for (const auto& b : model.module->buffers(/*recurse=*/true))
      if (b.defined()) buffers_.emplace_back(b, b.clone());
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  rng_ = gen.get_state();
}

void ModelState::restore() const noexcept {
  try {
    torch::NoGradGuard no_grad;
    for (const auto& [b, saved] : buffers_) {
      at::Tensor t = b;  // (a handle on the module's own tensor)
      if (t.sizes() != saved.sizes()) t.resize_(saved.sizes());
      t.copy_(saved);
    }
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng_);
  } catch (const std::exception& e) {
    std::cerr << "tonnx: warning: the trace check could not restore the module's buffers: "
              << e.what() << "\n";
  }
}

std::string check_trace(const TraceResult& a, const Traceable& model,
                        const std::vector<torch::Tensor>& args, TrainingMode mode, TraceCheck check,
                        const ModelState* before) {
  if (check == TraceCheck::OFF) return {};
  // The second forward starts from the state the first one started from (buffers such as
  // BatchNorm's num_batches_tracked, the random generator), and leaves the state the first
  // one left: what is exported is what one trace gives.
  ModelState after_first(model);
  if (before) before->restore();
  struct Restore {
    const ModelState& state;
    ~Restore() { state.restore(); }
  } restore{after_first};
  TraceResult b;
  try {
    b = trace_once(model, other_values(args), mode);
  } catch (const std::exception& e) {
    if (check == TraceCheck::STRICT)
      throw ExportError(
          std::string("strict trace check: the model could not run on other input values of the "
                      "same shapes, so whether its trace depends on the values is unknown: ") +
          e.what() + "\nExport without --strict-trace (trace_check WARN skips such models)");
    return {};
  }
  std::string diff = first_difference(*a.graph, *b.graph);
  if (diff.empty()) return {};
  std::string msg =
      "the trace depends on the input values: traced again on inputs of the same shapes with "
      "other values, " +
      diff +
      ". The model's control flow (an if on a tensor's value, .item()) depends on its inputs, "
      "so the export holds only the path the example inputs took. Script the model "
      "(torch.jit.script: If and Loop are exported) or make the example take the path you "
      "deploy.";
  if (check == TraceCheck::STRICT)
    throw ExportError(msg + " (strict trace check; export without it to get a warning instead)");
  return msg;
}

}  // namespace tonnx::detail
