// The TorchScript frontend: a loaded torch::jit::Module's forward graph, inlined, with its
// attribute reads (prim::GetAttr on self) turned into parameter inputs named by attribute
// path, module scopes from the inlined call stacks, and tensor types observed by running
// the graph on the example inputs. The result goes through the same pipeline as a C++ trace.
#include "tonnx/torchscript.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/script.h>

#include <dlfcn.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "export/attr_resolver.h"
#include "export/functionalize.h"
#include "export/pipeline.h"
#include "export/script_graph.h"
#include "export/script_storages.h"
#include "export/specialize.h"
#include "export/trace.h"
#include "passes/passes.h"
#include "tonnx/check.h"

namespace tonnx {
namespace fs = std::filesystem;
namespace jit = torch::jit;

namespace {

// aten::dim of a graph input: its rank, which dynamic axes never change.
void fold_input_ranks(jit::Graph& g) {
  for (jit::Value* in : g.inputs()) {
    auto t = in->type()->cast<c10::TensorType>();
    if (!t || !t->dim()) continue;
    for (const jit::Use& u : in->uses()) {
      jit::Node* n = u.user;
      if (n->kind() != c10::aten::dim || n->inputs().size() != 1) continue;
      jit::WithInsertPoint guard(n);
      n->output()->replaceAllUsesWith(g.insertConstant(static_cast<int64_t>(*t->dim())));
    }
  }
}

// `v is None` / `v is not None` on a tuple or list, or on a tensor given as a graph input
// (never None): a constant, so the branch it guards (F.embedding_bag's 2-D path when offsets
// are given) is never converted.
void fold_known_none_checks(jit::Block* b) {
  for (jit::Node* n : b->nodes()) {
    for (jit::Block* sub : n->blocks()) fold_known_none_checks(sub);
    bool is = n->kind() == c10::aten::__is__, isnot = n->kind() == c10::aten::__isnot__;
    if ((!is && !isnot) || n->inputs().size() != 2) continue;
    const jit::Value* v = n->input(0);
    c10::TypeKind k = v->type()->kind();
    bool known = k == c10::TypeKind::TupleType || k == c10::TypeKind::ListType ||
                 (k == c10::TypeKind::TensorType && v->node()->kind() == c10::prim::Param &&
                  v->node()->owningBlock() == v->owningGraph()->block());
    if (!known || n->input(1)->type()->kind() != c10::TypeKind::NoneType) continue;
    jit::WithInsertPoint guard(n);
    n->output()->replaceAllUsesWith(n->owningGraph()->insertConstant(isnot));
  }
}

// prim::unchecked_cast of a tuple whose input already has the target type: uses of it read
// the input.
void remove_identity_casts(jit::Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it;
    ++it;
    for (jit::Block* sub : n->blocks()) remove_identity_casts(sub);
    if (n->kind() != c10::prim::unchecked_cast) continue;
    if (n->input()->type()->kind() != c10::TypeKind::TupleType) continue;
    if (!n->input()->type()->isSubtypeOf(*n->output()->type())) continue;
    n->output()->replaceAllUsesWith(n->input());
    n->destroy();
  }
}

using detail::first_line;

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

struct ParamSlot {
  std::string name;
  at::Tensor tensor;
};

// Parameters then buffers of each module, modules in pre-order: Python's state_dict order,
// which the C++ path's TracedParam list also follows. Shared tensors keep their first name.
void collect_params(const c10::intrusive_ptr<c10::ivalue::Object>& obj, const std::string& prefix,
                    std::vector<ParamSlot>& out,
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

detail::Exported run_export(torch::jit::Module& module, const std::vector<c10::IValue>& args_in,
                            const ExportOptions& o) {
  detail::validate_options(o);
  OnnxSchemasLoading schemas;  // for the check, while the graph is prepared
  // A new instance over the same tensors: eval() and the exporter's changes do not reach the
  // caller's module, and the weights are not copied. Modules holding objects of custom
  // classes (quantized packed weights) are copied whole: those objects do not survive sharing.
  bool objects = false;
  for (const auto& a : module.named_attributes(/*recurse=*/true))
    objects = objects || (a.value.isObject() && !a.value.toObject()->type()->is_module());
  jit::Module m = module.clone(/*inplace=*/!objects);
  if (o.training == TrainingMode::EVAL) m.eval();
  if (o.training == TrainingMode::TRAINING) m.train(true);
  auto forward = m.find_method("forward");
  if (!forward) throw ExportError("the TorchScript module has no forward method to export");
  check_inputs(forward->function().getSchema(), args_in);
  // The tensors, also those in tuples and lists, are the graph's inputs.
  std::vector<torch::Tensor> inputs;
  for (const auto& v : args_in) {
    if (v.isTensor()) inputs.push_back(v.toTensor());
    if (!v.isTensor() && has_tensor(v)) {
      std::vector<at::Tensor> flat;
      flatten_ivalue(v, flat);
      inputs.insert(inputs.end(), flat.begin(), flat.end());
    }
  }

  std::shared_ptr<jit::Graph> g = forward->graph()->copy();
  jit::Inline(*g);
  // Before any constant folding: a folded aten::to of a real 0-dim tensor looks the same.
  detail::numbers_as_scalars(*g, g->block());
  detail::TraceResult tr;
  tr.num_user_inputs = inputs.size();
  tr.example_inputs = inputs;
  {
    torch::NoGradGuard no_grad;
    // forward may write into its inputs: it runs on copies, the caller's stay as they were.
    std::vector<c10::IValue> args;
    for (const auto& v : args_in)
      args.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
    c10::IValue out;
    try {
      // On a deep copy when forward may write into the module's state (self.steps += 1, a
      // buffer updated in place): the graph must start from the state the caller's module had.
      out = (detail::may_write_state(g->block()) ? m.deepcopy() : m).forward(args);
    } catch (const c10::Error& e) {
      // LibTorch's message without its C++ backtrace.
      throw ExportError("the module's forward failed on the example inputs (" +
                        describe_inputs(args_in) + "): " + last_line(e.what_without_backtrace()) +
                        "; give inputs of the dtypes and shapes forward expects");
    } catch (const std::exception& e) {
      throw ExportError("the module's forward failed on the example inputs (" +
                        describe_inputs(args_in) + "): " + last_line(e.what()) +
                        "; give inputs of the dtypes and shapes forward expects");
    }
    flatten_ivalue(out, tr.eager_outputs);
  }

  // Arguments with defaults that were not given, and the non-tensor ones, become constants;
  // tuples and lists of tensors, one graph input per tensor.
  for (size_t i = g->inputs().size() - 1; i >= 1; --i) {
    const auto& arg = forward->function().getSchema().arguments()[i];
    std::optional<c10::IValue> c;
    if (i > args_in.size())
      c = *arg.default_value();
    else if (!args_in[i - 1].isTensor())
      c = args_in[i - 1];
    if (!c) continue;
    jit::WithInsertPoint guard(g->block()->nodes().front());
    size_t pos = i + 1;
    std::vector<torch::Tensor> unused;
    jit::Value* value =
        has_tensor(*c) ? structured_input(*g, *c, pos, unused) : g->insertConstant(*c);
    g->inputs()[i]->replaceAllUsesWith(value);
    g->eraseInput(i);
  }

  std::vector<ParamSlot> params;
  std::unordered_map<const c10::TensorImpl*, size_t> index;
  collect_params(m._ivalue(), "", params, index);
  size_t first_param = g->inputs().size();
  for (const auto& p : params) {
    jit::Value* in = g->addInput(p.name);
    in->setType(c10::TensorType::create(p.tensor));
  }
  jit::Value* self = g->inputs()[0];
  detail::AttrResolver resolver(*g, self, m._ivalue(), index, first_param);
  resolver.run(g->block());
  resolver.remove_dead();
  if (self->hasUses()) {
    const jit::Node* user = self->uses()[0].user;
    throw ExportError("the module's forward uses self in " +
                      std::string(user->kind().toQualString()) +
                      " (not an attribute read); tonnx exports modules whose forward reads "
                      "parameters, buffers and constants of self");
  }
  g->eraseInput(0);
  for (size_t i = 0; i < inputs.size(); ++i)
    g->inputs()[i]->setType(c10::TensorType::create(inputs[i]));

  set_scopes(g->block(), c10::make_intrusive<jit::Scope>()->push(
                             c10::Symbol::scope(class_short_name(m.type()))));
  // Branches decided by the constants above (`if hx is None` in a scripted nn.LSTM called
  // without hx) go first: the other branch may hold optional tuples no lowering can flatten.
  // `hx is None` for a tuple hx (nn.LSTM given a state) or for an input is decided here,
  // x.dim() of an input is its rank (nn.LSTMCell's batched check), and a cast that refines a
  // tuple to the type it already has goes: the branches they decide may hold tuples no
  // lowering can flatten, or code for other ranks. (Other tensors keep their checks: the
  // symbolics export them.)
  fold_known_none_checks(g->block());
  fold_input_ranks(*g);
  remove_identity_casts(g->block());
  detail::copy_without_expand(g->block());  // before constants fold the expand's sizes in
  jit::ConstantPropagation(g);
  jit::EliminateDeadCode(g);
  if (detail::lower_constant_key_dicts(*g) > 0) {
    jit::ConstantPropagation(g);
    jit::EliminateDeadCode(g);
  }
  try {
    jit::LowerAllTuples(g);
  } catch (const std::exception& e) {
    throw ExportError("tuples in forward's graph that tonnx cannot flatten: " +
                      first_line(e.what()));
  }
  detail::fold_export_constants(*g, g->block());
  detail::drop_raising_branches(g->block());
  detail::split_uninitialized(*g, g->block());
  jit::ConstantPropagation(g);
  jit::EliminateDeadCode(g);

  std::vector<c10::IValue> run_inputs;
  std::vector<size_t> written_params;  // indices into run_inputs
  for (const auto& t : inputs) run_inputs.emplace_back(t.clone());
  // Parameters the graph writes into (a buffer updated in place) run on copies: the exported
  // initializers keep the module's values.
  for (size_t i = 0; i < params.size(); ++i) {
    bool written = false;
    for (const jit::Use& u : g->inputs()[inputs.size() + i]->uses()) {
      const c10::FunctionSchema* sch = u.user->maybeSchema();
      if (sch && u.offset < sch->arguments().size() && sch->arguments()[u.offset].alias_info() &&
          sch->arguments()[u.offset].alias_info()->isWrite())
        written = true;
    }
    at::Tensor t = params[i].tensor.detach();
    run_inputs.emplace_back(written ? t.clone() : t);
    if (written) written_params.push_back(inputs.size() + i);
  }
  // With dynamic axes, the graph also runs with those axes at other sizes (as the C++
  // frontend traces again): sizes that follow them become unknown, so no symbolic freezes
  // them. Doubled first (a net that needs sizes divisible by 32 keeps working), else each grown
  // by one or more (a positional table may cap a length); if neither runs, every size computed
  // from an input is unknown.
  std::vector<detail::DynamicDim> dims =
      detail::dynamic_dims(inputs, o.dynamic_axes, o.input_names);
  std::vector<std::vector<detail::DynamicDim>> candidates;
  if (!dims.empty()) {
    std::vector<detail::DynamicDim> doubled = dims;
    for (auto& d : doubled) d.size_b = std::max(2 * d.size_a, d.size_a + 1);
    candidates = {doubled, dims};
  }
  auto grown_set = [&](const std::vector<detail::DynamicDim>& ds) {
    std::vector<c10::IValue> grown = run_inputs;
    auto g_in = detail::grown_inputs(inputs, ds, &detail::DynamicDim::size_b);
    for (size_t i = 0; i < g_in.size(); ++i) grown[i] = g_in[i].clone();
    for (size_t i : written_params) grown[i] = params[i - inputs.size()].tensor.detach().clone();
    return grown;
  };
  detail::ObservedConditions conditions;
  bool probe_failed = false;
  {
    torch::NoGradGuard no_grad;
    if (candidates.empty()) detail::observe_types(g, run_inputs, &conditions);
    std::string errors;
    for (size_t k = 0; k < candidates.size(); ++k) {
      detail::ObservedConditions seen;
      try {
        detail::observe_types(g, {run_inputs, grown_set(candidates[k])}, &seen,
                              k == 0 ? "with the dynamic axes doubled, "
                                     : "with the dynamic axes grown by one or more, ");
        conditions = std::move(seen);
        errors.clear();
        break;
      } catch (const ExportError& e) {
        errors += std::string(errors.empty() ? "" : "; ") + e.what();
      }
    }
    // Neither ran (inputs whose sizes are tied: x.view(other.shape)): the example run alone,
    // and every size computed from an input is taken to vary.
    if (!errors.empty()) {
      probe_failed = true;
      std::cerr << "tonnx: warning: dynamic_axes: the module could not run at other sizes of its "
                   "dynamic axes ("
                << errors
                << "); every size computed from an input is taken to vary, and the model is "
                   "right at the sizes where forward runs\n";
      detail::observe_types(g, run_inputs, &conditions);
    }
  }
  std::unordered_set<const jit::Value*> data_shaped;
  if (probe_failed)
    for (size_t i = 0; i < inputs.size(); ++i) data_shaped.insert(g->inputs()[i]);
  // What the inputs' values decide (parameters and buffers are fixed: not data).
  std::unordered_set<const jit::Value*> data;
  for (size_t i = 0; i < inputs.size(); ++i) data.insert(g->inputs()[i]);
  if (!o.dynamic_axes.empty()) detail::dynamic_sizes(g->block(), data);
  detail::data_values(g->block(), data);
  detail::forget_data_shapes(g->block(), data_shaped, data);
  detail::specialize_data_free_ifs(g, conditions, !o.dynamic_axes.empty(), data_shaped);
  detail::infer_unobserved(g->block(), !o.dynamic_axes.empty());
  detail::fold_observed(*g, g->block(), !o.dynamic_axes.empty());
  jit::ConstantPropagation(g);
  if (detail::unroll_number_loops(g)) {  // sizes read in the unrolled bodies fold now
    detail::fold_observed(*g, g->block(), !o.dynamic_axes.empty());
    jit::ConstantPropagation(g);
  }
  // Ifs fixed above may have made two values one (`query is key` in the second layer of a
  // scripted nn.TransformerEncoder under dynamic axes): fold those tests again.
  if (detail::fold_export_constants(*g, g->block()) > 0) jit::ConstantPropagation(g);
  // Dicts under ifs that did not depend on data are in straight-line code now.
  if (detail::lower_constant_key_dicts(*g) > 0) {
    jit::LowerAllTuples(g);  // a returned dict is a tuple now
    jit::ConstantPropagation(g);
  }
  jit::EliminateDeadCode(g);
  detail::refuse_dicts(*g);
  // The graph the converter gets, with observed types: for debugging an export.
  if (std::getenv("TONNX_DEBUG_GRAPH")) std::cerr << g->toString();

  tr.graph = g;
  for (const auto& p : params) tr.params.push_back({p.name, p.tensor.detach(), nullptr});
  return detail::finish_export(std::move(tr), o);
}

}  // namespace

namespace {
// LibTorch's whole message, without the surrounding blank lines (its load errors start with a
// newline) and capped for a terminal.
std::string whole_message(const std::string& s) {
  size_t b = s.find_first_not_of(" \n\t");
  if (b == std::string::npos) return "(LibTorch gave no message)";
  size_t e = s.find_last_not_of(" \n\t");
  std::string m = s.substr(b, e + 1 - b);
  return m.size() > 4000 ? m.substr(0, 4000) + "..." : m;
}

std::string load_hint(const std::string& msg) {
  const std::string key = "Unknown builtin op: ";
  size_t at = msg.find(key);
  if (at == std::string::npos) return "";
  std::string op = msg.substr(at + key.size());
  op = op.substr(0, op.find_first_of(".\n "));
  return "\nThe file calls " + op +
         ", a custom op that LibTorch does not know until the library that registers it is "
         "loaded: load it first (tonnx export --load-library PATH, tonnx::load_library; "
         "torchvision's is its _C*.so)";
}
}  // namespace

void load_library(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw ExportError("cannot load library '" + path +
                      "': " + (fs::exists(path, ec) ? "it is not a regular file" : "no such file"));
  // RTLD_GLOBAL: the ops it registers stay registered for the life of the process.
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    throw ExportError("cannot load library '" + path + "': " + (why ? why : "unknown error"));
  }
}

