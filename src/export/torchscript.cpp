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
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include <dlfcn.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "export/pipeline.h"
#include "export/specialize.h"

namespace tonnx {
namespace fs = std::filesystem;
namespace jit = torch::jit;

namespace {

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

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

// Replaces prim::GetAttr chains rooted at `self` by parameter inputs (tensors that are
// parameters or buffers), constants (other tensors, numbers, bools, strings, None) or, for
// submodules, nothing (their attribute reads are resolved through the chain).
class AttrResolver {
 public:
  AttrResolver(jit::Graph& g, jit::Value* self, const c10::intrusive_ptr<c10::ivalue::Object>& root,
               const std::unordered_map<const c10::TensorImpl*, size_t>& param_index,
               size_t first_param_input)
      : g_(g), self_(self), param_index_(param_index), first_param_(first_param_input) {
    objects_[self] = {c10::IValue(root), ""};
  }

  void run(jit::Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end(); ++it) {
      jit::Node* n = *it;
      for (jit::Block* b : n->blocks()) run(b);
      if (n->kind() == c10::prim::GetAttr) resolve(n);
      if (n->kind() == c10::prim::SetAttr) write(n);
    }
  }

  void remove_dead() {
    for (jit::Node* n : setattrs_) n->destroy();
    for (auto it = getattrs_.rbegin(); it != getattrs_.rend(); ++it)
      if (!(*it)->output()->hasUses()) (*it)->destroy();
  }

 private:
  struct Obj {
    c10::IValue value;
    std::string path;
  };

  // A write to an attribute of self (a counter, a cached tensor): later reads in forward read
  // the written value. The module's state after forward is not part of the ONNX model (as
  // with torch.onnx). Writes inside an if or a loop would need the value carried out of it.
  void write(jit::Node* n) {
    auto parent = objects_.find(n->inputs()[0]);
    if (parent == objects_.end()) return;
    const std::string name = n->s(c10::attr::name);
    const std::string path = parent->second.path.empty() ? name : parent->second.path + "." + name;
    if (n->owningBlock() != g_.block())
      throw ExportError("forward writes self." + path +
                        " inside an if or a loop (prim::SetAttr); tonnx follows attribute "
                        "writes in straight-line code only: return the value instead");
    written_[path] = n->inputs()[1];
    setattrs_.push_back(n);
  }

  void resolve(jit::Node* n) {
    getattrs_.push_back(n);
    auto parent = objects_.find(n->input());
    if (parent == objects_.end()) return;  // not rooted at self: left to the checks below
    const std::string name = n->s(c10::attr::name);
    const Obj& p = parent->second;
    if (!p.value.isObject())
      throw ExportError("attribute '" + name + "' is read from '" + p.path +
                        "', which is not a module");
    c10::IValue v = p.value.toObject()->getAttr(name);
    std::string path = p.path.empty() ? name : p.path + "." + name;
    if (auto w = written_.find(path); w != written_.end()) {
      n->output()->replaceAllUsesWith(w->second);
      return;
    }
    if (v.isObject()) {
      objects_[n->output()] = {v, path};
      return;
    }
    jit::Value* replacement = nullptr;
    if (v.isTensor() && v.toTensor().defined()) {
      auto idx = param_index_.find(v.toTensor().unsafeGetTensorImpl());
      if (idx != param_index_.end()) replacement = g_.inputs()[first_param_ + idx->second];
    }
    if (!replacement) {
      if (v.isTensor()) v = v.toTensor().detach();
      jit::WithInsertPoint guard(n);
      // numbers, bools, strings, None, plain tensors, lists of them
      try {
        replacement = g_.insertConstant(v);
      } catch (const std::exception&) {
        throw ExportError("forward reads self." + path + ", a " + v.tagKind() +
                          ", which tonnx cannot make a constant of");
      }
    }
    n->output()->replaceAllUsesWith(replacement);
  }

