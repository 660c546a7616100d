// Lists of tensors that change at run time (converter.h). A Tensor[] is a list of values
// while converting as long as its length is known; a list changed in a loop or a branch
// (append, insert, pop, del, l[i] = x, +=) becomes an ONNX sequence (opset 11): carried by
// the Loop, returned by the If, changed with SequenceInsert / SequenceErase and read with
// SequenceAt, SequenceLength and ConcatFromSequence. A value that exists only on a path that
// returns early or raises (prim::Uninitialized) becomes a value of the right type that no
// path reads.
#include <ATen/ATen.h>

#include <functional>

#include "export/converter.h"
#include "export/functionalize.h"

namespace tonnx::detail {
namespace jit = torch::jit;

bool is_tensor_list_type(const c10::TypePtr& t) {
  auto lt = t->cast<c10::ListType>();
  return lt && lt->getElementType()->kind() == c10::TypeKind::TensorType;
}

std::optional<ir::TensorType> number_list_type(const c10::TypePtr& t) {
  auto lt = t->cast<c10::ListType>();
  if (!lt) return std::nullopt;
  switch (lt->getElementType()->kind()) {
    case c10::TypeKind::IntType:
      return ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>(1)};
    case c10::TypeKind::FloatType:
      return ir::TensorType{ir::DType::Float, std::vector<ir::Dim>(1)};
    case c10::TypeKind::BoolType:
      return ir::TensorType{ir::DType::Bool, std::vector<ir::Dim>(1)};
    default:
      return std::nullopt;
  }
}

namespace {
// dtype and rank where every element agrees (sizes vary along a loop).
void merge(ListElems& into, const std::optional<ir::TensorType>& t) {
  into.has_elements = true;
  if (!t || t->dtype == ir::DType::Undefined) return;
  ir::TensorType e = *t;
  if (e.shape)
    for (ir::Dim& d : *e.shape) d = ir::Dim{};
  if (!into.type) {
    into.type = e;
    return;
  }
  if (into.type->dtype != e.dtype && into.conflict.empty())
    into.conflict =
        std::string(ir::dtype_name(into.type->dtype)) + " and " + ir::dtype_name(e.dtype);
  if (into.type->shape && (!e.shape || e.shape->size() != into.type->shape->size()))
    into.type->shape.reset();
}
}  // namespace

void Converter::analyse_lists() {
  if (lists_analysed_) return;
  lists_analysed_ = true;
  std::unordered_map<const jit::Value*, const jit::Value*> parent;
  std::function<const jit::Value*(const jit::Value*)> find = [&](const jit::Value* v) {
    auto it = parent.find(v);
    if (it == parent.end() || it->second == v) return v;
    const jit::Value* r = find(it->second);
    parent[v] = r;
    return r;
  };
  auto unite = [&](const jit::Value* a, const jit::Value* b) {
    if (!is_tensor_list_type(a->type()) || !is_tensor_list_type(b->type())) return;
    const jit::Value *ra = find(a), *rb = find(b);
    if (ra != rb) parent[ra] = rb;
  };
  std::vector<std::pair<const jit::Value*, std::optional<ir::TensorType>>> elems;
  std::function<void(const jit::Block*)> walk = [&](const jit::Block* b) {
    for (const jit::Node* n : b->nodes()) {
      for (const jit::Block* sub : n->blocks()) walk(sub);
      const std::string k = n->kind().toQualString();
      if (n->kind() == c10::prim::Loop) {
        const jit::Block* body = n->blocks()[0];
        for (size_t i = 0; i + 2 < n->inputs().size(); ++i) {
          unite(n->input(i + 2), body->inputs()[i + 1]);
          unite(body->outputs()[i + 1], body->inputs()[i + 1]);
          unite(n->output(i), body->inputs()[i + 1]);
        }
      } else if (n->kind() == c10::prim::If) {
        for (size_t i = 0; i < n->outputs().size(); ++i)
          for (const jit::Block* blk : n->blocks()) unite(n->output(i), blk->outputs()[i]);
      } else if (n->kind() == c10::prim::ListConstruct) {
        if (is_tensor_list_type(n->output()->type()))
          for (const jit::Value* e : n->inputs()) elems.emplace_back(n->output(), jit_type(e));
      } else if (is_list_write(n) || k == "aten::add" || k == "aten::list" || k == "aten::slice") {
        if (n->outputs().size() == 1)
          for (const jit::Value* in : n->inputs()) unite(in, n->output());
        size_t el = k == "aten::append"                                   ? 1
                    : k == "aten::_set_item" || k == "tonnx::list_insert" ? 2
                                                                          : 0;
        if (el && el < n->inputs().size()) elems.emplace_back(n->input(0), jit_type(n->input(el)));
      } else if (k == "aten::__getitem__" && !n->inputs().empty()) {
        elems.emplace_back(n->input(0), jit_type(n->output()));
      }
    }
  };
  walk(jg_->block());
  for (const auto& [list, t] : elems) {
    ListElems& info = list_elems_[find(list)];
    merge(info, t);
  }
  for (const auto& [v, p] : parent) list_class_[v] = find(v);
}

