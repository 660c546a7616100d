// Preparing a TorchScript graph for conversion (script_graph.h).
#include "export/script_graph.h"

#include <torch/csrc/jit/runtime/interpreter.h>

#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include "export/view_ops.h"
#include "tonnx/ir.h"
#include "tonnx/symbolic.h"

namespace tonnx::detail {
namespace jit = torch::jit;

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  // The interpreter's "The following operation failed..." then a TorchScript traceback: the
  // cause is the last line.
  if (line.rfind("The following operation failed", 0) == 0) {
    size_t end = s.find_last_not_of("\n ");
    size_t start = end == std::string::npos ? std::string::npos : s.rfind('\n', end);
    if (end != std::string::npos && start != std::string::npos)
      line = s.substr(start + 1, end - start);
  }
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

// `a` is the None constant and `b` a value whose type cannot be None (a tensor computed in
// forward, once refined by unchecked_cast or observed): `b is None` is false. (The symbolic of
// aten::__is__ answers the same while converting; folded here, the if it decides goes too.)
static bool none_vs_value(const jit::Value* a, const jit::Value* b) {
  c10::TypeKind kb = b->type()->kind();
  return a->type()->kind() == c10::TypeKind::NoneType && kb != c10::TypeKind::NoneType &&
         kb != c10::TypeKind::OptionalType && kb != c10::TypeKind::AnyType;
}

// What an export knows before running anything: tensors are on the CPU, dense and strided,
// and nothing requires grad (forward runs under no_grad, as inference). Scripted library code
// (nn.MultiheadAttention's fast-path checks) branches on these; as constants, the branches
// fold away with ConstantPropagation; so does `x is x`, and autocast is off. Returns how many
// were replaced.
int fold_export_constants(jit::Graph& g, jit::Block* b) {
  static const std::set<std::string> kFalse = {"prim::is_cuda",
                                               "prim::is_xpu",
                                               "prim::is_sparse",
                                               "prim::is_sparse_csr",
                                               "prim::is_mkldnn",
                                               "prim::is_mps",
                                               "prim::is_meta",
                                               "prim::is_vulkan",
                                               "prim::is_ipu",
                                               "prim::is_quantized",
                                               "prim::is_nested",
                                               "prim::requires_grad",
                                               "aten::is_grad_enabled",
                                               "aten::is_autocast_enabled",
                                               "aten::is_autocast_cpu_enabled"};
  std::vector<jit::Node*> folded;
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
    jit::Node* n = *it;
    for (jit::Block* sub : n->blocks()) fold_export_constants(g, sub);
    if (n->outputs().size() != 1) continue;
    const std::string kind = n->kind().toQualString();
    jit::WithInsertPoint guard(n);
    jit::Value* c = nullptr;
    if (kFalse.count(kind))
      c = g.insertConstant(false);
    else if (kind == "prim::device" && n->inputs().size() == 1)
      c = g.insertConstant(c10::Device(at::kCPU));
    else if (kind == "prim::layout" && n->inputs().size() == 1)
      c = g.insertConstant(static_cast<int64_t>(at::kStrided));
    else if ((kind == "aten::__is__" || kind == "aten::__isnot__") && n->inputs().size() == 2 &&
             n->input(0) == n->input(1))  // one value: `query is key` in self-attention
      c = g.insertConstant(kind == "aten::__is__");
    else if ((kind == "aten::__is__" || kind == "aten::__isnot__") && n->inputs().size() == 2 &&
             (none_vs_value(n->input(0), n->input(1)) || none_vs_value(n->input(1), n->input(0))))
      c = g.insertConstant(kind == "aten::__isnot__");  // a tensor computed here is not None
    if (!c) continue;
    n->output()->replaceAllUsesWith(c);
    folded.push_back(n);
  }
  // Dead now; LibTorch's dead-code pass keeps some of them (is_grad_enabled reads global
  // state), and every node left must have a symbolic.
  for (jit::Node* n : folded) n->destroy();
  return static_cast<int>(folded.size());
}