  jit::Graph& g_;
  jit::Value* self_;
  const std::unordered_map<const c10::TensorImpl*, size_t>& param_index_;
  size_t first_param_;
  std::unordered_map<const jit::Value*, Obj> objects_;
  std::vector<jit::Node*> getattrs_, setattrs_;
  std::map<std::string, jit::Value*> written_;
};

// What an export knows before running anything: tensors are on the CPU, dense and strided,
// and nothing requires grad (forward runs under no_grad, as inference). Scripted library code
// (nn.MultiheadAttention's fast-path checks) branches on these; as constants, the branches
// fold away with ConstantPropagation. Returns how many were replaced.
int fold_export_constants(jit::Graph& g, jit::Block* b) {
  static const std::set<std::string> kFalse = {
      "prim::is_cuda",        "prim::is_xpu",       "prim::is_sparse", "prim::is_sparse_csr",
      "prim::is_mkldnn",      "prim::is_mps",       "prim::is_meta",   "prim::is_vulkan",
      "prim::is_ipu",         "prim::is_quantized", "prim::is_nested", "prim::requires_grad",
      "aten::is_grad_enabled"};
  std::vector<jit::Node*> folded;
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
    jit::Node* n = *it;
    for (jit::Block* sub : n->blocks()) fold_export_constants(g, sub);
    if (n->outputs().size() != 1) continue;
    const std::string kind = n->kind().toQualString();
    jit::WithInsertPoint guard(n);
    jit::Value* c = nullptr;
    if (kFalse.count(kind))
      c = g.insertConstant(false);
    else if (kind == "prim::device" && n->inputs().size() == 1)
      c = g.insertConstant(c10::Device(at::kCPU));
    else if (kind == "prim::layout" && n->inputs().size() == 1)
      c = g.insertConstant(static_cast<int64_t>(at::kStrided));
    if (!c) continue;
    n->output()->replaceAllUsesWith(c);
    folded.push_back(n);
  }
  // Dead now; LibTorch's dead-code pass keeps some of them (is_grad_enabled reads global
  // state), and every node left must have a symbolic.
  for (jit::Node* n : folded) n->destroy();
  return static_cast<int>(folded.size());
}

// LowerAllTuples turns a tuple-typed prim::Uninitialized (the value of a branch that raises)
// into one node with an output per element, which LibTorch's interpreter runs as if it had
// one: the stack goes out of step and the process corrupts its heap (scripted
// MultiheadAttention, a raise in one branch of an if). One node per output is what it runs.
void split_uninitialized(jit::Graph& g, jit::Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it;
    ++it;
    for (jit::Block* sub : n->blocks()) split_uninitialized(g, sub);
    if (n->kind() != c10::prim::Uninitialized || n->outputs().size() < 2) continue;
    for (jit::Value* o : n->outputs()) {
      jit::Node* one = g.createUninitialized(o->type());
      one->insertBefore(n);
      o->replaceAllUsesWith(one->output());
    }
    n->destroy();
  }
}

// An if whose one branch raises (an assert, an argument check) is exported as the other
// branch, as torch.onnx does: ONNX has no exceptions, and the example inputs took that branch
// (the export runs forward on them first). Returns how many were dropped.
int drop_raising_branches(jit::Block* b) {
  int dropped = 0;
  for (auto it = b->nodes().begin(); it != b->nodes().end();) {
    jit::Node* n = *it;
    ++it;
    for (jit::Block* sub : n->blocks()) dropped += drop_raising_branches(sub);
    if (n->kind() != c10::prim::If) continue;
    auto raises = [](jit::Block* blk) {
      for (jit::Node* m : blk->nodes())
        if (m->kind() == c10::prim::RaiseException) return true;
      return false;
    };
    bool r0 = raises(n->blocks()[0]), r1 = raises(n->blocks()[1]);
    if (r0 == r1) continue;
    detail::replace_if_by_branch(n, r0 ? 1 : 0);
    ++dropped;
  }
  return dropped;
}

