// In-place writes made functional (functionalize.h).
//
// Every tensor value is either a root (a graph input, a fresh result) or a view of a root
// through a chain of view ops. Each root has a current version: the value that holds its
// contents at this point of the graph. An in-place op on a view computes the view's new
// contents (its own output: the converter exports in-place ops as their functional twins),
// then writes them back link by link (slice_scatter, select_scatter, reshape, transpose) into
// a new version of the root; later reads of the root's old version, and of views made from it
// before the write, are redirected to the new version (views are made again from it).
#include "export/functionalize.h"
#include "export/view_ops.h"

#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <set>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tonnx/symbolic.h"

namespace tonnx::detail {
namespace {
namespace jit = torch::jit;

// The tensor arguments an op writes into (schema annotation Tensor(a!)).
std::vector<size_t> written_args(const jit::Node* n) {
  std::vector<size_t> out;
  const c10::FunctionSchema* s = n->maybeSchema();
  if (!s) return out;
  for (size_t i = 0; i < s->arguments().size() && i < n->inputs().size(); ++i) {
    const c10::AliasInfo* a = s->arguments()[i].alias_info();
    if (a && a->isWrite() && is_tensor(n->input(i))) out.push_back(i);
  }
  return out;
}

bool node_inside(const jit::Node* p, const jit::Node* n) {
  while (p) {
    if (p == n) return true;
    const jit::Block* b = p->owningBlock();
    p = b ? b->owningNode() : nullptr;
  }
  return false;
}
bool defined_inside(const jit::Value* v, const jit::Node* n) { return node_inside(v->node(), n); }

// The node of `after`'s block that contains `user` (itself, or a control-flow node around
// it), or nullptr when `user` is outside that block.
jit::Node* ancestor_in(jit::Node* user, const jit::Block* blk) {
  while (user && user->owningBlock() != blk) {
    jit::Block* b = user->owningBlock();
    user = b ? b->owningNode() : nullptr;
  }
  return user;
}

bool used_after(const jit::Value* v, jit::Node* after) {
  const jit::Block* blk = after->owningBlock();
  for (const jit::Use& u : v->uses()) {
    jit::Node* a = ancestor_in(u.user, blk);
    if (a && (a == blk->return_node() || a->isAfter(after))) return true;
  }
  return false;
}

// Redirects the reads of `old` that come after `after` in its block (nested ones included,
// and the block's outputs) to `nw`.
void replace_uses_after(jit::Value* old, jit::Value* nw, jit::Node* after) {
  const jit::Block* blk = after->owningBlock();
  for (const jit::Use& u : std::vector<jit::Use>(old->uses())) {
    jit::Node* a = ancestor_in(u.user, blk);
    if (a && (a == blk->return_node() || a->isAfter(after))) u.user->replaceInput(u.offset, nw);
  }
}

// Reads of `old` by nodes in the blocks of `n` (not by n itself).
bool read_inside(const jit::Use& u, const jit::Node* n) {
  return u.user != n && node_inside(u.user, n);
}
void replace_uses_inside(jit::Value* old, jit::Value* nw, const jit::Node* n) {
  for (const jit::Use& u : std::vector<jit::Use>(old->uses()))
    if (read_inside(u, n)) u.user->replaceInput(u.offset, nw);
}

class Functionalizer {
 public:
  explicit Functionalizer(std::shared_ptr<jit::Graph> g) : g_(std::move(g)) {}
  void run() {
    rewrite_list_mutations(*g_, g_->block());
    scopes_.emplace_back();
    run_block(g_->block());
  }

 private:
  struct Alias {
    jit::Value* root = nullptr;
    std::vector<jit::Node*> chain;  // view ops from the root, outermost first
    std::string other;              // set when the chain has a view tonnx cannot write through
  };
  // Current version of each root changed in a block being processed (innermost last), in
  // the order of first change (so that added If/Loop outputs come out in a stable order).
  using Versions = std::vector<std::pair<jit::Value*, jit::Value*>>;

