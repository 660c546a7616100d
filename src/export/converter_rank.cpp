// Ranks known only at run time (converter.h). torch.squeeze(x, d) removes dim d only when its size
// is 1; when that size varies (a dynamic axis, data), so does the result's rank. It is exported as
// torch.onnx does: If (size == 1) then Squeeze else Identity. The result and everything computed
// from it are recorded in rank_varies_: symbolics see those values without a shape (those that
// need a rank fail and say so, rather than use the traced one), and their ONNX values carry no
// shape. Graph outputs keep the traced rank (ONNX's checker wants one).
#include "export/converter.h"

namespace tonnx::detail {
namespace jit = torch::jit;

bool Converter::convert_varying_squeeze(const jit::Node* n) {
  if (n->kind() != c10::aten::squeeze && n->kind() != c10::aten::squeeze_) return false;
  const jit::Value* in = n->input(0);
  std::optional<ir::TensorType> t = jit_type(in);
  bool rank_known = t && t->shape && !rank_varies(in);
  ir::Value* dim = nullptr;  // int64 scalar; null: every dim of size 1
  if (n->inputs().size() > 1) {
    auto d = constant_ivalue(n->input(1));
    if (d && d->isInt()) {
      if (rank_known) {
        auto a = ir::normalize_axis(d->toInt(), static_cast<int64_t>(t->shape->size()));
        if (!a || (*t->shape)[*a].value) return false;  // the size is known: the symbolic's case
      }
      dim = constant(at::scalar_tensor(d->toInt(), at::kLong));
    } else if (d) {
      return false;  // not an int: the symbolic says what is wrong
    } else {
      if (cfg_.opset < 13)
        fail(n, "squeeze of a dim computed at run time needs Squeeze's axes input (opset 13)");
      dim = tensor_of(n->input(1));
      dim = emit("Cast", {dim}, {{"to", static_cast<int64_t>(ir::DType::Int64)}}, 1, "")->output();
    }
  } else if (rank_known) {
    bool all_known = true;
    for (const ir::Dim& d : *t->shape) all_known = all_known && d.value.has_value();
    if (all_known) return false;
  }
  current_ = n;
  if (cfg_.opset < 11)
    fail(n,
         "squeeze of a dim whose size varies (it follows a dynamic axis or the data) makes the "
         "result's rank vary; tonnx exports it with If, from opset 11");
  ir::Value* x = tensor_of(in);
  if (!x) fail(n, "the input is None");
  ir::Value* out = nullptr;
  if (!dim) {  // Squeeze without axes: every dim of size 1, at run time
    out = emit("Squeeze", {x}, {}, 1, "")->output();
  } else {
    ir::Value* shape = emit("Shape", {x}, {}, 1, "")->output();
    ir::Value* size = emit("Gather", {shape, dim}, {{"axis", int64_t{0}}}, 1, "")->output();
    ir::Value* one = constant(at::scalar_tensor(int64_t{1}, at::kLong));
    ir::Value* cond = emit("Equal", {size, one}, {}, 1, "")->output();
    std::vector<ir::Attr> branches;
    for (int k = 0; k < 2; ++k) {
      graphs_.push_back(std::make_shared<ir::Graph>());
      env_.emplace_back();
      lists_.emplace_back();
      ir::Value* r;
      if (k == 1) {
        r = emit("Identity", {x}, {}, 1, "")->output();
      } else if (cfg_.opset >= 13) {
        ir::Value* axes =
            emit("Unsqueeze", {dim, constant(at::tensor(std::vector<int64_t>{0}))}, {}, 1, "")
                ->output();
        r = emit("Squeeze", {x, axes}, {}, 1, "")->output();
      } else {  // opset 11-12: axes is an attribute, so the dim is a constant here
        r = emit("Squeeze", {x}, {{"axes", ir::Ints{constant_ivalue(n->input(1))->toInt()}}}, 1, "")
                ->output();
      }
      if (rank_known) {  // ONNX's checker wants a rank on the branches' outputs
        size_t rank = t->shape->size() - (k == 0 ? 1 : 0);
        r->set_type(ir::TensorType{t->dtype, std::vector<ir::Dim>(rank)});
      }
      const char* name = k == 0 ? "then_branch" : "else_branch";
      branches.push_back({name, finish_block({r}, name)});
    }
    out = emit("If", {cond}, std::move(branches), 1, "")->output();
  }
  if (t) out->set_type(ir::TensorType{t->dtype, std::nullopt});
  bind(n->output(), out);
  rank_varies_.insert(n->output());
  return true;
}

void Converter::propagate_varying_rank(const jit::Node* n) {
  bool varies = false;
  for (const jit::Value* in : n->inputs()) varies = varies || rank_varies(in);
  for (const jit::Block* b : n->blocks())
    for (const jit::Value* out : b->outputs()) varies = varies || rank_varies(out);
  if (!varies) return;
  for (const jit::Value* out : n->outputs()) {
    rank_varies_.insert(out);
    if (ir::Value* v = find_env(out); v && v->type() && v->type()->shape)
      v->set_type(ir::TensorType{v->type()->dtype, std::nullopt});
  }
}

}  // namespace tonnx::detail
