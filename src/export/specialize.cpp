// Data-free scripted control flow fixed at export (specialize.h).
#include "export/specialize.h"

#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace tonnx::detail {
namespace {
namespace jit = torch::jit;

bool is_tensor(const jit::Value* v) { return v->type()->cast<c10::TensorType>() != nullptr; }

// Which values may differ between inputs of the same structure.
class Taint {
 public:
  Taint(bool sizes_vary, const std::unordered_set<const jit::Value*>& data_shaped)
      : sizes_vary_(sizes_vary), data_shaped_(data_shaped) {}
  void run(jit::Block* top) {
    do {
      changed_ = false;
      block(top, false);
    } while (changed_);
  }
  bool tainted(const jit::Value* v) const { return tainted_.count(v) > 0; }

 private:
  void mark(const jit::Value* v) {
    if (tainted_.insert(v).second) changed_ = true;
  }

  // Ops that pass tensors around or read only what the export fixes: identity, None-ness,
  // rank, dtype, device, and sizes when no axis is dynamic.
  bool reads_values(const jit::Node* n) const {
    static const std::set<std::string> kStructural = {
        "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack",  "prim::TupleUnpack",
        "prim::TupleIndex",    "aten::append",         "aten::__getitem__", "aten::insert",
        "aten::_set_item",     "aten::extend",         "aten::list",        "prim::unchecked_cast",
        "aten::__is__",        "aten::__isnot__",      "aten::dim",         "prim::dtype",
        "prim::device",        "prim::layout",         "prim::isinstance",  "aten::__contains__"};
    static const std::set<std::string> kSizes = {"aten::size", "aten::numel", "aten::len",
                                                 "prim::shape"};
    const std::string kind = n->kind().toQualString();
    if (kStructural.count(kind)) return false;
    if (kind == "aten::len" && !n->inputs().empty() && !is_tensor(n->input(0))) return false;
    if (kSizes.count(kind)) {
      bool data_sized = false;
      for (const jit::Value* in : n->inputs()) data_sized = data_sized || data_shaped_.count(in);
      return sizes_vary_ || data_sized;
    }
    return true;
  }

  // x.dim(), x.dtype, x.device of a tensor whose type says them: the same for every input,
  // even where x's values (and sizes) depend on the data.
  static bool fixed_by_type(const jit::Node* n) {
    const std::string kind = n->kind().toQualString();
    if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
    auto t = n->input(0)->type()->cast<c10::TensorType>();
    if (!t) return false;
    if (kind == "aten::dim") return t->dim().has_value();
    if (kind == "prim::dtype") return t->scalarType().has_value();
    return kind == "prim::device" || kind == "prim::layout";
  }

  void block(jit::Block* b, bool control) {
    for (jit::Node* n : b->nodes()) {
      if (n->kind() == c10::prim::If) {
        bool inner = control || tainted(n->input(0));
        for (jit::Block* sub : n->blocks()) block(sub, inner);
        for (size_t k = 0; k < n->outputs().size(); ++k) {
          bool t = inner;
          for (jit::Block* sub : n->blocks()) t = t || tainted(sub->outputs()[k]);
          if (t) mark(n->output(k));
        }
        continue;
      }
      if (n->kind() == c10::prim::Loop) {
        jit::Block* body = n->blocks()[0];
        // Data decides how often it runs: everything it computes depends on data.
        bool inner =
            control || tainted(n->input(0)) || tainted(n->input(1)) || tainted(body->outputs()[0]);
        for (size_t k = 2; k < n->inputs().size(); ++k)
          if (inner || tainted(n->input(k)) || tainted(body->outputs()[k - 1]))
            mark(body->inputs()[k - 1]);
        block(body, inner);
        for (size_t k = 0; k < n->outputs().size(); ++k)
          if (inner || tainted(n->input(k + 2)) || tainted(body->outputs()[k + 1]))
            mark(n->output(k));
        continue;
      }
      if (fixed_by_type(n)) {  // the rank or dtype of a tensor, whatever its values
        if (control)
          for (const jit::Value* o : n->outputs()) mark(o);
        continue;
      }
      bool t = control;
      bool has_tensor_input = false, has_other_output = false;
      for (const jit::Value* in : n->inputs()) {
        t = t || tainted(in);
        has_tensor_input = has_tensor_input || is_tensor(in);
      }
      for (const jit::Value* o : n->outputs()) {
        // A list of tensors (chunk, split, unbind) has as many as the sizes and arguments say.
        auto lt = o->type()->cast<c10::ListType>();
        bool tensors = lt && lt->getElementType()->cast<c10::TensorType>() && !sizes_vary_;
        has_other_output = has_other_output || (!is_tensor(o) && !tensors);
      }
      // A non-tensor result computed from a tensor's values (Bool(x.sum() > 0)).
      if (has_tensor_input && has_other_output && reads_values(n)) t = true;
      if (!t) continue;
      for (const jit::Value* o : n->outputs()) mark(o);
      // Lists written in place (append) carry what was written into them.
      if (const c10::FunctionSchema* s = n->maybeSchema())
        for (size_t i = 0; i < s->arguments().size() && i < n->inputs().size(); ++i)
          if (s->arguments()[i].alias_info() && s->arguments()[i].alias_info()->isWrite())
            mark(n->input(i));
    }
  }