  jit::Value* current(jit::Value* root) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (const auto& [r, v] : *s)
        if (r == root) return v;
    return root;
  }
  void set_current(jit::Value* root, jit::Value* v) {
    for (auto& [r, cur] : scopes_.back())
      if (r == root) {
        cur = v;
        return;
      }
    scopes_.back().emplace_back(root, v);
  }
  Alias alias_of(jit::Value* v) const {
    auto it = alias_.find(v);
    return it == alias_.end() ? Alias{v, {}, ""} : it->second;
  }

  void run_block(jit::Block* b) {
    for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
      jit::Node* n = *it;
      if (skip_.count(n)) continue;
      if (n->kind() == c10::prim::If) {
        handle_if(n);
      } else if (n->kind() == c10::prim::Loop) {
        handle_loop(n);
      } else {
        record_view(n);
        handle_write(n);
      }
    }
  }

  void record_view(jit::Node* n) {
    View k = view_kind(n);
    if (k == View::None) {
      // Elements of a list of views (split, chunk, unbind) are views too.
      // (A changed list's versions are in alias_ too, with the list as root: not views.)
      if ((n->kind() == c10::prim::ListUnpack || n->kind() == c10::aten::__getitem__) &&
          !n->inputs().empty() && alias_.count(n->input(0)) &&
          !is_list_value(alias_.at(n->input(0)).root))
        for (jit::Value* o : n->outputs()) alias_[o] = alias_.at(n->input(0));
      return;
    }
    Alias a = alias_of(n->input(0));
    if (k == View::Other && a.other.empty()) {
      a.other = n->kind().toQualString();
      if (n->hasAttribute(kSharesStorage))  // (the runs' observation: view_ops.h)
        a.other += " (a view of its input at some of the example's sizes, a copy at others)";
    }
    a.chain.push_back(n);
    for (jit::Value* o : n->outputs()) alias_[o] = a;
  }

  [[noreturn]] void fail(const jit::Node* n, const std::string& what) const {
    throw ExportError("ONNX export failed at " + inplace_op_where(n) + ": " + what);
  }

  // Makes the view `s` again from `parent` (a newer version of what s viewed).
  jit::Value* remake_view(jit::Node* s, jit::Value* parent) {
    jit::Node* c = g_->createClone(s, [&](jit::Value* v) { return v == s->input(0) ? parent : v; });
    g_->insertNode(c);
    for (size_t k = 0; k < c->outputs().size(); ++k) c->output(k)->setType(s->output(k)->type());
    return c->output();
  }

  jit::Value* insert(const char* op, std::vector<jit::NamedValue> args) {
    return g_->insert(c10::Symbol::fromQualString(op), args);
  }

