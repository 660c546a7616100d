// How TorchScript's view ops relate their output to their input: see view_ops.h.
#include "export/view_ops.h"

#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>

#include <map>
#include <string>

namespace tonnx::detail {
namespace jit = torch::jit;

bool is_tensor(const torch::jit::Value* v) { return v->type()->cast<c10::TensorType>() != nullptr; }

std::optional<at::ScalarType> dtype_of(const jit::Value* v) {
  if (auto t = v->type()->cast<c10::TensorType>())
    if (auto s = t->scalarType()) return *s;
  return std::nullopt;
}

namespace {

// reshape, flatten, reshape_as and contiguous return a view only where ATen can make one
// (contiguous: an input that already is; reshape: strides that allow the new shape), and a
// copy otherwise, which later in-place writes do not reach. A scripted graph's observation
// runs record which each run made (kSharesStorage). Otherwise, where the input's sizes and
// strides are known (a trace records them), ATen's own test on them says which (its
// is_contiguous, and the computeStride that reshape asks). Unknown ones count as a view.
std::optional<View> copy_or_view(const jit::Node* n, const std::string& kind) {
  if (n->hasAttribute(kSharesStorage)) {
    int64_t bits = n->i(kSharesStorage);
    if (bits == 1) return View::None;
    if (bits == 3) return View::Other;  // a view on some runs, a copy on others
    return std::nullopt;
  }
  auto in = n->input(0)->type()->cast<c10::TensorType>();
  auto out = n->output()->type()->cast<c10::TensorType>();
  if (!in || !out) return std::nullopt;
  auto sizes = in->sizes().concrete_sizes(), strides = in->strides().concrete_sizes();
  auto out_sizes = out->sizes().concrete_sizes();
  if (!sizes || !strides || !out_sizes || sizes->size() != strides->size()) return std::nullopt;
  try {
    bool view = kind == "aten::contiguous"
                    ? at::empty_strided(*sizes, *strides, at::TensorOptions().device(at::kMeta))
                          .is_contiguous()
                    : at::detail::computeStride(*sizes, *strides, *out_sizes).has_value();
    if (!view) return View::None;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

bool may_copy(const jit::Node* n) {
  return n->kind() == c10::aten::reshape || n->kind() == c10::aten::reshape_as ||
         n->kind() == c10::aten::flatten || n->kind() == c10::aten::contiguous;
}

View view_kind(const jit::Node* n) {
  if (n->inputs().empty() || !is_tensor(n->input(0))) return View::None;
  static const std::map<std::string, View> kViews = {
      {"aten::slice", View::Slice},
      {"aten::narrow", View::Narrow},
      {"aten::select", View::Select},
      {"aten::view", View::Reshape},
      {"aten::reshape", View::Reshape},
      {"aten::_reshape_alias", View::Reshape},
      {"aten::view_as", View::Reshape},
      {"aten::reshape_as", View::Reshape},
      {"aten::flatten", View::Reshape},
      {"aten::unflatten", View::Reshape},
      {"aten::squeeze", View::Reshape},
      {"aten::unsqueeze", View::Reshape},
      {"aten::detach", View::Same},
      {"aten::alias", View::Same},
      {"aten::contiguous", View::Same},
      {"aten::transpose", View::Transpose},
      {"aten::swapaxes", View::Transpose},
      {"aten::swapdims", View::Transpose},
      {"aten::t", View::T},
      {"aten::permute", View::Permute},
      {"prim::ConstantChunk", View::Other},
  };
  const std::string kind = n->kind().toQualString();
  if (n->outputs().size() == 1 && is_tensor(n->output())) {
    auto it = kViews.find(kind);
    if (it != kViews.end()) {
      if (!may_copy(n)) return it->second;
      return copy_or_view(n, kind).value_or(it->second);
    }
    if (kind == "aten::to" || kind == "aten::type_as") {
      // The same tensor when nothing changes; a copy otherwise (or when copy=True).
      auto in = dtype_of(n->input(0)), out = dtype_of(n->output());
      bool copy = false;
      if (const c10::FunctionSchema* s = n->maybeSchema())
        for (size_t i = 1; i < n->inputs().size() && i < s->arguments().size(); ++i)
          if (s->arguments()[i].name() == "copy")
            if (auto c = jit::toIValue(n->input(i)); c && c->isBool()) copy = c->toBool();
      return in && out && *in == *out && !copy ? View::Same : View::None;
    }
  }
  if (kViews.count(kind)) return View::Other;  // prim::ConstantChunk
  // Anything else whose schema says its result shares memory with an input.
  const c10::FunctionSchema* s = n->maybeSchema();
  if (!s) return View::None;
  for (const c10::Argument& r : s->returns())
    if (r.alias_info() && !r.alias_info()->isWrite()) return View::Other;
  return View::None;
}

}  // namespace tonnx::detail
