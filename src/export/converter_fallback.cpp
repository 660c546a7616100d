// Nodes without a symbolic under ONNX_ATEN_FALLBACK (and ONNX_FALLTHROUGH): an ATen node of
// domain org.pytorch.aten carrying the aten op and its constant arguments
// (Converter::fallback_node).
#include <torch/csrc/jit/ir/constants.h>

#include <sstream>

#include "export/converter.h"

namespace tonnx::detail {
namespace jit = torch::jit;

void Converter::fallback_node(const jit::Node* n, bool aten_node) {
  std::vector<ir::Value*> inputs;
  std::vector<ir::Attr> attrs;
  std::string name = n->kind().toUnqualString();
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    const jit::Value* in = n->input(i);
    if (in->type()->cast<c10::TensorType>()) {
      inputs.push_back(tensor_of(in));
      continue;
    }
    // Non-tensor arguments become attributes named after the schema's arguments.
    std::string arg = "arg" + std::to_string(i);
    if (auto* schema = n->maybeSchema()) arg = schema->arguments().at(i).name();
    // A Tensor[] or Tensor?[] (cat, stack, index, einsum): its elements are inputs, in order
    // (an empty name for a None), and the attribute named after the argument holds how many.
    if (auto lt = in->type()->cast<c10::ListType>()) {
      c10::TypePtr elem = lt->getElementType();
      if (auto opt = elem->cast<c10::OptionalType>()) elem = opt->getElementType();
      if (elem->kind() == c10::TypeKind::TensorType) {
        if (in->node()->kind() != c10::prim::ListConstruct)
          fail(n, "ATen fallback needs the tensor list " + arg +
                      " built in the graph (prim::ListConstruct), not computed by " +
                      in->node()->kind().toQualString());
        for (const jit::Value* e : in->node()->inputs())
          inputs.push_back(e->type()->kind() == c10::TypeKind::NoneType ? nullptr : tensor_of(e));
        attrs.push_back({arg, static_cast<int64_t>(in->node()->inputs().size())});
        continue;
      }
    }
    auto iv = constant_ivalue(in);
    if (!iv) {
      inputs.push_back(tensor_of(in));
      continue;
    }
    if (iv->isNone()) {
      // An absent optional tensor keeps its input slot (empty name), so that the inputs
      // line up with the schema's tensor arguments; other Nones take their default.
      auto* schema = n->maybeSchema();
      if (schema && schema->arguments().at(i).type()->kind() == c10::TypeKind::OptionalType &&
          schema->arguments().at(i).type()->cast<c10::OptionalType>()->getElementType()->kind() ==
              c10::TypeKind::TensorType)
        inputs.push_back(nullptr);
      continue;
    }
    if (iv->isInt())
      attrs.push_back({arg, iv->toInt()});
    else if (iv->isDouble())
      attrs.push_back({arg, iv->toDouble()});
    else if (iv->isBool())
      attrs.push_back({arg, int64_t{iv->toBool()}});
    else if (iv->isIntList())
      attrs.push_back({arg, ir::Ints(iv->toIntVector())});
    else if (iv->isString())
      attrs.push_back({arg, iv->toStringRef()});
    else if (iv->isTensor())
      inputs.push_back(tensor_of(in));
    else
      fail(n, "ATen fallback cannot carry argument " + arg + " of type " +
                  in->type()->annotation_str());
  }
  std::string op_type = name;
  if (aten_node) {
    op_type = "ATen";
    attrs.insert(attrs.begin(), {"operator", name});
    std::string overload = n->maybeSchema() ? n->maybeSchema()->overload_name() : "";
    attrs.insert(attrs.begin() + 1, {"overload_name", overload});
  }
  uses_aten_domain_ = true;
  ir::Node* node = emit(op_type, inputs, std::move(attrs), n->outputs().size(), "org.pytorch.aten");
  std::vector<ir::Value*> outs(node->outputs().begin(), node->outputs().end());
  bind_outputs(n, outs);
}

}  // namespace tonnx::detail
