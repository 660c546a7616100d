// observe_types (script_graph.h): the graph run by LibTorch's interpreter with a probe after
// every value, each tensor value typed by what it held on every run, every If condition
// recorded; a failure names the node that failed.
#include <torch/csrc/jit/runtime/interpreter.h>

#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include "export/script_graph.h"
#include "export/view_ops.h"
#include "tonnx/export.h"
#include "tonnx/ir.h"
#include "tonnx/symbolic.h"

namespace tonnx::detail {
namespace jit = torch::jit;

namespace {
// A run that failed on a nested tensor: say where it comes from and what to change.
std::string nested_hint(const std::string& error) {
  if (error.find("Nested") == std::string::npos && error.find("nested") == std::string::npos)
    return "";
  return "\nThe model uses a nested tensor, which ONNX does not have: nn.TransformerEncoder "
         "makes one (aten::_nested_tensor_from_mask) on PyTorch's fast path, taken when it runs "
         "without grad and is given a src_key_padding_mask. Set the "
         "encoder's enable_nested_tensor = False before saving the model; note that the fast "
         "path gives 0 at padded positions, where the other path computes values.";
}
}  // namespace

namespace {
// What a tensor value looked like on every run of its definition.
struct Observed {
  at::ScalarType dtype = at::ScalarType::Undefined;
  // Strides too: whether a reshape, flatten or contiguous of it made a view or a copy
  // depends on them (functionalize.cpp).
  std::vector<std::optional<int64_t>> sizes, strides;
  bool rank_varies = false, dtype_varies = false, seen = false;
  void add(const at::Tensor& t) {
    std::vector<std::optional<int64_t>> s(t.sizes().begin(), t.sizes().end());
    std::vector<std::optional<int64_t>> st(t.strides().begin(), t.strides().end());
    if (!seen) {
      dtype = t.scalar_type();
      sizes = s;
      strides = st;
      seen = true;
      return;
    }
    if (dtype != t.scalar_type()) dtype_varies = true;
    if (sizes.size() != s.size()) {
      rank_varies = true;
      return;
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (sizes[i] != s[i]) sizes[i] = std::nullopt;
      if (strides[i] != st[i]) strides[i] = std::nullopt;
    }
  }
  c10::TypePtr type() const {
    c10::optional<at::ScalarType> dt;
    if (!dtype_varies) dt = dtype;
    c10::Device cpu(at::kCPU);
    if (rank_varies) return c10::TensorType::create(dt, cpu, c10::optional<size_t>(), false);
    bool complete = true;  // (c10 derives stride properties only from complete sizes)
    auto varying = [&complete](const std::vector<std::optional<int64_t>>& v) {
      std::vector<c10::optional<int64_t>> r;
      for (const auto& d : v) {
        r.push_back(d ? c10::optional<int64_t>(*d) : c10::nullopt);
        complete = complete && d;
      }
      return r;
    };
    std::vector<c10::optional<int64_t>> dims = varying(sizes), steps = varying(strides);
    return c10::TensorType::create(
        dt, cpu, c10::VaryingShape<int64_t>(dims),
        complete ? c10::VaryingShape<int64_t>(steps) : c10::VaryingShape<int64_t>(dims.size()),
        false);
  }
};

}  // namespace

std::string node_location(jit::Node* n) {
  std::string s = n->kind().toQualString();
  std::string scope;
  if (n->scope() && !n->scope()->isBlank()) scope = "scope " + n->scope()->namesFromRoot();
  std::string line;
  if (auto r = n->sourceRange().source(); r && r->filename()) {
    line = *r->filename() + ":" +
           std::to_string(r->starting_line_no() + r->lineno_for_offset(n->sourceRange().start()));
  }
  if (!scope.empty() || !line.empty())
    s += " (" + scope + (scope.empty() || line.empty() ? "" : ", ") + line + ")";
  return s;
}

namespace {
// " at OP (scope S, FILE:LINE)": the first real node after the one that produced `last_done`
// (a block's input: the block's first node), skipping the observation probes.
std::string failing_node(const std::shared_ptr<jit::Graph>& g, const jit::Value* last_done,
                         const std::unordered_map<const jit::Node*, bool>& took) {
  jit::Node* n = nullptr;
  if (!last_done)
    n = g->block()->nodes().front();
  else if (last_done->node()->kind() == c10::prim::Param)
    n = const_cast<jit::Node*>(last_done->node())->owningBlock()->nodes().front();
  else
    n = const_cast<jit::Node*>(last_done->node())->next();
  auto skip_probes = [](jit::Node* m) {
    while (m && m->kind() == c10::prim::profile_ivalue) m = m->next();
    return m;
  };
  n = skip_probes(n);
  // Into the branch an If took, when it failed before any value inside was seen.
  while (n && n->kind() == c10::prim::If && took.count(n)) {
    jit::Node* first = skip_probes(n->blocks()[took.at(n) ? 0 : 1]->nodes().front());
    if (!first || first->kind() == c10::prim::Return) break;
    n = first;
  }
  if (!n || n->kind() == c10::prim::Return) return "";
  return " at " + node_location(n);
}
}  // namespace

namespace {
void observe_runs(const std::shared_ptr<jit::Graph>& g,
                  const std::vector<std::vector<c10::IValue>>& input_sets,
                  ObservedConditions* conditions, const std::string& what_if_later_fails,
                  std::vector<c10::IValue>* first_outputs);
}  // namespace

// Runs the graph once on the example inputs with a profiling node after every tensor value,
// then sets each value's type to what was observed (sizes that varied between loop
// iterations become unknown). Values on paths the inputs did not take get dtypes from a
// simple forward rule afterwards.
std::vector<c10::IValue> observe_types(const std::shared_ptr<jit::Graph>& g,
                                       const std::vector<c10::IValue>& inputs,
                                       ObservedConditions* conditions) {
  std::vector<c10::IValue> out;
  observe_runs(g, {inputs}, conditions, "", &out);
  return out;
}

void observe_types(const std::shared_ptr<jit::Graph>& g,
                   const std::vector<std::vector<c10::IValue>>& input_sets,
                   ObservedConditions* conditions, const std::string& what_if_later_fails) {
  observe_runs(g, input_sets, conditions, what_if_later_fails, nullptr);
}

namespace {
void observe_runs(const std::shared_ptr<jit::Graph>& g,
                  const std::vector<std::vector<c10::IValue>>& input_sets,
                  ObservedConditions* conditions, const std::string& what_if_later_fails,
                  std::vector<c10::IValue>* first_outputs) {
  std::unordered_map<const jit::Value*, Observed> seen;
  std::vector<jit::Node*> probes;
  // The node whose outputs were seen last: if the run fails, the failing node follows it.
  const jit::Value* last_done = nullptr;
  // Whether each reshape, flatten or contiguous returned its input's storage (bit 1) or a copy
  // (bit 0) on the runs (functionalize.cpp writes in-place results back through views only):
  // the storage each tensor value had when last seen, compared at the op's result.
  std::unordered_map<const jit::Value*, const void*> storage;
  std::unordered_map<jit::Node*, int64_t> shares;
  auto probe = [&](jit::Value* v, jit::Node* insert_before, jit::Block* block_start,
                   jit::Node* copy_or_view = nullptr) {
    if (v->type()->kind() == c10::TypeKind::NoneType) return;
    auto* pn = new jit::ProfileIValueOp(g.get(), nullptr);
    jit::Value* out = pn->addOutput();
    out->setType(v->type());
    const jit::Value* key = v;
    const jit::Value* src = nullptr;  // copy_or_view's input, before its probe
    if (copy_or_view) {
      src = copy_or_view->input(0);
      if (src->node()->kind() == c10::prim::profile_ivalue) src = src->node()->input(0);
    }
    pn->setCallback([key, src, copy_or_view, &seen, &last_done, &storage,
                     &shares](std::vector<c10::IValue>& stack) {
      stack.pop_back();  // the frame id
      last_done = key;
      const c10::IValue& t = stack.back();
      if (!t.isTensor() || !t.toTensor().defined()) return;
      const at::Tensor& tensor = t.toTensor();
      seen[key].add(tensor);
      if (!tensor.has_storage()) return;
      const void* impl = tensor.storage().unsafeGetStorageImpl();
      storage[key] = impl;
      if (auto it = src ? storage.find(src) : storage.end(); it != storage.end())
        shares[copy_or_view] |= it->second == impl ? 2 : 1;
    });
    v->replaceAllUsesWith(out);
    pn->addInput(v);
    if (insert_before)
      pn->insertBefore(insert_before);
    else
      block_start->prependNode(pn);
    probes.push_back(pn);
  };
  // The value each If's condition took (bit 0: false, bit 1: true).
  // The branch each If took last, to find a failing node inside it.
  std::unordered_map<const jit::Node*, bool> took;
  auto probe_condition = [&](jit::Node* if_node) {
    jit::Value* v = if_node->input(0);
    // Keyed by the condition itself, not by the probe already placed after it.
    const jit::Value* key = v;
    if (v->node()->kind() == c10::prim::profile_ivalue) key = v->node()->input(0);
    if (key->node()->kind() == c10::prim::Constant) return;
    auto* pn = new jit::ProfileIValueOp(g.get(), nullptr);
    jit::Value* out = pn->addOutput();
    out->setType(v->type());
    const jit::Node* node = if_node;
    pn->setCallback([key, node, conditions, &took](std::vector<c10::IValue>& stack) {
      stack.pop_back();  // the frame id
      const c10::IValue& b = stack.back();
      if (!b.isBool()) return;
      took[node] = b.toBool();
      if (conditions) (*conditions)[key] |= b.toBool() ? 2 : 1;
    });
    pn->addInput(v);
    pn->insertBefore(if_node);
    if_node->replaceInput(0, out);
    probes.push_back(pn);
  };
  std::function<void(jit::Block*)> instrument = [&](jit::Block* b) {
    for (jit::Value* in : b->inputs()) probe(in, nullptr, b);
    for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
      jit::Node* n = *it;
      if (n->kind() == c10::prim::profile_ivalue) continue;
      if (n->kind() == c10::prim::If) probe_condition(n);
      for (jit::Block* sub : n->blocks()) instrument(sub);
      jit::Node* next = n->next();
      jit::Node* copy_or_view = n->outputs().size() == 1 && may_copy(n) ? n : nullptr;
      for (jit::Value* o : n->outputs()) probe(o, next, nullptr, copy_or_view);
    }
  };
  instrument(g->block());
  std::string error, failed_at;
  size_t failed_run = 0;
  {
    jit::Code code(g, "forward");
    for (size_t k = 0; k < input_sets.size() && error.empty(); ++k) {
      std::vector<c10::IValue> stack = input_sets[k];
      last_done = nullptr;
      try {
        jit::InterpreterState state(code);
        state.run(stack);
      } catch (const std::exception& e) {
        error = e.what();
        failed_run = k;
        failed_at = failing_node(g, last_done, took);
      }
      if (k == 0 && first_outputs) *first_outputs = stack;
    }
  }
  for (jit::Node* pn : probes) {
    pn->output()->replaceAllUsesWith(pn->input());
    pn->destroy();
  }
  if (!error.empty())
    throw ExportError((failed_run > 0 ? what_if_later_fails : std::string()) +
                      "running forward's graph on the example inputs failed" + failed_at + ": " +
                      first_line(error) + nested_hint(error));
  for (auto& [v, o] : seen) const_cast<jit::Value*>(v)->setType(o.type());
  for (auto& [n, bits] : shares) n->i_(kSharesStorage, bits);
}
}  // namespace

}  // namespace tonnx::detail
