// The TorchScript frontend's first stages (script_passes.h): the module and its forward
// graph, the example arguments bound to its signature, and its parameters.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <optional>
#include <unordered_map>

#include "export/attr_resolver.h"
#include "export/script_graph.h"
#include "export/script_passes.h"

namespace tonnx::detail {
namespace jit = torch::jit;

namespace {

// TorchScript errors end with the Python-style message after a traceback.
std::string last_line(const std::string& s) {
  size_t end = s.find_last_not_of("\n ");
  if (end == std::string::npos) return s;
  size_t start = s.rfind('\n', end);
  return first_line(s.substr(start == std::string::npos ? 0 : start + 1,
                             end + 1 - (start == std::string::npos ? 0 : start + 1)));
}

// "__torch__.torchvision.models.resnet.___torch_mangle_3.BasicBlock" -> "BasicBlock".
std::string class_short_name(const c10::ClassTypePtr& t) {
  if (!t || !t->name()) return "Module";
  return t->name()->name();
}

// Parameters then buffers of each module, modules in pre-order: Python's state_dict order,
// which the C++ path's TracedParam list also follows. Shared tensors keep their first name.
void collect_params(const c10::intrusive_ptr<c10::ivalue::Object>& obj, const std::string& prefix,
                    std::vector<ScriptParam>& out,
                    std::unordered_map<const c10::TensorImpl*, size_t>& index) {
  const c10::ClassTypePtr& type = obj->type();
  auto add = [&](size_t slot) {
    const c10::IValue& v = obj->getSlot(slot);
    if (!v.isTensor() || !v.toTensor().defined()) return;
    const at::Tensor& t = v.toTensor();
    if (index.count(t.unsafeGetTensorImpl())) return;
    index[t.unsafeGetTensorImpl()] = out.size();
    out.push_back({prefix + type->getAttributeName(slot), t});
  };
  for (size_t i = 0; i < type->numAttributes(); ++i)
    if (type->is_parameter(i)) add(i);
  for (size_t i = 0; i < type->numAttributes(); ++i)
    if (type->is_buffer(i)) add(i);
  for (size_t i = 0; i < type->numAttributes(); ++i) {
    auto sub = type->getAttribute(i)->cast<c10::ClassType>();
    const c10::IValue& v = obj->getSlot(i);
    if (sub && sub->is_module() && v.isObject())
      collect_params(v.toObject(), prefix + type->getAttributeName(i) + ".", out, index);
  }
}

// Module scopes from the call stacks Inline leaves on each node:
// ResNet/Sequential[layer1]/BasicBlock[0]/Conv2d[conv1].
void set_scopes(jit::Block* block, const jit::ScopePtr& root) {
  for (jit::Node* n : block->nodes()) {
    jit::ScopePtr scope = root;
    if (auto cs = n->callstack()) {
      for (const auto& entry : (*cs)->vec()) {
        const auto& info = std::get<jit::kModuleInstanceInfo>(entry);
        if (!info) continue;
        std::string inst = info->instance_name();
        // Call stacks name the root "self" frame too; it is the root scope itself.
        if (inst.empty() || inst == "self") continue;
        scope = scope->push(
            c10::Symbol::scope(class_short_name(info->class_type()) + "[" + inst + "]"));
      }
    }
    n->setScope(scope);
    for (jit::Block* b : n->blocks()) set_scopes(b, root);
  }
}

void flatten_ivalue(const c10::IValue& v, std::vector<torch::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten_ivalue(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) flatten_ivalue(e, out);
  } else if (v.isGenericDict()) {  // values in insertion order, as the export returns them
    for (const auto& kv : v.toGenericDict()) flatten_ivalue(kv.value(), out);
  } else if (v.isInt()) {
    out.push_back(at::scalar_tensor(v.toInt(), at::kLong));
  } else if (v.isDouble()) {
    out.push_back(at::scalar_tensor(v.toDouble(), at::kFloat));
  } else if (v.isBool()) {
    out.push_back(at::scalar_tensor(v.toBool(), at::kBool));
  } else {
    throw ExportError("forward returns a " + v.tagKind() +
                      "; tonnx exports tensors, numbers, and tuples, lists or dicts of them");
  }
}

std::string signature(const c10::FunctionSchema& schema) {
  const auto& args = schema.arguments();
  std::string sig = "forward(";
  for (size_t i = 1; i < args.size(); ++i)
    sig += (i > 1 ? ", " : "") + args[i].name() + ": " + args[i].type()->annotation_str();
  return sig + ")";
}

bool supported_input(const c10::IValue& v) {
  if (v.isTensor() || v.isNone() || v.isInt() || v.isDouble() || v.isBool() || v.isString() ||
      v.isIntList() || v.isDoubleList() || v.isBoolList())
    return true;
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (!t.defined()) return false;
    return true;
  }
  if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements())
      if (!supported_input(e)) return false;
    return true;
  }
  return false;
}