// What a tensor value looked like on every run of its definition.
struct Observed {
  at::ScalarType dtype = at::ScalarType::Undefined;
  std::vector<std::optional<int64_t>> sizes;
  bool rank_varies = false, dtype_varies = false, seen = false;
  void add(const at::Tensor& t) {
    std::vector<std::optional<int64_t>> s(t.sizes().begin(), t.sizes().end());
    if (!seen) {
      dtype = t.scalar_type();
      sizes = s;
      seen = true;
      return;
    }
    if (dtype != t.scalar_type()) dtype_varies = true;
    if (sizes.size() != s.size()) {
      rank_varies = true;
      return;
    }
    for (size_t i = 0; i < s.size(); ++i)
      if (sizes[i] != s[i]) sizes[i] = std::nullopt;
  }
  c10::TypePtr type() const {
    c10::optional<at::ScalarType> dt;
    if (!dtype_varies) dt = dtype;
    c10::Device cpu(at::kCPU);
    if (rank_varies) return c10::TensorType::create(dt, cpu, c10::optional<size_t>(), false);
    std::vector<c10::optional<int64_t>> dims;
    for (const auto& d : sizes) dims.push_back(d ? c10::optional<int64_t>(*d) : c10::nullopt);
    return c10::TensorType::create(dt, cpu, c10::VaryingShape<int64_t>(dims),
                                   c10::VaryingShape<int64_t>(dims.size()), false);
  }
};

bool is_tensor_type(const jit::Value* v) { return v->type()->cast<c10::TensorType>() != nullptr; }

// Runs the graph once on the example inputs with a profiling node after every tensor value,
// then sets each value's type to what was observed (sizes that varied between loop
// iterations become unknown). Values on paths the inputs did not take get dtypes from a
// simple forward rule afterwards.
std::vector<c10::IValue> observe_types(const std::shared_ptr<jit::Graph>& g,
                                       const std::vector<c10::IValue>& inputs,
                                       detail::ObservedConditions* conditions = nullptr) {
  std::unordered_map<const jit::Value*, Observed> seen;
  std::vector<jit::Node*> probes;
  auto probe = [&](jit::Value* v, jit::Node* insert_before, jit::Block* block_start) {
    if (!is_tensor_type(v)) return;
    auto* pn = new jit::ProfileIValueOp(g.get(), nullptr);
    jit::Value* out = pn->addOutput();
    out->setType(v->type());
    const jit::Value* key = v;
    pn->setCallback([key, &seen](std::vector<c10::IValue>& stack) {
      stack.pop_back();  // the frame id
      const c10::IValue& t = stack.back();
      if (t.isTensor() && t.toTensor().defined()) seen[key].add(t.toTensor());
    });
    v->replaceAllUsesWith(out);
    pn->addInput(v);
    if (insert_before)
      pn->insertBefore(insert_before);
    else
      block_start->prependNode(pn);
    probes.push_back(pn);
  };
  // The value each If's condition took (bit 0: false, bit 1: true).
  auto probe_condition = [&](jit::Node* if_node) {
    jit::Value* v = if_node->input(0);
    if (!conditions || v->node()->kind() == c10::prim::Constant) return;
    auto* pn = new jit::ProfileIValueOp(g.get(), nullptr);
    jit::Value* out = pn->addOutput();
    out->setType(v->type());
    const jit::Value* key = v;
    pn->setCallback([key, conditions](std::vector<c10::IValue>& stack) {
      stack.pop_back();  // the frame id
      const c10::IValue& b = stack.back();
      if (b.isBool()) (*conditions)[key] |= b.toBool() ? 2 : 1;
    });
    pn->addInput(v);
    pn->insertBefore(if_node);
    if_node->replaceInput(0, out);
    probes.push_back(pn);
  };
  std::function<void(jit::Block*)> instrument = [&](jit::Block* b) {
    for (jit::Value* in : b->inputs()) probe(in, nullptr, b);
    for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
      jit::Node* n = *it;
      if (n->kind() == c10::prim::profile_ivalue) continue;
      if (n->kind() == c10::prim::If) probe_condition(n);
      for (jit::Block* sub : n->blocks()) instrument(sub);
      jit::Node* next = n->next();
      for (jit::Value* o : n->outputs()) probe(o, next, nullptr);
    }
  };
  instrument(g->block());
  std::vector<c10::IValue> stack = inputs;
  std::string error;
  try {
    jit::Code code(g, "forward");
    jit::InterpreterState state(code);
    state.run(stack);
  } catch (const std::exception& e) {
    error = e.what();
  }
  for (jit::Node* pn : probes) {
    pn->output()->replaceAllUsesWith(pn->input());
    pn->destroy();
  }
  if (!error.empty())
    throw ExportError("running forward's graph on the example inputs failed: " + first_line(error));
  for (auto& [v, o] : seen) const_cast<jit::Value*>(v)->setType(o.type());
  return stack;
}

