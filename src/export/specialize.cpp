// Data-free scripted control flow fixed at export (specialize.h).
#include "export/specialize.h"

#include <set>
#include <string>
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