bool has_tensor(const c10::IValue& v) {
  if (v.isTensor()) return true;
  if (v.isTensorList()) return !v.toTensorVector().empty();
  if (v.isTuple())
    for (const auto& e : v.toTupleRef().elements())
      if (has_tensor(e)) return true;
  return false;
}

// The graph's value for example argument `v`: a tensor is a new graph input at `pos` (then
// pos + 1...); a tuple or list of tensors is built from new inputs, one per tensor in order
// (torch.onnx flattens them the same way); anything else is a constant.
jit::Value* structured_input(jit::Graph& g, const c10::IValue& v, size_t& pos,
                             std::vector<torch::Tensor>& tensors) {
  if (v.isTensor()) {
    jit::Value* in = g.insertInput(pos++);
    in->setType(c10::TensorType::create(v.toTensor()));
    tensors.push_back(v.toTensor());
    return in;
  }
  if (v.isTensorList()) {
    std::vector<jit::Value*> items;
    for (const at::Tensor& t : v.toTensorVector())
      items.push_back(structured_input(g, t, pos, tensors));
    return g.insertNode(g.createList(c10::TensorType::get(), items))->output();
  }
  if (v.isTuple()) {
    std::vector<jit::Value*> items;
    for (const auto& e : v.toTupleRef().elements())
      items.push_back(structured_input(g, e, pos, tensors));
    return g.insertNode(g.createTuple(items))->output();
  }
  return g.insertConstant(v);
}

// Inputs must match forward's signature: one value per argument after self, of its type.
// Tensors become graph inputs; numbers, bools, strings, None and lists of numbers are
// constants of the export (as torch.onnx does with non-tensor arguments).
void check_inputs(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& inputs) {
  const auto& args = schema.arguments();
  size_t n_args = args.empty() ? 0 : args.size() - 1;  // without self
  size_t n_required = 0;
  for (size_t i = 1; i < args.size(); ++i)
    if (!args[i].default_value()) n_required = i;
  const std::string sig = signature(schema);
  if (inputs.size() < n_required || inputs.size() > n_args)
    throw ExportError("the module's " + sig + " takes " + std::to_string(n_args) +
                      " input(s), but " + std::to_string(inputs.size()) +
                      " example input(s) were given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& a = args[i + 1];
    const c10::IValue& v = inputs[i];
    std::string which = "example input " + std::to_string(i) + " ('" + a.name() + "')";
    if (v.isTensor() && !v.toTensor().defined())
      throw ExportError(which + " is an undefined tensor");
    if (!v.type()->isSubtypeOf(*a.type()))
      throw ExportError(which + " is " + v.type()->annotation_str() + ", but the module's " + sig +
                        " takes " + a.type()->annotation_str() + " there");
    if (!supported_input(v))
      throw ExportError(which + " is " + v.type()->annotation_str() +
                        "; tonnx takes tensors (alone or in tuples and lists) as graph inputs and "
                        "numbers, bools, strings, None and lists of numbers as constants of the "
                        "export");
  }
}

std::string describe_inputs(const std::vector<c10::IValue>& inputs) {
  std::string out;
  for (const auto& v : inputs) {
    out += out.empty() ? "" : ", ";
    if (v.isTensor())
      out +=
          std::string(c10::toString(v.toTensor().scalar_type())) + c10::str(v.toTensor().sizes());
    else
      out += v.type()->annotation_str();
  }
  return out;
}

const c10::FunctionSchema& forward_schema(ScriptExport& s) {
  return s.m.get_method("forward").function().getSchema();
}

}  // namespace