  // The new contents of `parent` after its view `s` took the contents `child`.
  jit::Value* write_back(jit::Node* s, jit::Value* parent, jit::Value* child) {
    jit::Value* out = nullptr;
    switch (view_kind(s)) {
      case View::Slice:
        out = insert("aten::slice_scatter",
                     {parent, child, s->input(1), s->input(2), s->input(3), s->input(4)});
        break;
      case View::Narrow: {
        jit::Value* start = s->input(2);
        jit::Value* length = s->input(3);
        if (is_tensor(start)) start = insert("aten::Int", {start});
        auto cs = jit::toIValue(start);
        auto cl = jit::toIValue(length);
        jit::Value* end;
        if (cs && cl) {
          int64_t st = cs->toInt(), len = cl->toInt();
          if (st < 0) {
            auto t = parent->type()->cast<c10::TensorType>();
            auto dim = jit::toIValue(s->input(1));
            auto sizes = t ? t->sizes().concrete_sizes() : c10::nullopt;
            if (!sizes || !dim) fail(s, "narrow with a negative start on a tensor of unknown size");
            int64_t d = dim->toInt() < 0 ? dim->toInt() + static_cast<int64_t>(sizes->size())
                                         : dim->toInt();
            st += (*sizes)[d];
          }
          start = g_->insertConstant(st);
          end = g_->insertConstant(st + len);
        } else {
          end = insert("aten::add", {start, length});
        }
        out = insert("aten::slice_scatter",
                     {parent, child, s->input(1), start, end, g_->insertConstant(int64_t{1})});
        break;
      }
      case View::Select:
        out = insert("aten::select_scatter", {parent, child, s->input(1), s->input(2)});
        break;
      case View::Reshape:
        out = insert("aten::reshape", {child, insert("aten::size", {parent})});
        break;
      case View::Same:
        out = child;
        if (dtype_of(child) && dtype_of(parent) && *dtype_of(child) != *dtype_of(parent))
          out = insert("aten::to",
                       {child, g_->insertConstant(static_cast<int64_t>(*dtype_of(parent))),
                        g_->insertConstant(false), g_->insertConstant(false)});
        break;
      case View::Transpose:
        out = insert("aten::transpose", {child, s->input(1), s->input(2)});
        break;
      case View::T:
        out = insert("aten::t", {child});
        break;
      case View::Permute: {
        auto dims = jit::toIValue(s->input(1));
        if (!dims || !dims->isIntList()) fail(s, "permute with dims computed at run time");
        std::vector<int64_t> p = dims->toIntVector(), inv(p.size());
        const int64_t r = static_cast<int64_t>(p.size());
        for (int64_t i = 0; i < r; ++i) {
          int64_t d = p[i] < 0 ? p[i] + r : p[i];
          if (d < 0 || d >= r) fail(s, "permute dim " + std::to_string(p[i]) + " out of range");
          inv[d] = i;
        }
        out = insert("aten::permute", {child, g_->insertConstant(inv)});
        break;
      }
      case View::None:
      case View::Other:
        fail(s, "internal: no write-back for this view");
    }
    out->setType(parent->type());
    return out;
  }

  // A list changed by `n`: its output is the list's new version. Lists have no views, but a
  // list held in another list would be a second name for it.
  void handle_list_write(jit::Node* n) {
    jit::Value* root = alias_of(n->input(0)).root;
    for (jit::Value* v : {root, n->input(0)})
      for (const jit::Use& u : v->uses())
        if (u.user->kind() == c10::prim::ListConstruct ||
            (is_list_write(u.user) && u.offset > 0 && u.user->kind() != c10::aten::add_))
          fail(n,
               "it changes a list that is also an element of another list; tonnx follows "
               "changes to lists of tensors and numbers only");
    alias_[n->output()] = Alias{root, {}, ""};
    root_updated(root, n->output(), n);
  }

  // Writes made through `n` (an op that writes into its input 0).
  void handle_write(jit::Node* n) {
    if (is_list_write(n)) return handle_list_write(n);
    std::vector<size_t> written = written_args(n);
    if (written.empty()) return;
    // out= is followed where its symbolic reads the out= overload (arange(..., out=t): t's
    // contents, and shape, become the result).
    static const std::set<std::string> kOutForms = {"aten::arange"};
    bool out_form = written.size() == 1 && kOutForms.count(n->kind().toQualString()) &&
                    n->schema().arguments()[written[0]].name() == "out";
    if (!out_form && (written.size() > 1 || written[0] != 0))
      fail(n, "the op writes into its argument " + std::to_string(written.back()) +
                  " (an out= or multi-output in-place variant); tonnx exports in-place ops "
                  "that write into their first argument. Use the functional form");
    if (n->outputs().size() != 1 || !is_tensor(n->output()))
      fail(n, "the in-place op has no tensor result to export as its new contents");
    jit::Value* self = n->input(written[0]);
    jit::Value* updated = n->output();
    Alias a = alias_of(self);
    if (!a.other.empty())
      fail(n, "it writes in place into a view made by " + a.other +
                  ", which tonnx cannot write back into the tensor it views (ONNX has no "
                  "views); compute the result out of place instead (torch.where, "
                  "index_put, cat, scatter)");
    jit::Value* root = a.root;

    jit::WithInsertPoint guard(n->next());
    jit::WithCurrentScope scope_guard(*g_, n->scope());
    // The current contents of each link of the chain, from the root's current version:
    // reused where nothing was written since the view was made, made again otherwise.
    std::vector<jit::Value*> parents(a.chain.size());
    jit::Value* p = current(root);
    for (size_t i = 0; i < a.chain.size(); ++i) {
      parents[i] = p;
      if (i + 1 < a.chain.size())
        p = a.chain[i]->input(0) == p ? a.chain[i]->output() : remake_view(a.chain[i], p);
    }
    jit::Value* c = updated;
    for (size_t i = a.chain.size(); i-- > 0;) c = write_back(a.chain[i], parents[i], c);
    // The write-back's own nodes are not views of anything a user reads.
    jit::Node* last = g_->insertPoint()->prev();
    for (jit::Node* w = n->next(); w != g_->insertPoint(); w = w->next()) skip_.insert(w);
    if (c != updated) alias_[c] = Alias{root, {}, ""};
    alias_[updated] = a;
    root_updated(root, c, last, &a.chain, updated);
  }