// A Python number in a traced expression (`i * 1.5`, `arange(n) * 0.1`) is saved as a 0-dim
// float64 or int64 tensor constant, and LibTorch's interpreter promotes with it as with a
// tensor: an int64 `i` times it is float64. LibTorch's graph executor, which runs the module
// for the user, passes it as a number (the op's Scalar overload): float32, as in Python. The
// export takes the executor's result: such a constant, read directly as the other operand of
// an arithmetic or comparison op, becomes a number. (A review found int and bool tensors times
// float constants exported as float64 in traced files, and a traced position encoding that
// did not export at all.)
int numbers_as_scalars(jit::Graph& g, jit::Block* b) {
  static const std::set<std::string> kOps = {
      "aten::add",         "aten::sub",  "aten::mul",          "aten::div",  "aten::remainder",
      "aten::fmod",        "aten::pow",  "aten::floor_divide", "aten::rsub", "aten::eq",
      "aten::ne",          "aten::lt",   "aten::le",           "aten::gt",   "aten::ge",
      "aten::true_divide", "aten::add_", "aten::sub_",         "aten::mul_", "aten::div_"};
  int changed = 0;
  for (jit::Node* n : b->nodes()) {
    for (jit::Block* sub : n->blocks()) changed += numbers_as_scalars(g, sub);
    if (n->inputs().size() < 2 || !kOps.count(n->kind().toQualString())) continue;
    jit::Value* other = n->input(1);
    if (other->node()->kind() != c10::prim::Constant ||
        !n->input(0)->type()->cast<c10::TensorType>())
      continue;
    auto c = jit::toIValue(other);
    if (!c || !c->isTensor()) continue;
    const at::Tensor& t = c->toTensor();
    if (t.dim() != 0 || t.requires_grad() || !t.device().is_cpu() ||
        (t.scalar_type() != at::kDouble && t.scalar_type() != at::kLong))
      continue;
    jit::WithInsertPoint guard(n);
    jit::Value* number = t.scalar_type() == at::kDouble ? g.insertConstant(t.item<double>())
                                                        : g.insertConstant(t.item<int64_t>());
    n->replaceInput(1, number);
    // The node now matches the op's Scalar overload (its schema is looked up from the types).
    if (!n->maybeSchema()) {
      n->replaceInput(1, other);
      continue;
    }
    ++changed;
  }
  return changed;
}

// LowerAllTuples turns a tuple-typed prim::Uninitialized (the value of a branch that raises)
// into one node with an output per element, which LibTorch's interpreter runs as if it had
// one: the stack goes out of step and the process corrupts its heap (scripted
// MultiheadAttention, a raise in one branch of an if). One node per output is what it runs.
void split_uninitialized(jit::Graph& g, jit::Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it;
    ++it;
    for (jit::Block* sub : n->blocks()) split_uninitialized(g, sub);
    if (n->kind() != c10::prim::Uninitialized || n->outputs().size() < 2) continue;
    for (jit::Value* o : n->outputs()) {
      jit::Node* one = g.createUninitialized(o->type());
      one->insertBefore(n);
      o->replaceAllUsesWith(one->output());
    }
    n->destroy();
  }
}

// An if whose one branch raises (an assert, an argument check) is exported as the other
// branch, as torch.onnx does: ONNX has no exceptions, and the example inputs took that branch
// (the export runs forward on them first). Returns how many were dropped.
int drop_raising_branches(jit::Block* b) {
  int dropped = 0;
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it;
    ++it;
    for (jit::Block* sub : n->blocks()) dropped += drop_raising_branches(sub);
    if (n->kind() == c10::prim::Print ||
        (n->kind() == c10::prim::tolist && !n->output()->hasUses())) {
      n->destroy();  // what it printed or listed becomes dead code
      continue;
    }
    if (n->kind() != c10::prim::If) continue;
    auto raises = [](jit::Block* blk) {
      for (jit::Node* m : blk->nodes())
        if (m->kind() == c10::prim::RaiseException) return true;
      return false;
    };
    bool r0 = raises(n->blocks()[0]), r1 = raises(n->blocks()[1]);
    if (r0 == r1) continue;
    replace_if_by_branch(n, r0 ? 1 : 0);
    ++dropped;
  }
  return dropped;
}

