// Complex tensors in the converter (converter.h). A complex value is bound to a real tensor with
// a trailing dim of 2 (real, imaginary) and recorded in complex_; jit_type describes complex
// tensors that way too. Every op that takes or makes a complex tensor goes to its complex rule
// (src/symbolic/complex.cpp); an op without one fails the export instead of computing on the
// pairs as if they were real numbers.
#include "export/converter.h"
#include "symbolic/complex.h"

namespace tonnx::detail {
namespace jit = torch::jit;

bool is_complex_type(const jit::Value* v) {
  if (v->type()->kind() == c10::TypeKind::ComplexType) return true;
  auto tt = v->type()->cast<c10::TensorType>();
  return tt && tt->scalarType() && c10::isComplexType(*tt->scalarType());
}

bool Converter::is_complex(const jit::Value* v) const {
  if (is_complex_type(v)) return true;
  ir::Value* e = find_env(v);
  return e && is_complex_value(e);
}

bool Converter::convert_complex(const jit::Node* n) {
  bool complex = false;
  for (const jit::Value* in : n->inputs()) {
    complex = complex || is_complex(in);
    if (in->node()->kind() == c10::prim::ListConstruct && is_tensor_list_type(in->type()))
      for (const jit::Value* e : in->node()->inputs()) complex = complex || is_complex(e);
  }
  for (const jit::Value* out : n->outputs()) complex = complex || is_complex_type(out);
  if (!complex) return false;
  const SymbolicFn* rule = sym::complex_rule(n->kind().toQualString());
  if (!rule)
    fail(n,
         "this op takes or makes a complex tensor, and it has no complex rule: tonnx exports "
         "complex tensors as pairs of real and imaginary parts through the ops listed in "
         "docs/complex.md; compute on torch.view_as_real(x) here instead");
  Outputs outs = call_symbolic(n, *rule);
  for (size_t k = 0; k < n->outputs().size() && k < outs.values.size(); ++k)
    if (is_complex_type(n->output(k)) && outs.values[k] && !is_complex_value(outs.values[k]))
      fail(n, "internal: the complex rule returned a real value for complex output " +
                  std::to_string(k));
  bind_outputs(n, outs);
  return true;
}

}  // namespace tonnx::detail

namespace tonnx {

bool SymbolicContext::is_complex(size_t i) const {
  return i < num_inputs() && c_.is_complex(node_->input(i));
}

bool SymbolicContext::is_complex_value(const ir::Value* v) const {
  return v && c_.is_complex_value(v);
}

ir::Value* SymbolicContext::complex_result(ir::Value* v) { return c_.mark_complex(v); }

}  // namespace tonnx
