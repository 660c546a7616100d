// List mutations made functional (functionalize.h): ops that change a list in place become ops
// that return its new contents, which the functionalizer then follows like tensor writes.
#include <torch/csrc/jit/ir/ir.h>

#include <set>
#include <string>

#include "export/functionalize.h"
#include "export/view_ops.h"
#include "tonnx/symbolic.h"

namespace tonnx::detail {
namespace jit = torch::jit;

bool is_list_value(const jit::Value* v) { return v->type()->kind() == c10::TypeKind::ListType; }

std::string inplace_op_where(const jit::Node* n) {
  auto* m = const_cast<jit::Node*>(n);
  std::string s = n->kind().toQualString();
  if (m->scope() && !m->scope()->isBlank()) s += " (scope " + m->scope()->namesFromRoot() + ")";
  return s;
}

bool is_list_write(const jit::Node* n) {
  static const std::set<std::string> kWrites = {"aten::append",       "aten::_set_item",
                                                "aten::add_",         "tonnx::list_insert",
                                                "tonnx::list_delete", "tonnx::list_clear"};
  return !n->inputs().empty() && is_list_value(n->input(0)) && n->outputs().size() == 1 &&
         kWrites.count(n->kind().toQualString());
}

// List mutations made into ops that return the list's new contents (append, _set_item and
// add_ already do): insert, del l[i], clear and extend get twins with a result; pop becomes
// l[i] followed by the deletion. Any other op that writes into a list fails the export.
void rewrite_list_mutations(jit::Graph& g, jit::Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it++;
    for (jit::Block* sub : n->blocks()) rewrite_list_mutations(g, sub);
    if (n->inputs().empty() || !is_list_value(n->input(0)) || is_list_write(n)) continue;
    const std::string k = n->kind().toQualString();
    jit::WithInsertPoint guard(n);
    auto twin = [&](const char* op, std::vector<jit::Value*> ins) {
      jit::Node* m = g.insertNode(g.create(c10::Symbol::fromQualString(op), ins, 1));
      m->copyMetadata(n);
      m->output()->setType(n->input(0)->type());
      n->destroy();
    };
    if (k == "aten::insert" && n->inputs().size() == 3) {
      twin("tonnx::list_insert", {n->input(0), n->input(1), n->input(2)});
    } else if (k == "aten::Delete" && n->inputs().size() == 2) {
      twin("tonnx::list_delete", {n->input(0), n->input(1)});
    } else if (k == "aten::clear") {
      twin("tonnx::list_clear", {n->input(0)});
    } else if (k == "aten::extend" && n->inputs().size() == 2) {
      twin("aten::add_", {n->input(0), n->input(1)});
    } else if (k == "aten::pop" && n->inputs().size() <= 2 && n->outputs().size() == 1) {
      jit::Value* idx = n->inputs().size() == 2 ? n->input(1) : g.insertConstant(int64_t{-1});
      jit::Node* get = g.insertNode(g.create(c10::aten::__getitem__, {n->input(0), idx}, 1));
      get->copyMetadata(n);
      get->output()->setType(n->output()->type());
      n->output()->replaceAllUsesWith(get->output());
      twin("tonnx::list_delete", {n->input(0), idx});
    } else if (const c10::FunctionSchema* s = n->maybeSchema()) {
      for (size_t i = 0; i < s->arguments().size() && i < n->inputs().size(); ++i) {
        const c10::AliasInfo* a = s->arguments()[i].alias_info();
        if (a && a->isWrite() && is_list_value(n->input(i)))
          throw ExportError("ONNX export failed at " + inplace_op_where(n) +
                            ": it changes a list in place, which tonnx follows for append, "
                            "insert, pop, del l[i], l[i] = x, +=, extend and clear only; build "
                            "a new list instead");
      }
    }
  }
}

}  // namespace tonnx::detail
