// Types for values on paths the example inputs did not take (script_graph.h): a branch the
// example skipped, the body of a loop that ran zero times. Each op runs once on the meta device
// (no data, ATen's own dtype and shape rules) with stand-ins for what was not observed, so
// `i / 2` on an int64 tensor is float, as LibTorch computes it. Where an op has no meta kernel
// or an input has no stand-in, the dtype comes from a table of result kinds and type promotion.
#include <torch/csrc/jit/runtime/operator.h>

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "export/script_graph.h"

namespace tonnx::detail {
namespace jit = torch::jit;

namespace {

// A factory op's dtype, as PyTorch chooses it: its dtype argument; when None, self's for
// new_* and *_like, the default dtype (torch.set_default_dtype) for zeros, ones, empty, rand...
// (full and arange follow their values: not decided here).
std::optional<at::ScalarType> factory_dtype(const jit::Node* n) {
  const c10::FunctionSchema* s = n->maybeSchema();
  if (!s) return std::nullopt;
  const std::string kind = n->kind().toQualString();
  for (size_t i = 0; i < s->arguments().size() && i < n->inputs().size(); ++i) {
    if (s->arguments()[i].name() != "dtype") continue;
    auto c = jit::toIValue(n->input(i));
    if (!c) return std::nullopt;
    if (c->isInt()) return static_cast<at::ScalarType>(c->toInt());
    if (!c->isNone()) return std::nullopt;
    if (kind.rfind("aten::new_", 0) == 0 || kind.find("_like") != std::string::npos ||
        kind == "aten::full" || kind == "aten::arange")
      return std::nullopt;  // self's dtype (the promotion below) or the values'
    return c10::typeMetaToScalarType(c10::get_default_dtype());
  }
  return std::nullopt;
}

// Without a meta run: comparisons give bool, index results int64, factories their dtype, other
// ops the promotion of their tensor inputs, with c10's rule for a number operand (a float
// number makes an integer tensor's result the default dtype; an int number a bool's int64).
void dtype_from_table(jit::Node* n) {
  static const std::set<std::string> kBool = {
      "aten::eq",         "aten::ne",    "aten::lt",          "aten::le",
      "aten::gt",         "aten::ge",    "aten::logical_not", "aten::logical_and",
      "aten::logical_or", "aten::isnan", "aten::any",         "aten::all"};
  static const std::set<std::string> kLong = {"aten::argmax",  "aten::argmin",     "aten::argsort",
                                              "aten::nonzero", "torchvision::nms", "aten::size"};
  const std::string kind = n->kind().toQualString();
  for (jit::Value* o : n->outputs()) {
    auto tt = o->type()->cast<c10::TensorType>();
    if (!tt || tt->scalarType()) continue;
    std::optional<at::ScalarType> dt;
    if (kBool.count(kind)) dt = at::kBool;
    if (kLong.count(kind)) dt = at::kLong;
    if (!dt) dt = factory_dtype(n);
    if (!dt) {
      bool float_number = false, int_number = false;
      for (const jit::Value* in : n->inputs()) {
        float_number = float_number || in->type()->kind() == c10::TypeKind::FloatType;
        int_number = int_number || in->type()->kind() == c10::TypeKind::IntType;
        auto it = in->type()->cast<c10::TensorType>();
        if (!it || !it->scalarType()) continue;
        dt = dt ? at::promoteTypes(*dt, *it->scalarType()) : *it->scalarType();
      }
      if (dt && float_number && (at::isIntegralType(*dt, /*includeBool=*/true)))
        dt = c10::typeMetaToScalarType(c10::get_default_dtype());
      else if (dt && int_number && *dt == at::kBool)
        dt = at::kLong;
    }
    if (dt) o->setType(tt->withScalarType(*dt));
  }
}

// An input for a meta run, and whether it is what export would see (observed sizes, constant
// numbers) rather than a stand-in (sizes of 1, a number 0).
struct Known {
  c10::IValue value;
  bool exact = true;
};

class Unobserved {
 public:
  explicit Unobserved(bool sizes_vary) : sizes_vary_(sizes_vary) {}