  // `root` now has the contents `nw`, made at `after`: later reads of its old version and
  // of views of it made before are redirected. A view with the same chain as `same_chain`
  // reads `same_value`.
  void root_updated(jit::Value* root, jit::Value* nw, jit::Node* after,
                    const std::vector<jit::Node*>* same_chain = nullptr,
                    jit::Value* same_value = nullptr) {
    jit::Value* old = current(root);
    set_current(root, nw);
    replace_uses_after(old, nw, after);
    if (old != root) replace_uses_after(root, nw, after);
    std::vector<std::pair<jit::Value*, Alias>> stale;
    for (const auto& [v, a] : alias_)
      // (Results of `after` itself, control flow, already hold the new contents.)
      if (a.root == root && v != nw && v != same_value && v->node() != after &&
          used_after(v, after))
        stale.emplace_back(v, a);
    // Values are pointers: sort by graph order for a stable result.
    std::sort(stale.begin(), stale.end(),
              [](const auto& x, const auto& y) { return x.first->unique() < y.first->unique(); });
    if (stale.empty()) return;
    jit::WithInsertPoint guard(after->next());
    jit::WithCurrentScope scope_guard(*g_, after->scope());
    std::vector<std::pair<jit::Value*, jit::Value*>> remade;
    for (const auto& [v, a] : stale) {
      if (a.chain.empty()) {
        remade.emplace_back(v, nw);  // an older version of the root itself
        continue;
      }
      if (!a.other.empty())
        fail(v->node(), "its result (a view made by " + a.other +
                            ") is read after a write in place into the tensor it views, which "
                            "tonnx cannot follow; compute it after the write, or out of place");
      if (same_chain && a.chain == *same_chain) {
        remade.emplace_back(v, same_value);
        continue;
      }
      jit::Value* p = nw;
      for (jit::Node* s : a.chain) p = remake_view(s, p);
      remade.emplace_back(v, p);
    }
    jit::Node* end = g_->insertPoint()->prev();
    for (const auto& [v, nv] : remade) replace_uses_after(v, nv, end);
  }

  // Roots defined outside `n` that `changed` (the versions a body left) changed.
  std::vector<jit::Value*> outer_roots(const std::vector<Versions>& changed, const jit::Node* n) {
    std::vector<jit::Value*> roots;
    for (const Versions& vs : changed)
      for (const auto& [r, v] : vs)
        if (!defined_inside(r, n) && std::find(roots.begin(), roots.end(), r) == roots.end())
          roots.push_back(r);
    return roots;
  }
  static jit::Value* version_in(const Versions& vs, jit::Value* root, jit::Value* otherwise) {
    for (const auto& [r, v] : vs)
      if (r == root) return v;
    return otherwise;
  }

