// The ATen domain (org.pytorch.aten): runs what the exporter wrote with
// operator_export_type=ONNX_ATEN_FALLBACK (op ATen, attributes operator / overload_name) or
// ONNX_FALLTHROUGH (op named after the aten op), by calling the aten operator through
// LibTorch's dispatcher. Tensor arguments are the node's inputs in schema order (an empty
// input is an absent optional tensor); other arguments are attributes named after the
// schema's arguments, and absent ones take the schema's defaults.
#include <ATen/core/dispatch/Dispatcher.h>

#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

bool is_tensor_arg(const c10::Argument& a) {
  const auto& t = a.type();
  if (t->kind() == c10::TypeKind::TensorType) return true;
  if (auto opt = t->cast<c10::OptionalType>())
    return opt->getElementType()->kind() == c10::TypeKind::TensorType;
  return false;
}

c10::IValue attr_to_ivalue(const ir::Node& n, const c10::Argument& a, const ir::AttrValue& v) {
  c10::TypePtr t = a.type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  using K = ir::AttrValue::Kind;
  switch (t->kind()) {
    case c10::TypeKind::BoolType:
      return c10::IValue(v.i() != 0);
    case c10::TypeKind::IntType:
      return c10::IValue(v.i());
    case c10::TypeKind::FloatType:
      return c10::IValue(static_cast<double>(v.kind() == K::Int ? v.i() : v.f()));
    case c10::TypeKind::NumberType:
      return v.kind() == K::Int ? c10::IValue(v.i()) : c10::IValue(static_cast<double>(v.f()));
    case c10::TypeKind::StringType:
      return c10::IValue(v.s());
    case c10::TypeKind::ListType: {
      if (v.kind() == K::Ints) return c10::IValue(v.ints());
      if (v.kind() == K::Floats) {
        std::vector<double> d(v.floats().begin(), v.floats().end());
        return c10::IValue(d);
      }
      break;
    }
    default:
      break;
  }
  kernel_fail(n, "attribute '" + a.name() + "' cannot be passed as " + a.type()->annotation_str());
}

KernelFactory aten_kernel(bool from_attr) {
  return [from_attr](const KernelSpec& s) -> Kernel {
    const ir::Node& n = s.node;
    std::string op = from_attr ? n.attr_s("operator", "") : n.op_type();
    std::string overload = from_attr ? n.attr_s("overload_name", "") : "";
    if (op.empty()) kernel_fail(n, "has no 'operator' attribute naming the aten op");
    auto handle = c10::Dispatcher::singleton().findSchema({"aten::" + op, overload});
    if (!handle) {
      // FALLTHROUGH nodes carry no overload name: take the first schema of that name.
      for (const auto& name : c10::Dispatcher::singleton().getAllOpNames())
        if (name.name == "aten::" + op) {
          handle = c10::Dispatcher::singleton().findSchema(name);
          break;
        }
    }
    if (!handle)
      kernel_fail(
          n, "LibTorch has no operator aten::" + op + (overload.empty() ? "" : "." + overload));
    c10::OperatorHandle h = *handle;
    const c10::FunctionSchema& schema = h.schema();
    return [h, &n, &schema](const Tensors& in) -> Tensors {
      torch::jit::Stack stack;
      size_t next = 0;
      for (const c10::Argument& a : schema.arguments()) {
        if (is_tensor_arg(a)) {
          at::Tensor t = next < in.size() ? in[next] : at::Tensor();
          ++next;
          stack.emplace_back(t.defined() ? c10::IValue(t) : c10::IValue());
        } else if (const ir::AttrValue* v = n.attr(a.name())) {
          stack.push_back(attr_to_ivalue(n, a, *v));
        } else if (a.default_value()) {
          stack.push_back(*a.default_value());
        } else {
          stack.emplace_back();  // None
        }
      }
      h.callBoxed(stack);
      Tensors out;
      for (const auto& v : stack) {
        if (v.isTensor())
          out.push_back(v.toTensor());
        else if (v.isTensorList())
          for (const auto& t : v.toTensorVector()) out.push_back(t);
        else if (v.isInt())
          out.push_back(at::scalar_tensor(v.toInt(), at::kLong));
        else if (v.isDouble())
          out.push_back(at::scalar_tensor(v.toDouble(), at::kDouble));
        else if (v.isBool())
          out.push_back(at::scalar_tensor(v.toBool(), at::kBool));
      }
      return out;
    };
  };
}

TONNX_KERNEL_DOMAIN("ATen", "org.pytorch.aten", 1, kAnyOpset, aten_kernel(true));

}  // namespace

// ONNX_FALLTHROUGH nodes are named after their aten op: served by the same kernel.
const KernelFactory* aten_fallthrough_kernel() {
  static const KernelFactory f = aten_kernel(false);
  return &f;
}

}  // namespace tonnx::backend