  void block(jit::Block* b) {
    for (jit::Node* n : b->nodes()) {
      if (n->kind() == c10::prim::Loop)  // a body's carried values start as the loop's inputs
        for (jit::Block* sub : n->blocks())
          for (size_t k = 1; k < sub->inputs().size() && k + 1 < n->inputs().size(); ++k)
            adopt_dtype(sub->inputs()[k], n->input(k + 1));
      for (jit::Block* sub : n->blocks()) block(sub);
      uninitialized_like_results(n);
      if (!untyped(n)) continue;
      if (!n->blocks().empty())
        from_blocks(n);
      else if (!run_on_meta(n))
        dtype_from_table(n);
    }
  }

 private:
  static bool untyped(const jit::Node* n) {
    for (const jit::Value* o : n->outputs())
      if (auto tt = o->type()->cast<c10::TensorType>(); tt && !tt->scalarType()) return true;
    return false;
  }

  static void adopt_dtype(jit::Value* to, const jit::Value* from) {
    auto tt = to->type()->cast<c10::TensorType>();
    auto ft = from->type()->cast<c10::TensorType>();
    if (tt && ft && !tt->scalarType() && ft->scalarType())
      to->setType(tt->withScalarType(*ft->scalarType()));
  }

  // A prim::Uninitialized that a loop carries or a branch hands back (TorchScript's lowering
  // of an early return, of a value defined on one path) never holds a tensor, so it was not
  // observed: it takes the dtype of the loop's or the if's result in its place.
  static void uninitialized_like_results(jit::Node* n) {
    auto placeholder = [](jit::Value* v) { return v->node()->kind() == c10::prim::Uninitialized; };
    for (size_t k = 0; k < n->outputs().size(); ++k) {
      if (n->kind() == c10::prim::Loop && k + 2 < n->inputs().size() &&
          placeholder(n->input(k + 2)))
        adopt_dtype(n->input(k + 2), n->output(k));
      size_t at = n->kind() == c10::prim::Loop ? k + 1 : k;
      for (jit::Block* sub : n->blocks())
        if (at < sub->outputs().size() && placeholder(sub->outputs()[at]))
          adopt_dtype(sub->outputs()[at], n->output(k));
    }
  }

  // An If's outputs are its branches' outputs; a Loop's its carried values.
  static void from_blocks(jit::Node* n) {
    for (size_t k = 0; k < n->outputs().size(); ++k) {
      if (n->kind() == c10::prim::Loop && k + 2 < n->inputs().size())
        adopt_dtype(n->output(k), n->input(k + 2));
      size_t at = n->kind() == c10::prim::Loop ? k + 1 : k;
      for (jit::Block* sub : n->blocks())
        if (at < sub->outputs().size()) adopt_dtype(n->output(k), sub->outputs()[at]);
    }
  }