  bool sizes_vary_;
  const std::unordered_set<const jit::Value*>& data_shaped_;
  bool changed_ = false;
  std::unordered_set<const jit::Value*> tainted_;
};

// The first If (depth first) that can be fixed, or nullptr.
jit::Node* next_fixable(jit::Block* b, const Taint& taint, const ObservedConditions& observed) {
  for (jit::Node* n : b->nodes()) {
    if (n->kind() == c10::prim::If && !taint.tainted(n->input(0))) {
      auto it = observed.find(n->input(0));
      if (it != observed.end() && (it->second == 1 || it->second == 2)) return n;
    }
    for (jit::Block* sub : n->blocks())
      if (jit::Node* f = next_fixable(sub, taint, observed)) return f;
  }
  return nullptr;
}

}  // namespace

int specialize_data_free_ifs(const std::shared_ptr<torch::jit::Graph>& graph,
                             const ObservedConditions& observed, bool sizes_vary,
                             const std::unordered_set<const torch::jit::Value*>& data_shaped) {
  Taint taint(sizes_vary, data_shaped);
  taint.run(graph->block());
  int fixed = 0;
  while (jit::Node* n = next_fixable(graph->block(), taint, observed)) {
    replace_if_by_branch(n, observed.at(n->input(0)) == 2 ? 0 : 1);
    ++fixed;
  }
  return fixed;
}

void replace_if_by_branch(torch::jit::Node* if_node, size_t branch) {
  jit::Block* keep = if_node->blocks().at(branch);
  while (keep->nodes().begin() != keep->nodes().end()) keep->nodes().front()->moveBefore(if_node);
  for (size_t k = 0; k < if_node->outputs().size(); ++k)
    if_node->output(k)->replaceAllUsesWith(keep->outputs()[k]);
  if_node->destroy();
}

}  // namespace tonnx::detail

namespace tonnx::detail {
namespace {
namespace jit = torch::jit;

// Whether `b` (nested blocks included) computes on numbers and lists only (and sizes of
// tensors: ConvTranspose's output_padding loops over x.size(d + 2)).
bool tensor_free(const jit::Block* b, size_t* size) {
  for (const jit::Node* n : b->nodes()) {
    if (++*size > 64) return false;
    if (n->kind() == c10::aten::size || n->kind() == c10::aten::dim) continue;
    for (const jit::Value* v : n->inputs()) {
      if (v->type()->cast<c10::TensorType>()) return false;
      for (const c10::TypePtr& t : v->type()->containedTypes())
        if (t->cast<c10::TensorType>()) return false;
    }
    for (const jit::Value* v : n->outputs())
      if (v->type()->cast<c10::TensorType>()) return false;
    for (const jit::Block* sub : n->blocks())
      if (!tensor_free(sub, size)) return false;
  }
  return true;
}

bool unroll_in(jit::Block* b) {
  bool changed = false;
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it++;
    for (jit::Block* sub : n->blocks()) changed = unroll_in(sub) || changed;
    if (n->kind() != c10::prim::Loop) continue;
    auto trips = jit::toIValue(n->input(0));
    auto cond = jit::toIValue(n->input(1));
    jit::Block* body = n->blocks()[0];
    auto again = jit::toIValue(body->outputs()[0]);
    size_t size = 0;
    if (!trips || !trips->isInt() || trips->toInt() < 0 || trips->toInt() > 64 || !cond ||
        !cond->isBool() || !cond->toBool() || !again || !again->isBool() || !again->toBool() ||
        !tensor_free(body, &size))
      continue;
    // Each iteration's nodes in turn, before the loop; then the loop goes.
    jit::Graph& g = *n->owningGraph();
    jit::WithInsertPoint guard(n);
    std::vector<jit::Value*> carried(n->inputs().begin() + 2, n->inputs().end());
    for (int64_t i = 0; i < trips->toInt(); ++i) {
      std::unordered_map<jit::Value*, jit::Value*> env;
      env[body->inputs()[0]] = g.insertConstant(i);
      for (size_t k = 0; k < carried.size(); ++k) env[body->inputs()[k + 1]] = carried[k];
      auto map = [&](jit::Value* v) {
        auto it = env.find(v);
        return it == env.end() ? v : it->second;
      };
      for (jit::Node* bn : body->nodes()) {
        jit::Node* c = g.insertNode(g.createClone(bn, map));
        for (size_t k = 0; k < bn->outputs().size(); ++k) env[bn->output(k)] = c->output(k);
      }
      for (size_t k = 0; k < carried.size(); ++k) carried[k] = map(body->outputs()[k + 1]);
    }
    for (size_t k = 0; k < n->outputs().size(); ++k) n->output(k)->replaceAllUsesWith(carried[k]);
    n->destroy();
    changed = true;
  }
  return changed;
}
}  // namespace

bool unroll_number_loops(std::shared_ptr<jit::Graph>& graph) {
  if (!unroll_in(graph->block())) return false;
  jit::RemoveListMutation(graph);
  jit::ConstantPropagation(graph);
  return true;
}

}  // namespace tonnx::detail