ScriptExport load_forward(jit::Module& module, const std::vector<c10::IValue>& args,
                          const ExportOptions& o) {
  // A new instance over the same tensors: eval() and the exporter's changes do not reach the
  // caller's module, and the weights are not copied. Modules holding objects of custom
  // classes (quantized packed weights) are copied whole: those objects do not survive sharing.
  bool objects = false;
  for (const auto& a : module.named_attributes(/*recurse=*/true))
    objects = objects || (a.value.isObject() && !a.value.toObject()->type()->is_module());
  ScriptExport s(o, args, module.clone(/*inplace=*/!objects));
  if (o.training == TrainingMode::EVAL) s.m.eval();
  if (o.training == TrainingMode::TRAINING) s.m.train(true);
  auto forward = s.m.find_method("forward");
  if (!forward) throw ExportError("the TorchScript module has no forward method to export");
  check_inputs(forward->function().getSchema(), args);
  // The tensors, also those in tuples and lists, are the graph's inputs.
  for (const auto& v : args) {
    if (v.isTensor()) s.inputs.push_back(v.toTensor());
    if (!v.isTensor() && has_tensor(v)) {
      std::vector<at::Tensor> flat;
      flatten_ivalue(v, flat);
      s.inputs.insert(s.inputs.end(), flat.begin(), flat.end());
    }
  }
  s.g = forward->graph()->copy();
  jit::Inline(*s.g);
  // Before any constant folding: a folded aten::to of a real 0-dim tensor looks the same.
  numbers_as_scalars(*s.g, s.g->block());
  return s;
}

void run_forward(ScriptExport& s) {
  torch::NoGradGuard no_grad;
  // forward may write into its inputs: it runs on copies, the caller's stay as they were.
  std::vector<c10::IValue> args;
  for (const auto& v : s.args) args.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
  c10::IValue out;
  try {
    // On a deep copy when forward may write into the module's state (self.steps += 1, a
    // buffer updated in place): the graph must start from the state the caller's module had.
    out = (may_write_state(s.g->block()) ? s.m.deepcopy() : s.m).forward(args);
  } catch (const c10::Error& e) {
    // LibTorch's message without its C++ backtrace.
    throw ExportError("the module's forward failed on the example inputs (" +
                      describe_inputs(s.args) + "): " + last_line(e.what_without_backtrace()) +
                      "; give inputs of the dtypes and shapes forward expects");
  } catch (const std::exception& e) {
    throw ExportError("the module's forward failed on the example inputs (" +
                      describe_inputs(s.args) + "): " + last_line(e.what()) +
                      "; give inputs of the dtypes and shapes forward expects");
  }
  flatten_ivalue(out, s.eager_outputs);
}

void bind_arguments(ScriptExport& s) {
  jit::Graph& g = *s.g;
  const c10::FunctionSchema& schema = forward_schema(s);
  for (size_t i = g.inputs().size() - 1; i >= 1; --i) {
    const auto& arg = schema.arguments()[i];
    std::optional<c10::IValue> c;
    if (i > s.args.size())
      c = *arg.default_value();
    else if (!s.args[i - 1].isTensor())
      c = s.args[i - 1];
    if (!c) continue;
    jit::WithInsertPoint guard(g.block()->nodes().front());
    size_t pos = i + 1;
    std::vector<torch::Tensor> unused;
    jit::Value* value =
        has_tensor(*c) ? structured_input(g, *c, pos, unused) : g.insertConstant(*c);
    g.inputs()[i]->replaceAllUsesWith(value);
    g.eraseInput(i);
  }
}

void bind_parameters(ScriptExport& s) {
  jit::Graph& g = *s.g;
  std::unordered_map<const c10::TensorImpl*, size_t> index;
  collect_params(s.m._ivalue(), "", s.params, index);
  size_t first_param = g.inputs().size();
  for (const auto& p : s.params) {
    jit::Value* in = g.addInput(p.name);
    in->setType(c10::TensorType::create(p.tensor));
  }
  jit::Value* self = g.inputs()[0];
  AttrResolver resolver(g, self, s.m._ivalue(), index, first_param);
  resolver.run(g.block());
  resolver.remove_dead();
  if (self->hasUses()) {
    const jit::Node* user = self->uses()[0].user;
    throw ExportError("the module's forward uses self in " +
                      std::string(user->kind().toQualString()) +
                      " (not an attribute read); tonnx exports modules whose forward reads "
                      "parameters, buffers and constants of self");
  }
  g.eraseInput(0);
  for (size_t i = 0; i < s.inputs.size(); ++i)
    g.inputs()[i]->setType(c10::TensorType::create(s.inputs[i]));
  set_scopes(g.block(), c10::make_intrusive<jit::Scope>()->push(
                            c10::Symbol::scope(class_short_name(s.m.type()))));
}

}  // namespace tonnx::detail