namespace {
// Ops whose result's sizes depend on the values of their inputs (how many are nonzero, how
// long each sequence is), not only on the inputs' sizes. The example run saw one such size;
// another input gives another, so neither the observed sizes of these results nor of
// anything computed from them may be frozen into the model, even without dynamic axes.
bool data_shaped_op(const jit::Node* n, const std::unordered_set<const jit::Value*>& data) {
  static const std::set<std::string> kOps = {"aten::nonzero",
                                             "aten::nonzero_numpy",
                                             "aten::masked_select",
                                             "aten::unique",
                                             "aten::_unique",
                                             "aten::_unique2",
                                             "aten::unique_consecutive",
                                             "aten::unique_dim",
                                             "aten::_pack_padded_sequence",
                                             "aten::_pad_packed_sequence",
                                             "aten::argwhere",
                                             "torchvision::nms",
                                             "aten::repeat_interleave"};
  const std::string kind = n->kind().toQualString();
  if (kOps.count(kind)) return true;
  // one_hot without num_classes (-1): as many classes as the largest index says.
  if (kind == "aten::one_hot" && n->inputs().size() > 1) {
    auto classes = jit::toIValue(n->input(1));
    if (!classes || !classes->isInt() || classes->toInt() < 0) return true;
  }
  // torch.where(cond), one argument: nonzero's indices as a list of 1-D tensors.
  if (kind == "aten::where" && n->inputs().size() == 1) return true;
  // A size, count or bound computed from an input's values (torch.zeros(int(n[0])),
  // x[:int(k)], topk(x, int(k))): the example's value is one of many.
  static const std::set<std::string> kSizeArgs = {
      "size",        "sizes",       "shape",    "k",     "repeats", "split_size",
      "split_sizes", "chunks",      "sections", "start", "end",     "step",
      "length",      "output_size", "pad",      "steps", "n",       "m"};
  bool tensor_out = false;
  for (const jit::Value* o : n->outputs())
    tensor_out = tensor_out || o->type()->kind() == c10::TypeKind::TensorType ||
                 o->type()->kind() == c10::TypeKind::ListType;
  if (const c10::FunctionSchema* s = tensor_out ? n->maybeSchema() : nullptr)
    for (size_t i = 0; i < s->arguments().size() && i < n->inputs().size(); ++i)
      if (kSizeArgs.count(s->arguments()[i].name()) && data.count(n->input(i)) &&
          n->input(i)->type()->kind() != c10::TypeKind::TensorType)
        return true;
  if (kind == "aten::index" && n->inputs().size() > 1) {
    const jit::Node* list = n->input(1)->node();
    if (list->kind() == c10::prim::ListConstruct)
      for (const jit::Value* idx : list->inputs())
        if (auto t = idx->type()->cast<c10::TensorType>())
          if (t->scalarType() == at::kBool || t->scalarType() == at::kByte) return true;
  }
  return false;
}

}  // namespace

namespace {
// Adds to `set` the outputs of every node that `starts` names or that reads a value in `set`
// (nodes `stops` names excepted), through nested blocks; a loop's carried values are in `set`
// when its input or what its body hands back is, to a fixpoint. `added` sees each value added.
template <typename Starts, typename Stops, typename Added>
void propagate(jit::Block* b, std::unordered_set<const jit::Value*>& set, const Starts& starts,
               const Stops& stops, const Added& added) {
  auto add = [&](jit::Value* v) {
    if (!set.insert(v).second) return false;
    added(v);
    return true;
  };
  for (jit::Node* n : b->nodes()) {
    if (stops(n)) continue;
    bool from = starts(n);
    for (const jit::Value* in : n->inputs()) from = from || set.count(in);
    for (jit::Block* sub : n->blocks()) {
      auto carry = [&] {  // (an If's blocks have no inputs)
        bool grew = false;
        for (size_t k = 1; k < sub->inputs().size() && k + 1 < n->inputs().size(); ++k)
          if (set.count(n->input(k + 1)) || set.count(sub->outputs()[k]))
            grew = add(sub->inputs()[k]) || grew;
        return grew;
      };
      carry();
      do propagate(sub, set, starts, stops, added);
      while (carry());
      for (const jit::Value* o : sub->outputs()) from = from || set.count(o);
    }
    if (from)
      for (jit::Value* o : n->outputs()) add(o);
  }
}
}  // namespace

void data_values(jit::Block* b, std::unordered_set<const jit::Value*>& data) {
  static const std::set<std::string> kSizesOnly = {"aten::size",   "aten::sym_size", "aten::dim",
                                                   "aten::numel",  "aten::len",      "prim::shape",
                                                   "prim::dtype",  "prim::device",   "prim::layout",
                                                   "aten::__is__", "aten::__isnot__"};
  // A loop that stops on data (a break or an early return on a value): how many times it ran
  // is data, and so are its counter and what it carries (x[:i] at the iteration it stops).
  std::function<bool(jit::Block*)> data_loops = [&](jit::Block* blk) {
    bool grew = false;
    for (jit::Node* n : blk->nodes()) {
      for (jit::Block* sub : n->blocks()) grew = data_loops(sub) || grew;
      if (n->kind() != c10::prim::Loop || n->blocks().empty() || n->inputs().size() < 2) continue;
      jit::Block* body = n->blocks()[0];
      if (!data.count(n->input(0)) && !data.count(n->input(1)) &&
          (body->outputs().empty() || !data.count(body->outputs()[0])))
        continue;
      for (const jit::Value* v : body->inputs()) grew = data.insert(v).second || grew;
      for (const jit::Value* v : n->outputs()) grew = data.insert(v).second || grew;
    }
    return grew;
  };
  do
    propagate(
        b, data, [](const jit::Node*) { return false; },
        [](const jit::Node* n) { return kSizesOnly.count(n->kind().toQualString()) > 0; },
        [](jit::Value*) {});
  while (data_loops(b));
}

