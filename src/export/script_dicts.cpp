// Dictionaries in a TorchScript graph with keys known at export (torchvision's segmentation
// models return {"out": ..., "aux": ...}; IntermediateLayerGetter fills one by name). Each
// such dict is followed through its block: reads become the value last set under the key, and
// a dict that forward returns becomes a tuple of its values in insertion order, as LibTorch's
// c10::Dict iterates them (and as torch.onnx flattens a traced model's dict outputs).
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "export/script_graph.h"
#include "tonnx/export.h"

namespace tonnx::detail {
namespace jit = torch::jit;
namespace {

// The key of a dict op's input `i` when it is a constant str, int or bool.
std::optional<c10::IValue> constant_key(const jit::Node* n, size_t i) {
  std::optional<c10::IValue> k = jit::toIValue(n->input(i));
  if (!k || !(k->isString() || k->isInt() || k->isBool())) return std::nullopt;
  return k;
}

bool same_key(const c10::IValue& a, const c10::IValue& b) {
  if (a.isString() && b.isString()) return a.toStringRef() == b.toStringRef();
  if (a.isInt() && b.isInt()) return a.toInt() == b.toInt();
  if (a.isBool() && b.isBool()) return a.toBool() == b.toBool();
  return false;
}

// Lowers the dict `d` made by `made` when every use is a constant-key write or read in the
// same block, or (after the last write) the block's return or a tuple of outputs.
bool lower_dict(jit::Node* made, jit::Graph& g) {
  jit::Value* d = made->output();
  jit::Block* b = made->owningBlock();
  std::vector<std::pair<c10::IValue, jit::Value*>> items;
  // Sets key k to v: a key set again keeps its place, as in c10::Dict.
  auto set = [&](const c10::IValue& k, jit::Value* v) {
    auto at = std::find_if(items.begin(), items.end(),
                           [&](const auto& kv) { return same_key(kv.first, k); });
    if (at == items.end())
      items.emplace_back(k, v);
    else
      at->second = v;
  };
  if (made->kind() == c10::Symbol::fromQualString("prim::DictConstruct")) {
    for (size_t i = 0; i + 1 < made->inputs().size(); i += 2) {
      auto k = constant_key(made, i);
      if (!k) return false;
      set(*k, made->input(i + 1));
    }
  }
  // Every use, in node order, must be one this pass understands.
  std::vector<jit::Node*> users;
  for (const jit::Use& u : d->uses()) {
    jit::Node* n = u.user;
    if (n->owningBlock() != b) return false;
    std::string kind = n->kind().toQualString();
    bool ok = (kind == "aten::_set_item" && u.offset == 0 && n->inputs().size() == 3) ||
              (kind == "aten::__getitem__" && u.offset == 0 && n->inputs().size() == 2) ||
              (n == b->return_node() && b == g.block()) || kind == "prim::TupleConstruct";
    if (!ok) return false;
    users.push_back(n);
  }
  std::sort(users.begin(), users.end(), [](jit::Node* x, jit::Node* y) { return x->isBefore(y); });
  // Simulated first, so that nothing changes when a later use is not understood.
  std::vector<std::pair<jit::Node*, jit::Value*>> reads;
  std::vector<jit::Node*> outs;
  for (jit::Node* n : users) {
    std::string kind = n->kind().toQualString();
    if (kind == "aten::_set_item" || kind == "aten::__getitem__") {
      if (!outs.empty()) return false;  // written or read after it was handed out
      auto k = constant_key(n, 1);
      if (!k) return false;
      if (kind == "aten::_set_item") {
        set(*k, n->input(2));
      } else {
        auto at = std::find_if(items.begin(), items.end(),
                               [&](const auto& kv) { return same_key(kv.first, *k); });
        if (at == items.end()) return false;  // a KeyError: LibTorch's run says so
        reads.emplace_back(n, at->second);
      }
    } else {
      outs.push_back(n);
    }
  }
  for (auto& [n, v] : reads) n->output()->replaceAllUsesWith(v);
  if (!outs.empty()) {
    jit::WithInsertPoint guard(outs.front());
    std::vector<jit::Value*> values;
    for (auto& kv : items) values.push_back(kv.second);
    jit::Value* tuple = g.insertNode(g.createTuple(values))->output();
    for (jit::Node* n : outs) n->replaceInputWith(d, tuple);
  }
  for (jit::Node* n : users)
    if (n->kind() != c10::Symbol::fromQualString("prim::TupleConstruct") && n != b->return_node())
      n->destroy();
  made->destroy();
  return true;
}

void lower_in(jit::Graph& g, jit::Block* b, int& count) {
  std::vector<jit::Node*> dicts;
  for (jit::Node* n : b->nodes()) {
    for (jit::Block* sub : n->blocks()) lower_in(g, sub, count);
    std::string kind = n->kind().toQualString();
    if ((kind == "aten::dict" && n->inputs().empty()) || kind == "prim::DictConstruct")
      dicts.push_back(n);
  }
  for (jit::Node* n : dicts) count += lower_dict(n, g) ? 1 : 0;
}

// The first node (nested blocks included) with a dict output or input.
const jit::Node* first_dict_node(const jit::Block* b) {
  for (const jit::Node* n : b->nodes()) {
    for (const jit::Block* sub : n->blocks())
      if (const jit::Node* in = first_dict_node(sub)) return in;
    for (const jit::Value* v : n->outputs())
      if (v->type()->kind() == c10::TypeKind::DictType) return n;
    for (const jit::Value* v : n->inputs())
      if (v->type()->kind() == c10::TypeKind::DictType) return n;
  }
  return nullptr;
}

}  // namespace

void refuse_dicts(const jit::Graph& g) {
  jit::Node* n = const_cast<jit::Node*>(first_dict_node(g.block()));  // (scope() is not const)
  if (!n) return;
  std::string where = node_location(n);
  throw ExportError(
      "forward uses a dict that tonnx cannot turn into separate values, at " + where +
      ". tonnx exports dicts whose keys are constants, written and read by those keys in the "
      "block that made them (or under an if that does not depend on data), and returned; a "
      "dict written under a branch on data or in a loop, iterated, or given keys computed at "
      "run time is not. Keep such a dict out of forward, or trace the module");
}

int lower_constant_key_dicts(jit::Graph& g) {
  int count = 0;
  lower_in(g, g.block(), count);
  return count;
}

}  // namespace tonnx::detail