  // Outputs of control flow that pass on a tensor from outside, or a view of one. When every
  // block passes on the same one (the same root through the same views), the output is that
  // tensor; otherwise which tensor it is depends on the branch taken or the iteration count,
  // and writes through it cannot be followed. A result made inside n is a new tensor.
  void mark_chosen_outputs(jit::Node* n, size_t n_outputs, size_t first_block_output) {
    const bool loop = n->kind() == c10::prim::Loop;
    for (size_t k = 0; k < n_outputs; ++k) {
      std::optional<Alias> chosen;
      bool same = true;
      for (jit::Block* b : n->blocks()) {
        jit::Value* bo = b->outputs()[first_block_output + k];
        // (An uninitialized value is a placeholder for a block that returns or raises.)
        if (!is_tensor(bo) || bo->node()->kind() == c10::prim::Uninitialized) continue;
        Alias a = alias_of(bo);
        bool carried = loop && a.root->node() == b->param_node();
        if (defined_inside(a.root, n) && !carried) {
          same = false;  // a new tensor in this block
          continue;
        }
        if (carried) {
          // A view of what the loop carries, which is another tensor at each iteration.
          a.other = n->kind().toQualString();
          same = false;
        }
        if (!chosen) {
          chosen = a;
        } else if (chosen->root != a.root || chosen->chain != a.chain) {
          same = false;
        }
      }
      if (!chosen) continue;
      // A loop that runs zero times passes on its input: it too must be that tensor.
      if (same && loop) {
        Alias init = alias_of(n->input(2 + k));
        same = init.root == chosen->root && init.chain == chosen->chain;
      }
      if (!same) {
        chosen->chain.push_back(n);
        if (chosen->other.empty()) chosen->other = n->kind().toQualString();
      }
      alias_[n->output(k)] = *chosen;
    }
  }

  // Before a loop's body is processed: a carried tensor the body hands back as itself (changed
  // in place only: x.add_(y), x[i] = v, x += y) is the tensor the loop was given, at every
  // iteration, so writes into it are writes into that tensor.
  void alias_carried(jit::Node* n) {
    jit::Block* body = n->blocks()[0];
    for (size_t j = 1; j < body->inputs().size(); ++j) {
      jit::Value* in = body->inputs()[j];
      if (!is_tensor(in) || !is_tensor(n->input(j + 1))) continue;
      if (same_tensor(body->outputs()[j]) == in) alias_[in] = alias_of(n->input(j + 1));
    }
  }

  // The tensor `v` is, followed back through in-place ops (their result is their input 0),
  // branches that all hand back the same tensor and loops that carry one as itself.
  static jit::Value* same_tensor(jit::Value* v) {
    for (;;) {
      jit::Node* n = v->node();
      if (n->kind() == c10::prim::If) {
        jit::Value* common = nullptr;
        for (jit::Block* b : n->blocks()) {
          jit::Value* bo = b->outputs()[v->offset()];
          if (bo->node()->kind() == c10::prim::Uninitialized) continue;
          jit::Value* t = same_tensor(bo);
          if (common && t != common) return v;
          common = t;
        }
        if (!common || defined_inside(common, n)) return v;
        v = common;
      } else if (n->kind() == c10::prim::Loop) {
        jit::Block* body = n->blocks()[0];
        const size_t k = v->offset();
        if (same_tensor(body->outputs()[k + 1]) != body->inputs()[k + 1]) return v;
        v = n->input(k + 2);
      } else {
        std::vector<size_t> w = written_args(n);
        if (n->outputs().size() != 1 || w.size() != 1 || w[0] != 0) return v;
        v = n->input(0);
      }
    }
  }

  void handle_if(jit::Node* n) {
    const size_t n_outputs = n->outputs().size();
    std::vector<Versions> changed;
    for (jit::Block* b : n->blocks()) {
      scopes_.emplace_back();
      run_block(b);
      changed.push_back(std::move(scopes_.back()));
      scopes_.pop_back();
    }
    mark_chosen_outputs(n, n_outputs, 0);
    for (jit::Value* r : outer_roots(changed, n)) {
      jit::Value* before = current(r);
      for (size_t b = 0; b < n->blocks().size(); ++b)
        n->blocks()[b]->registerOutput(version_in(changed[b], r, before));
      jit::Value* out = n->addOutput();
      out->setType(before->type());
      alias_[out] = Alias{r, {}, ""};
      root_updated(r, out, n);
    }
  }