// prim::dtype of a tensor whose type was observed is a constant (scripted code reads it to
// make tensors like another: torch.tensor(5, dtype=x.dtype)).
void fold_known_types(jit::Graph& g, jit::Block* b) {
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
    jit::Node* n = *it;
    for (jit::Block* sub : n->blocks()) fold_known_types(g, sub);
    if (n->inputs().size() != 1) continue;
    auto tt = n->input()->type()->cast<c10::TensorType>();
    if (!tt) continue;
    jit::WithInsertPoint guard(n);
    if (n->kind() == c10::prim::dtype && tt->scalarType())
      n->output()->replaceAllUsesWith(g.insertConstant(static_cast<int64_t>(*tt->scalarType())));
    else if (n->kind() == c10::prim::device)
      n->output()->replaceAllUsesWith(g.insertConstant(c10::Device(at::kCPU)));
  }
}

// Ops whose result's sizes depend on the values of their inputs (how many are nonzero, how
// long each sequence is), not only on the inputs' sizes. The example run saw one such size;
// another input gives another, so neither the observed sizes of these results nor of
// anything computed from them may be frozen into the model, even without dynamic axes.
bool data_shaped_op(const jit::Node* n) {
  static const std::set<std::string> kOps = {"aten::nonzero",
                                             "aten::nonzero_numpy",
                                             "aten::masked_select",
                                             "aten::unique",
                                             "aten::_unique",
                                             "aten::_unique2",
                                             "aten::unique_consecutive",
                                             "aten::unique_dim",
                                             "aten::_pack_padded_sequence",
                                             "aten::_pad_packed_sequence",
                                             "aten::argwhere",
                                             "torchvision::nms",
                                             "aten::repeat_interleave"};
  const std::string kind = n->kind().toQualString();
  if (kOps.count(kind)) return true;
  if (kind == "aten::index" && n->inputs().size() > 1) {
    const jit::Node* list = n->input(1)->node();
    if (list->kind() == c10::prim::ListConstruct)
      for (const jit::Value* idx : list->inputs())
        if (auto t = idx->type()->cast<c10::TensorType>())
          if (t->scalarType() == at::kBool || t->scalarType() == at::kByte) return true;
  }
  return false;
}

void forget_data_shapes(jit::Block* b, std::unordered_set<const jit::Value*>& shaped) {
  for (jit::Node* n : b->nodes()) {
    bool from_data = data_shaped_op(n);
    for (const jit::Value* in : n->inputs()) from_data = from_data || shaped.count(in);
    for (jit::Block* sub : n->blocks()) {
      for (size_t k = 1; k < sub->inputs().size() && k + 1 < n->inputs().size(); ++k)
        if (shaped.count(n->input(k + 1))) shaped.insert(sub->inputs()[k]);
      forget_data_shapes(sub, shaped);
      for (const jit::Value* o : sub->outputs()) from_data = from_data || shaped.count(o);
    }
    if (!from_data) continue;
    for (jit::Value* o : n->outputs()) {
      shaped.insert(o);
      if (auto t = o->type()->cast<c10::TensorType>(); t && t->dim())
        o->setType(t->withSymbolicShapes(c10::SymbolicShape(c10::optional<size_t>(*t->dim()))));
    }
  }
}