torch::jit::Module load_torchscript(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw ExportError("cannot load TorchScript file '" + path + "': no such file");
  if (!fs::is_regular_file(path, ec))
    throw ExportError("cannot load TorchScript file '" + path + "': it is not a regular file");
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw ExportError("cannot load TorchScript file '" + path + "': it cannot be read");
  detail::AllocationLog log;  // the blocks the archive's records are read into
  std::optional<torch::jit::Module> m;
  try {
    m = torch::jit::load(path);
  } catch (const c10::Error& e) {
    std::string msg = whole_message(e.what_without_backtrace());
    if (msg.find("PytorchStreamReader") != std::string::npos ||
        msg.find("archive") != std::string::npos || msg.find("zip") != std::string::npos)
      throw ExportError("cannot load TorchScript file '" + path +
                        "': it is not a complete TorchScript archive (" + first_line(msg) +
                        "); save it again with torch.jit.save or module.save");
    throw ExportError("cannot load TorchScript file '" + path + "': " + msg + load_hint(msg));
  } catch (const std::exception& e) {
    std::string msg = whole_message(e.what());
    throw ExportError("cannot load TorchScript file '" + path + "': " + msg + load_hint(msg));
  }
  check_loaded_storages(*m, log, path);
  return std::move(*m);
}

ir::Model export_to_model(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                          const ExportOptions& options) {
  ir::Model m =
      run_export(module, std::vector<c10::IValue>(inputs.begin(), inputs.end()), options).model;
  passes::materialize_initializers(*m.graph);
  return m;
}

ExportSummary export_model(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                           const std::string& path, const ExportOptions& options) {
  return export_model_args(module, std::vector<c10::IValue>(inputs.begin(), inputs.end()), path,
                           options);
}

ExportSummary export_model_args(torch::jit::Module& module, const std::vector<c10::IValue>& args,
                                const std::string& path, const ExportOptions& options) {
  return detail::export_to_path(path, options, [&] { return run_export(module, args, options); });
}

}  // namespace tonnx