  void handle_loop(jit::Node* n) {
    const size_t n_outputs = n->outputs().size();
    jit::Block* body = n->blocks()[0];
    alias_carried(n);
    scopes_.emplace_back();
    run_block(body);
    std::vector<Versions> changed{std::move(scopes_.back())};
    scopes_.pop_back();
    // A carried tensor written in place but not handed back as itself is the loop's input at
    // the first iteration only: that write reaches the input, later ones do not.
    for (const auto& [r, v] : changed[0]) {
      if (r->node() != body->param_node()) continue;
      Alias init = alias_of(n->input(r->offset() + 1));
      bool read_after = used_after(init.root, n);
      for (const auto& [x, a] : alias_)
        read_after = read_after || (a.root == init.root && used_after(x, n));
      if (read_after)
        fail(n, "its body writes in place into loop-carried value " + std::to_string(r->offset()) +
                    ", which is the tensor given to the loop at the first iteration only, and "
                    "that tensor is read after the loop; tonnx cannot follow which tensor a "
                    "write reaches. Clone the tensor before the loop, or write out of place");
    }
    mark_chosen_outputs(n, n_outputs, 1);
    for (jit::Value* r : outer_roots(changed, n)) {
      jit::Value* before = current(r);
      jit::Value* last = version_in(changed[0], r, before);
      // The body reads the version carried from the previous iteration.
      n->addInput(before);
      jit::Value* carried = body->addInput();
      carried->setType(before->type());
      replace_uses_inside(before, carried, n);
      if (before != r) replace_uses_inside(r, carried, n);
      // Views of r made before the loop and read in it are made again from that version.
      std::vector<std::pair<jit::Value*, Alias>> outer_views;
      for (const auto& [v, a] : alias_)
        if (a.root == r && !a.chain.empty() && !defined_inside(v, n)) {
          bool read = false;
          for (const jit::Use& u : v->uses()) read = read || read_inside(u, n);
          if (read) outer_views.emplace_back(v, a);
        }
      std::sort(outer_views.begin(), outer_views.end(),
                [](const auto& x, const auto& y) { return x.first->unique() < y.first->unique(); });
      if (!outer_views.empty()) {
        jit::WithInsertPoint guard(body->nodes().front());
        for (const auto& [v, a] : outer_views) {
          if (!a.other.empty())
            fail(v->node(), "its result (a view made by " + a.other +
                                ") is read in a loop that writes in place into the tensor it "
                                "views, which tonnx cannot follow");
          jit::Value* p = carried;
          for (jit::Node* s : a.chain) p = remake_view(s, p);
          replace_uses_inside(v, p, n);
        }
      }
      body->registerOutput(last);
      jit::Value* out = n->addOutput();
      out->setType(before->type());
      alias_[out] = Alias{r, {}, ""};
      root_updated(r, out, n);
    }
  }

  std::shared_ptr<jit::Graph> g_;
  std::unordered_map<jit::Value*, Alias> alias_;
  std::vector<Versions> scopes_;
  std::unordered_set<const jit::Node*> skip_;
};

}  // namespace

// The expand's sizes would freeze the example's where dst's sizes vary.
void copy_without_expand(torch::jit::Block* b) {
  for (torch::jit::Node* n : b->nodes()) {
    for (torch::jit::Block* sub : n->blocks()) copy_without_expand(sub);
    if (n->kind() != c10::aten::copy_ || n->inputs().size() < 2) continue;
    torch::jit::Node* e = n->input(1)->node();
    if (e->kind() == c10::aten::expand && e->output()->uses().size() == 1)
      n->replaceInput(1, e->input(0));
  }
}

void functionalize_inplace(const std::shared_ptr<torch::jit::Graph>& graph) {
  copy_without_expand(graph->block());
  Functionalizer(graph).run();
}

}  // namespace tonnx::detail