// Sizes the example run fixed: when no axis is dynamic, aten::size of known dims.
// ConstantPropagation then folds what was computed from them ([E, E * 2] split sizes in
// nn.MultiheadAttention). Sizes that varied between loop iterations were observed as unknown and
// stay computed.
void fold_known_sizes(jit::Graph& g, jit::Block* b, bool sizes_vary) {
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it) {
    jit::Node* n = *it;
    for (jit::Block* sub : n->blocks()) fold_known_sizes(g, sub, sizes_vary);
    if (n->inputs().empty() || n->outputs().size() != 1) continue;
    auto tt = n->input(0)->type()->cast<c10::TensorType>();
    if (!tt) continue;
    jit::WithInsertPoint guard(n);
    const std::string kind = n->kind().toQualString();
    if (kind != "aten::size" || sizes_vary) continue;
    if (n->inputs().size() == 1) {
      if (auto sizes = tt->sizes().concrete_sizes())
        n->output()->replaceAllUsesWith(g.insertConstant(*sizes));
    } else if (n->inputs().size() == 2 && tt->dim()) {
      auto d = jit::toIValue(n->input(1));
      if (!d || !d->isInt()) continue;
      auto axis = ir::normalize_axis(d->toInt(), static_cast<int64_t>(*tt->dim()));
      if (!axis) continue;
      if (auto s = tt->sizes()[*axis]) n->output()->replaceAllUsesWith(g.insertConstant(*s));
    }
  }
}

// Ops whose result has the same dtype as their first tensor input (used for values on
// paths the example inputs did not take). Comparisons give bool.
void infer_unobserved(jit::Block* b) {
  static const std::set<std::string> kBool = {
      "aten::eq",         "aten::ne",    "aten::lt",          "aten::le",
      "aten::gt",         "aten::ge",    "aten::logical_not", "aten::logical_and",
      "aten::logical_or", "aten::isnan", "aten::any",         "aten::all"};
  for (jit::Node* n : b->nodes()) {
    for (jit::Block* sub : n->blocks()) infer_unobserved(sub);
    for (jit::Value* o : n->outputs()) {
      auto tt = o->type()->cast<c10::TensorType>();
      if (!tt || tt->scalarType()) continue;
      std::string kind = n->kind().toQualString();
      if (kBool.count(kind)) {
        o->setType(tt->withScalarType(at::kBool));
        continue;
      }
      std::optional<at::ScalarType> dt;
      for (const jit::Value* in : n->inputs()) {
        auto it = in->type()->cast<c10::TensorType>();
        if (!it || !it->scalarType()) continue;
        dt = dt ? at::promoteTypes(*dt, *it->scalarType()) : *it->scalarType();
      }
      if (dt) o->setType(tt->withScalarType(*dt));
    }
  }
}

void flatten_ivalue(const c10::IValue& v, std::vector<torch::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten_ivalue(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) flatten_ivalue(e, out);
  } else if (v.isInt()) {
    out.push_back(at::scalar_tensor(v.toInt(), at::kLong));
  } else if (v.isDouble()) {
    out.push_back(at::scalar_tensor(v.toDouble(), at::kFloat));
  } else if (v.isBool()) {
    out.push_back(at::scalar_tensor(v.toBool(), at::kBool));
  } else {
    throw ExportError("forward returns a " + v.tagKind() +
                      "; tonnx exports tensors, numbers, and tuples or lists of them");
  }
}

