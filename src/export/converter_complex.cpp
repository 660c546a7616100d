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
  bool complex = false, in_list = false;
  for (const jit::Value* in : n->inputs()) {
    complex = complex || is_complex(in);
    if (in->node()->kind() == c10::prim::ListConstruct && is_tensor_list_type(in->type()))
      for (const jit::Value* e : in->node()->inputs()) in_list = in_list || is_complex(e);
  }
  for (const jit::Value* out : n->outputs()) complex = complex || is_complex_type(out);
  // Indexing a known list moves its (marked) values: the ordinary path binds them as they are.
  bool list_op = n->kind() == c10::aten::__getitem__ || n->kind() == c10::aten::len ||
                 (n->kind() == c10::aten::slice && is_tensor_list_type(n->input(0)->type()));
  if (list_op) {
    // Elements of a list that changes at run time come out of SequenceAt, unmarked.
    if (complex && is_sequence(n->input(0)))
      fail(n,
           "a list of complex tensors that changes at run time (an ONNX sequence) is not "
           "supported; keep torch.view_as_real(x) in the list instead");
    return false;
  }
  if (!complex && !in_list) return false;
  if (cfg_.opset < 11)
    fail(n,
         "complex tensors need opset 11 (negative axes of Gather, Slice and Concat); the FFT "
         "needs opset 17 (DFT)");
  const SymbolicFn* rule = sym::complex_rule(n->kind().toQualString());
  if (!rule)
    fail(n,
         "this op takes or makes a complex tensor, and it has no complex rule: tonnx exports "
         "complex tensors as pairs of real and imaginary parts through the ops listed in "
         "docs/complex.md; compute on torch.view_as_real(x) here instead");
  Outputs outs = call_symbolic(n, *rule);
  for (size_t k = 0; k < n->outputs().size() && k < outs.values.size(); ++k) {
    ir::Value* v = outs.values[k];
    // A real result (abs, imag) where the types say complex (a branch the example inputs did not
    // take is typed from its inputs): not the pairs' shape.
    if (v && !v->type() && is_complex_type(n->output(k)) && !is_complex_value(v))
      if (auto t = jit_type(n->output(k))) v->set_type(ir::TensorType{t->dtype, std::nullopt});
  }
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