  // What a meta run can take for `v`, given the schema argument it feeds (for numbers that are
  // dtypes, layouts or memory formats, which have no stand-in).
  std::optional<Known> known(const jit::Value* v, const c10::Argument* arg, int depth) const {
    if (auto c = jit::toIValue(v)) {
      if (c->isTensor()) {
        const at::Tensor& t = c->toTensor();
        return Known{at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta))};
      }
      if (c->isTensorList() || c->isGenericDict()) return std::nullopt;
      return Known{*c};
    }
    const c10::TypePtr& type = v->type();
    if (auto tt = type->cast<c10::TensorType>()) {
      if (!tt->scalarType()) return std::nullopt;
      std::vector<int64_t> sizes;
      bool exact = false;
      if (auto it = sizes_.find(v); it != sizes_.end()) {
        sizes = it->second;
        exact = true;
      } else if (auto s = tt->sizes().concrete_sizes()) {
        sizes = *s;
        exact = !sizes_vary_;
      } else if (auto d = tt->dim()) {
        sizes.assign(*d, 1);
      } else {
        return std::nullopt;  // a rank-0 stand-in would promote differently
      }
      auto opts = at::TensorOptions().dtype(*tt->scalarType()).device(at::kMeta);
      return Known{at::empty(sizes, opts), exact};
    }
    const jit::Node* def = v->node();
    if (type->kind() == c10::TypeKind::IntType && def->kind() == c10::prim::dtype) {
      auto t = def->input()->type()->cast<c10::TensorType>();
      if (!t || !t->scalarType()) return std::nullopt;
      return Known{static_cast<int64_t>(*t->scalarType())};
    }
    if (def->kind() == c10::prim::ListConstruct && depth < 2) {
      auto lt = type->cast<c10::ListType>();
      if (!lt) return std::nullopt;
      c10::impl::GenericList list(lt->getElementType());
      bool exact = true;
      for (const jit::Value* in : def->inputs()) {
        auto k = known(in, nullptr, depth + 1);
        if (!k) return std::nullopt;
        exact = exact && k->exact;
        list.push_back(std::move(k->value));
      }
      return Known{c10::IValue(list), exact};
    }
    // A number computed at run time: a stand-in of its type, unless the argument is a dtype,
    // layout or memory format (ints in the schema, but deciding the result).
    if (arg) {
      c10::TypePtr real = arg->real_type();
      if (auto opt = real->cast<c10::OptionalType>()) real = opt->getElementType();
      if (real->kind() != c10::TypeKind::IntType && real->kind() != c10::TypeKind::FloatType &&
          real->kind() != c10::TypeKind::BoolType && real->kind() != c10::TypeKind::NumberType)
        return std::nullopt;
    }
    switch (type->kind()) {
      case c10::TypeKind::IntType:
        return Known{int64_t{0}, false};
      case c10::TypeKind::FloatType:
        return Known{1.0, false};
      case c10::TypeKind::BoolType:
        return Known{false, false};
      default:
        return std::nullopt;
    }
  }

  // Runs n on the meta device; sets the dtype of each untyped tensor output, and its rank when
  // every input was exact (stand-in sizes of 1 could change a rank: squeeze).
  bool run_on_meta(jit::Node* n) {
    if (n->kind().ns() != c10::namespaces::aten && n->kind() != c10::prim::NumToTensor)
      return false;
    const jit::Operator* op = n->maybeOperator();
    const c10::FunctionSchema* schema = n->maybeSchema();
    if (!op || !schema) return false;
    jit::Stack stack;
    bool exact = !sizes_vary_;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const c10::Argument* arg = i < schema->arguments().size() ? &schema->arguments()[i] : nullptr;
      auto k = known(n->input(i), arg, 0);
      if (!k) return false;
      exact = exact && k->exact;
      stack.push_back(std::move(k->value));
    }
    try {
      op->getOperation(n)(stack);
    } catch (const std::exception&) {
      return false;  // no meta kernel (nonzero, unique...), or a stand-in it refused
    }
    if (stack.size() != n->outputs().size()) return false;
    for (size_t i = 0; i < stack.size(); ++i) {
      jit::Value* o = n->output(i);
      auto tt = o->type()->cast<c10::TensorType>();
      if (!tt || tt->scalarType() || !stack[i].isTensor()) continue;
      const at::Tensor& t = stack[i].toTensor();
      c10::TensorTypePtr typed = tt->withScalarType(t.scalar_type());
      if (exact) {
        typed = typed->withSymbolicShapes(c10::SymbolicShape(c10::optional<size_t>(t.dim())));
        sizes_[o] = t.sizes().vec();
      }
      o->setType(typed);
    }
    return true;
  }

  bool sizes_vary_;
  // Sizes computed exactly by meta runs here (kept out of the types: only ranks go there).
  std::unordered_map<const jit::Value*, std::vector<int64_t>> sizes_;
};

}  // namespace

void infer_unobserved(jit::Block* b, bool sizes_vary) { Unobserved(sizes_vary).block(b); }

}  // namespace tonnx::detail