std::string signature(const c10::FunctionSchema& schema) {
  const auto& args = schema.arguments();
  std::string sig = "forward(";
  for (size_t i = 1; i < args.size(); ++i)
    sig += (i > 1 ? ", " : "") + args[i].name() + ": " + args[i].type()->annotation_str();
  return sig + ")";
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
    if (!v.isTensor() && !v.isNone() && !v.isInt() && !v.isDouble() && !v.isBool() &&
        !v.isString() && !v.isIntList() && !v.isDoubleList() && !v.isBoolList())
      throw ExportError(which + " is " + v.type()->annotation_str() +
                        "; tonnx takes tensors as graph inputs and numbers, bools, strings, None "
                        "and lists of numbers as constants of the export");
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
  jit::Module m = module.clone();
  if (o.training == TrainingMode::EVAL) m.eval();
  if (o.training == TrainingMode::TRAINING) m.train(true);
  auto forward = m.find_method("forward");
  if (!forward) throw ExportError("the TorchScript module has no forward method to export");
  check_inputs(forward->function().getSchema(), args_in);
  // The tensors are the graph's inputs.
  std::vector<torch::Tensor> inputs;
  for (const auto& v : args_in)
    if (v.isTensor()) inputs.push_back(v.toTensor());

  detail::TraceResult tr;
  tr.num_user_inputs = inputs.size();
  {
    torch::NoGradGuard no_grad;
    // forward may write into its inputs: it runs on copies, the caller's stay as they were.
    std::vector<c10::IValue> args;
    for (const auto& v : args_in)
      args.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone()) : v);
    c10::IValue out;
    try {
      // On a deep copy: forward may write into the module's state (self.steps += 1), and the
      // graph must start from the state the caller's module had.
      out = m.deepcopy().forward(args);
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

  std::shared_ptr<jit::Graph> g = forward->graph()->copy();
  jit::Inline(*g);
  // Arguments with defaults that were not given, and the non-tensor ones, become constants.
  for (size_t i = g->inputs().size() - 1; i >= 1; --i) {
    const auto& arg = forward->function().getSchema().arguments()[i];
    std::optional<c10::IValue> c;
    if (i > args_in.size())
      c = *arg.default_value();
    else if (!args_in[i - 1].isTensor())
      c = args_in[i - 1];
    if (!c) continue;
    jit::WithInsertPoint guard(g->block()->nodes().front());
    g->inputs()[i]->replaceAllUsesWith(g->insertConstant(*c));
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
  AttrResolver resolver(*g, self, m._ivalue(), index, first_param);
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
  try {
    jit::LowerAllTuples(g);
  } catch (const std::exception& e) {
    throw ExportError("tuples in forward's graph that tonnx cannot flatten: " +
                      first_line(e.what()));
  }
  fold_export_constants(*g, g->block());
  drop_raising_branches(g->block());
  split_uninitialized(*g, g->block());
  jit::ConstantPropagation(g);
  jit::EliminateDeadCode(g);

  std::vector<c10::IValue> run_inputs;
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
  }
  detail::ObservedConditions conditions;
  {
    torch::NoGradGuard no_grad;
    observe_types(g, run_inputs, &conditions);
  }
  std::unordered_set<const jit::Value*> data_shaped;
  forget_data_shapes(g->block(), data_shaped);
  if (detail::specialize_data_free_ifs(g, conditions, !o.dynamic_axes.empty(), data_shaped) > 0) {
    jit::ConstantPropagation(g);
    jit::EliminateDeadCode(g);
  }
  infer_unobserved(g->block());
  // The graph the converter gets, with observed types: for debugging an export.
  if (std::getenv("TONNX_DEBUG_GRAPH")) std::cerr << g->toString();
  fold_known_types(*g, g->block());
  fold_known_sizes(*g, g->block(), !o.dynamic_axes.empty());
  jit::ConstantPropagation(g);
  jit::EliminateDeadCode(g);

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
  try {
    return torch::jit::load(path);
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
}

ir::Model export_to_model(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                          const ExportOptions& options) {
  return run_export(module, std::vector<c10::IValue>(inputs.begin(), inputs.end()), options).model;
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
