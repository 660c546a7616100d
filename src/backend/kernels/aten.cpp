// The ATen domain (org.pytorch.aten): runs what the exporter wrote with
// operator_export_type=ONNX_ATEN_FALLBACK (op ATen, attributes operator / overload_name) or
// ONNX_FALLTHROUGH (op named after the aten op), by calling the aten operator through
// LibTorch's dispatcher. Tensor arguments are the node's inputs in schema order (an empty
// input is an absent optional tensor); other arguments are attributes named after the
// schema's arguments, and absent ones take the schema's defaults.
#include <ATen/core/dispatch/Dispatcher.h>

#include <set>

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

// Tensor[] or Tensor?[]: exported as that many inputs, the count in the argument's attribute.
bool is_tensor_list_arg(const c10::Argument& a, bool* optional_elems) {
  auto lt = a.type()->cast<c10::ListType>();
  if (!lt) return false;
  c10::TypePtr e = lt->getElementType();
  *optional_elems = false;
  if (auto opt = e->cast<c10::OptionalType>()) {
    e = opt->getElementType();
    *optional_elems = true;
  }
  return e->kind() == c10::TypeKind::TensorType;
}

c10::IValue attr_to_ivalue(const ir::Node& n, const c10::Argument& a, const ir::AttrValue& v) {
  c10::TypePtr t = a.type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  using K = ir::AttrValue::Kind;
  switch (t->kind()) {
    case c10::TypeKind::BoolType:
      return c10::IValue(v.i() != 0);
    case c10::TypeKind::IntType: {
      // dtype / layout / memory_format are enums passed as ints: in range, or LibTorch would
      // index its type tables with them.
      c10::TypePtr real = a.real_type();
      if (auto opt = real->cast<c10::OptionalType>()) real = opt->getElementType();
      int64_t limit = -1;
      if (real->kind() == c10::TypeKind::ScalarTypeType)
        limit = static_cast<int64_t>(at::ScalarType::NumOptions);
      if (real->kind() == c10::TypeKind::LayoutType)
        limit = static_cast<int64_t>(at::Layout::NumOptions);
      if (real->kind() == c10::TypeKind::MemoryFormatType)
        limit = static_cast<int64_t>(at::MemoryFormat::NumOptions);
      if (limit >= 0 && (v.i() < 0 || v.i() >= limit))
        kernel_fail(n, "attribute '" + a.name() + "' = " + std::to_string(v.i()) + " is not a " +
                           real->annotation_str());
      return c10::IValue(v.i());
    }
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

// Ops a model file may not call: they read files (from_file), skip LibTorch's own checks
// (_unsafe, sparse constructors, private _ops), change a tensor's storage or strides in place
// (set_, resize_, as_strided), or write into their inputs (shared initializers): a hostile
// model must not reach them. Schemas that mutate an argument are refused too.
std::string refused_aten_op(const std::string& op, const c10::FunctionSchema& schema) {
  static const std::set<std::string> kNames = {"from_file",
                                               "as_strided",
                                               "as_strided_scatter",
                                               "set",
                                               "resize",
                                               "resize_as",
                                               "empty_strided",
                                               "sparse_coo_tensor",
                                               "sparse_csr_tensor",
                                               "sparse_compressed_tensor",
                                               "_sparse_coo_tensor_unsafe",
                                               "data_ptr",
                                               "storage_offset",
                                               "set_data",
                                               "_local_scalar_dense",
                                               "lift_fresh"};
  if (op.empty() || op[0] == '_') return "is private to LibTorch";
  if (op.back() == '_') return "writes into its input";
  if (op.find("unsafe") != std::string::npos) return "skips LibTorch's checks";
  if (kNames.count(op)) return "reads files or memory outside tensors";
  for (const c10::Argument& a : schema.arguments())
    if (a.alias_info() && a.alias_info()->isWrite())
      return "writes into its argument '" + a.name() + "'";
  return "";
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
    std::string refused = refused_aten_op(op, schema);
    if (!refused.empty())
      kernel_fail(n, "aten::" + op + " " + refused +
                         "; tonnx's backend does not run it from a "
                         "model file");
    // Inputs the tensor arguments take: one each, and a list's count from its attribute.
    size_t wanted = 0;
    for (const c10::Argument& a : schema.arguments()) {
      bool optional_elems = false;
      if (is_tensor_arg(a)) {
        ++wanted;
      } else if (is_tensor_list_arg(a, &optional_elems)) {
        const ir::AttrValue* count = n.attr(a.name());
        if (!count || count->kind() != ir::AttrValue::Kind::Int || count->i() < 0 ||
            count->i() > static_cast<int64_t>(n.inputs().size()))
          kernel_fail(n, "the tensor list argument '" + a.name() + "' of aten::" + op +
                             " needs an int attribute '" + a.name() +
                             "' with its length (at most the node's " +
                             std::to_string(n.inputs().size()) + " inputs)");
        wanted += static_cast<size_t>(count->i());
      }
    }
    if (n.inputs().size() > wanted)
      kernel_fail(n, "has " + std::to_string(n.inputs().size()) + " inputs, but aten::" + op +
                         "'s tensor arguments take at most " + std::to_string(wanted));
    return [h, &n, &schema](const Tensors& in) -> Tensors {
      torch::jit::Stack stack;
      size_t next = 0;
      for (const c10::Argument& a : schema.arguments()) {
        bool optional_elems = false;
        if (is_tensor_list_arg(a, &optional_elems)) {
          int64_t count = n.attr(a.name())->i();
          if (optional_elems) {
            c10::List<c10::optional<at::Tensor>> list;
            for (int64_t k = 0; k < count; ++k, ++next) {
              at::Tensor t = next < in.size() ? in[next] : at::Tensor();
              list.push_back(t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt);
            }
            stack.emplace_back(list);
          } else {
            c10::List<at::Tensor> list;
            for (int64_t k = 0; k < count; ++k, ++next) {
              if (next >= in.size() || !in[next].defined())
                kernel_fail(n, "element " + std::to_string(k) + " of the tensor list '" + a.name() +
                                   "' is missing");
              list.push_back(in[next]);
            }
            stack.emplace_back(list);
          }
        } else if (is_tensor_arg(a)) {
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