std::optional<ir::TensorType> Converter::list_elem_type(const jit::Value* list, bool* seen) {
  analyse_lists();
  auto c = list_class_.find(list);
  const jit::Value* root = c == list_class_.end() ? list : c->second;
  auto it = list_elems_.find(root);
  if (seen) *seen = it != list_elems_.end() && it->second.has_elements;
  // A list no tensor is ever put into: any dtype serves its (empty) sequences.
  if (it == list_elems_.end() || !it->second.has_elements)
    return ir::TensorType{ir::DType::Float, std::nullopt};
  if (!it->second.type)
    fail(current_, std::string("the type of the tensors in list %") + list->debugName() +
                       " is not known from the trace (no element of it was seen); an ONNX "
                       "sequence needs their dtype");
  if (!it->second.conflict.empty())
    fail(current_, std::string("list %") + list->debugName() + " holds tensors of " +
                       it->second.conflict +
                       "; an ONNX sequence holds one dtype: convert them "
                       "to one with .to(dtype) before adding them");
  return it->second.type;
}

bool Converter::is_sequence(const jit::Value* v) const {
  ir::Value* known = find_env(v);
  return known && known->is_sequence();
}

ir::Value* Converter::mark_sequence(ir::Value* seq, const jit::Value* list) {
  if (!seq->is_sequence()) seq->set_sequence_elem(list_elem_type(list));
  return seq;
}

// A list of numbers returned is a sequence of 0-d tensors, as torch.onnx exports the number
// lists it can (those built at run time): the list's structure, not one tensor. Below opset 11
// (no sequences) it stays one 1-D tensor.
ir::Value* Converter::number_list_output(const jit::Value* list, ir::Value* v) {
  auto t = number_list_type(list->type());
  if (!v || v->is_sequence() || cfg_.opset < 11 || !t) return v;
  if (v->type() && v->type()->dtype != t->dtype)
    v = emit("Cast", {v}, {{"to", static_cast<int64_t>(t->dtype)}}, 1, "")->output();
  v = emit("SplitToSequence", {v}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}, 1, "")
          ->output();
  v->set_sequence_elem(ir::TensorType{t->dtype, std::vector<ir::Dim>{}});
  return v;
}

