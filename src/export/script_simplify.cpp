// The TorchScript frontend's fifth stage (script_passes.h): what the export knows folded.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/lower_tuples.h>

#include "export/functionalize.h"
#include "export/script_graph.h"
#include "export/script_passes.h"

namespace tonnx::detail {
namespace jit = torch::jit;

namespace {

// aten::dim of a graph input: its rank, which dynamic axes never change.
void fold_input_ranks(jit::Graph& g) {
  for (jit::Value* in : g.inputs()) {
    auto t = in->type()->cast<c10::TensorType>();
    if (!t || !t->dim()) continue;
    for (const jit::Use& u : in->uses()) {
      jit::Node* n = u.user;
      if (n->kind() != c10::aten::dim || n->inputs().size() != 1) continue;
      jit::WithInsertPoint guard(n);
      n->output()->replaceAllUsesWith(g.insertConstant(static_cast<int64_t>(*t->dim())));
    }
  }
}

// `v is None` / `v is not None` on a tuple or list, or on a tensor given as a graph input
// (never None): a constant, so the branch it guards (F.embedding_bag's 2-D path when offsets
// are given) is never converted.
void fold_known_none_checks(jit::Block* b) {
  for (jit::Node* n : b->nodes()) {
    for (jit::Block* sub : n->blocks()) fold_known_none_checks(sub);
    bool is = n->kind() == c10::aten::__is__, isnot = n->kind() == c10::aten::__isnot__;
    if ((!is && !isnot) || n->inputs().size() != 2) continue;
    const jit::Value* v = n->input(0);
    c10::TypeKind k = v->type()->kind();
    bool known = k == c10::TypeKind::TupleType || k == c10::TypeKind::ListType ||
                 (k == c10::TypeKind::TensorType && v->node()->kind() == c10::prim::Param &&
                  v->node()->owningBlock() == v->owningGraph()->block());
    if (!known || n->input(1)->type()->kind() != c10::TypeKind::NoneType) continue;
    jit::WithInsertPoint guard(n);
    n->output()->replaceAllUsesWith(n->owningGraph()->insertConstant(isnot));
  }
}

// prim::unchecked_cast of a tuple whose input already has the target type: uses of it read
// the input.
void remove_identity_casts(jit::Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it;
    ++it;
    for (jit::Block* sub : n->blocks()) remove_identity_casts(sub);
    if (n->kind() != c10::prim::unchecked_cast) continue;
    if (n->input()->type()->kind() != c10::TypeKind::TupleType) continue;
    if (!n->input()->type()->isSubtypeOf(*n->output()->type())) continue;
    n->output()->replaceAllUsesWith(n->input());
    n->destroy();
  }
}

}  // namespace

void simplify_script_graph(ScriptExport& s) {
  std::shared_ptr<jit::Graph>& g = s.g;
  // Branches decided by the constants above (`if hx is None` in a scripted nn.LSTM called
  // without hx) go first: the other branch may hold optional tuples no lowering can flatten.
  // `hx is None` for a tuple hx (nn.LSTM given a state) or for an input is decided here,
  // x.dim() of an input is its rank (nn.LSTMCell's batched check), and a cast that refines a
  // tuple to the type it already has goes: the branches they decide may hold tuples no
  // lowering can flatten, or code for other ranks. (Other tensors keep their checks: the
  // symbolics export them.)
  fold_known_none_checks(g->block());
  fold_input_ranks(*g);
  remove_identity_casts(g->block());
  copy_without_expand(g->block());  // before constants fold the expand's sizes in
  jit::ConstantPropagation(g);
  jit::EliminateDeadCode(g);
  if (lower_constant_key_dicts(*g) > 0) {
    jit::ConstantPropagation(g);
    jit::EliminateDeadCode(g);
  }
  try {
    jit::LowerAllTuples(g);
  } catch (const std::exception& e) {
    throw ExportError("tuples in forward's graph that tonnx cannot flatten: " +
                      first_line(e.what()));
  }
  fold_export_constants(*g, g->block());
  drop_raising_branches(g->block());
  split_uninitialized(*g, g->block());
  jit::ConstantPropagation(g);
  jit::EliminateDeadCode(g);
}

}  // namespace tonnx::detail