void dynamic_sizes(jit::Block* b, std::unordered_set<const jit::Value*>& data) {
  static const std::set<std::string> kSizes = {"aten::size", "aten::sym_size", "aten::numel",
                                               "prim::shape", "aten::len"};
  for (jit::Node* n : b->nodes()) {
    for (jit::Block* sub : n->blocks()) dynamic_sizes(sub, data);
    const std::string kind = n->kind().toQualString();
    if (n->inputs().empty() || !kSizes.count(kind)) continue;
    const bool size = kind == "aten::size" || kind == "aten::sym_size";
    auto tt = n->input(0)->type()->cast<c10::TensorType>();
    if (!tt) continue;
    auto dims = tt->sizes().sizes();
    bool varies = !dims;
    if (dims) {
      std::optional<int64_t> axis;  // the one dim asked: size(x, d), len(x)
      if (size && n->inputs().size() == 2) {
        auto d = jit::toIValue(n->input(1));
        if (d && d->isInt())
          axis = ir::normalize_axis(d->toInt(), static_cast<int64_t>(dims->size()));
        varies = !axis;
      } else if (kind == "aten::len") {
        axis = 0;
      }
      for (size_t i = 0; i < dims->size() && !varies; ++i)
        if (!axis || *axis == static_cast<int64_t>(i)) varies = !(*dims)[i].has_value();
    }
    if (varies)
      for (const jit::Value* o : n->outputs()) data.insert(o);
  }
}

void forget_data_shapes(jit::Block* b, std::unordered_set<const jit::Value*>& shaped,
                        const std::unordered_set<const jit::Value*>& data) {
  propagate(
      b, shaped, [&](const jit::Node* n) { return data_shaped_op(n, data); },
      [](const jit::Node*) { return false; },
      [](jit::Value* v) {
        if (auto t = v->type()->cast<c10::TensorType>(); t && t->dim())
          v->setType(t->withSymbolicShapes(c10::SymbolicShape(c10::optional<size_t>(*t->dim()))));
      });
}

// What the example run fixed, as constants: prim::dtype of an observed tensor (scripted code
// makes tensors like another: torch.tensor(5, dtype=x.dtype)) and, when no axis is dynamic,
// aten::size of known dims. ConstantPropagation then folds what was computed from them
// ([E, E * 2] split sizes in nn.MultiheadAttention). Sizes that varied between loop iterations,
// or that depend on data, were observed as unknown and stay computed.
void fold_observed(jit::Graph& g, jit::Block* b, bool sizes_vary) {
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
    jit::Node* n = *it;
    for (jit::Block* sub : n->blocks()) fold_observed(g, sub, sizes_vary);
    if (n->inputs().empty() || n->outputs().size() != 1) continue;
    auto tt = n->input(0)->type()->cast<c10::TensorType>();
    if (!tt) continue;
    jit::WithInsertPoint guard(n);
    if (n->kind() == c10::prim::dtype && n->inputs().size() == 1) {
      if (tt->scalarType())
        n->output()->replaceAllUsesWith(g.insertConstant(static_cast<int64_t>(*tt->scalarType())));
      continue;
    }
    if (n->kind() != c10::aten::size || sizes_vary) continue;
    if (n->inputs().size() == 1) {
      if (auto sizes = tt->sizes().concrete_sizes())
        n->output()->replaceAllUsesWith(g.insertConstant(*sizes));
    } else if (n->inputs().size() == 2 && tt->dim()) {
      auto d = jit::toIValue(n->input(1));
      if (!d || !d->isInt()) continue;
      auto axis = ir::normalize_axis(d->toInt(), static_cast<int64_t>(*tt->dim()));
      if (!axis) continue;
      if (auto s = tt->sizes()[*axis]) n->output()->replaceAllUsesWith(g.insertConstant(*s));
    }
  }
}

// Whether forward (calls inlined) may write into the module's state: an attribute write or any
// in-place op (conservatively, an in-place op on an activation counts too).
bool may_write_state(torch::jit::Block* b) {
  for (torch::jit::Node* n : b->nodes()) {
    if (n->kind() == c10::prim::SetAttr) return true;
    if (const c10::FunctionSchema* s = n->maybeSchema())
      for (const auto& a : s->arguments())
        if (a.alias_info() && a.alias_info()->isWrite()) return true;
    for (torch::jit::Block* sub : n->blocks())
      if (may_write_state(sub)) return true;
  }
  return false;
}

}  // namespace tonnx::detail