ir::Value* Converter::sequence_of(const jit::Value* v) {
  if (cfg_.opset < 11)
    fail(current_,
         "a list that changes at run time is an ONNX sequence, which needs opset 11 "
         "or newer; export with opset_version=11 or newer");
  if (ir::Value* known = find_env(v))
    if (known->is_sequence()) return known;
  std::vector<ir::Value*> items = tensor_list_of(v);
  bool seen = false;
  std::optional<ir::TensorType> elem = list_elem_type(v, &seen);
  // A list an op returned (broadcast_tensors, split, unbind) has no element put into it in the
  // graph: its dtype is its items'.
  if (!seen && !items.empty() && items[0] && items[0]->type() &&
      items[0]->type()->dtype != ir::DType::Undefined) {
    elem = ir::TensorType{items[0]->type()->dtype, std::nullopt};
    for (const ir::Value* item : items)
      if (item && item->type() && item->type()->dtype != elem->dtype)
        fail(current_, std::string("list %") + v->debugName() + " holds tensors of " +
                           ir::dtype_name(elem->dtype) + " and " +
                           ir::dtype_name(item->type()->dtype) +
                           "; an ONNX sequence holds one dtype: convert them to one with "
                           ".to(dtype) first");
  }
  ir::Value* seq;
  if (items.empty()) {
    seq =
        emit("SequenceEmpty", {}, {{"dtype", static_cast<int64_t>(elem->dtype)}}, 1, "")->output();
  } else {
    for (ir::Value*& item : items) {
      if (!item) fail(current_, "a list element is None");
      if (item->type() && item->type()->dtype != elem->dtype) {
        ir::TensorType t = *item->type();
        t.dtype = elem->dtype;
        item = emit("Cast", {item}, {{"to", static_cast<int64_t>(elem->dtype)}}, 1, "")->output();
        item->set_type(t);
      }
    }
    seq = emit("SequenceConstruct", items, {}, 1, "")->output();
  }
  seq->set_sequence_elem(elem);
  return seq;
}

// A value for a jit value that no path reads (prim::Uninitialized), typed like `like`.
ir::Value* Converter::placeholder(const jit::Value* v, const ir::Value* like) {
  if (is_tensor_list_type(v->type())) return sequence_of(v);  // empty (tensor_list_of)
  // The rank may stay unknown: ONNX's If takes branches of one dtype and any ranks.
  auto typed = [](const std::optional<ir::TensorType>& t) {
    return t && t->dtype != ir::DType::Undefined;
  };
  std::optional<ir::TensorType> t = jit_type(v);
  if (!typed(t)) t = number_list_type(v->type());
  if (!typed(t) && like) t = like->type();
  if (!typed(t))
    fail(current_, std::string("value %") + v->debugName() + " (of type " +
                       v->type()->annotation_str() +
                       ") exists only on a path that returns early or raises, and its dtype is "
                       "not known from the trace");
  std::vector<int64_t> zeros(t->shape ? t->shape->size() : 0, 0);
  return constant(
      at::zeros(zeros, at::TensorOptions().dtype(ir::scalar_type_from_dtype(t->dtype))));
}

// List repetition ([1] * k in TorchScript): a list of ints is a 1-D tensor, tiled k times (LibTorch
// fails for k < 0; here it is none); a list of tensors needs k at export.
bool Converter::convert_list_repeat(const jit::Node* n) {
  if (n->kind() != c10::aten::mul || n->inputs().size() != 2 ||
      n->output()->type()->kind() != c10::TypeKind::ListType)
    return false;
  if (is_tensor_list_type(n->output()->type())) {
    auto k = constant_ivalue(n->input(1));
    if (!k || !k->isInt())
      fail(n, "repeats a list of tensors a number of times not known at export");
    std::vector<ir::Value*> all, once = tensor_list_of(n->input(0));
    for (int64_t r = 0; r < k->toInt(); ++r) all.insert(all.end(), once.begin(), once.end());
    lists_.back()[n->output()] = all;
    return true;
  }
  ir::Value* list = tensor_of(n->input(0));
  ir::Value* k = tensor_of(n->input(1));
  if (!list || !k) fail(n, "a list or its repeat count is None");
  ir::Value* one = constant(at::tensor(std::vector<int64_t>{1}, at::kLong));
  ir::Value* zero = constant(at::scalar_tensor(int64_t{0}, at::kLong));
  ir::Value* negative = emit("Less", {k, zero}, {}, 1, "")->output();
  ir::Value* times = emit("Where", {negative, zero, k}, {}, 1, "")->output();
  times = emit("Reshape", {times, one}, {}, 1, "")->output();
  ir::Value* out = emit("Tile", {list, times}, {}, 1, "")->output();
  out->set_type(number_list_type(n->output()->type()));
  bind(n->output(), out);
  return true;
}

}  // namespace tonnx::detail
