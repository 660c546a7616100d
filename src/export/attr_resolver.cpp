// Module attributes in a scripted forward (attr_resolver.h).
#include "export/attr_resolver.h"

namespace tonnx::detail {

void AttrResolver::run(jit::Block* block) {
  for (auto it = block->nodes().begin(); it != block->nodes().end(); ++it) {
    jit::Node* n = *it;
    if (n->kind() == c10::prim::If)
      run_if(n);
    else if (n->kind() == c10::prim::Loop)
      run_loop(n);
    else
      for (jit::Block* b : n->blocks()) run(b);
    if (n->kind() == c10::prim::GetAttr) resolve(n);
    if (n->kind() == c10::prim::SetAttr) write(n);
  }
}

void AttrResolver::remove_dead() {
  for (jit::Node* n : setattrs_) n->destroy();
  for (auto it = getattrs_.rbegin(); it != getattrs_.rend(); ++it)
    if (!(*it)->output()->hasUses()) (*it)->destroy();
}

// A write to an attribute of self (a counter, a cached tensor): later reads in forward read
// the written value. The module's state after forward is not part of the ONNX model (as
// with torch.onnx). A write in an if or a loop is carried out of it as a value (below).
void AttrResolver::write(jit::Node* n) {
  auto parent = objects_.find(n->inputs()[0]);
  if (parent == objects_.end()) return;
  const std::string name = n->s(c10::attr::name);
  const std::string path = parent->second.path.empty() ? name : parent->second.path + "." + name;
  written_[path] = n->inputs()[1];
  setattrs_.push_back(n);
}

// An if: each branch starts from the values before it; an attribute either branch writes
// becomes an output of the if (the other branch returns the value it had).
void AttrResolver::run_if(jit::Node* n) {
  const std::map<std::string, jit::Value*> before = written_;
  std::vector<std::map<std::string, jit::Value*>> after;
  for (jit::Block* b : n->blocks()) {
    written_ = before;
    run(b);
    after.push_back(written_);
  }
  written_ = before;
  std::set<std::string> changed;
  for (const auto& w : after)
    for (const auto& [path, v] : w)
      if (auto it = before.find(path); it == before.end() || it->second != v) changed.insert(path);
  for (const std::string& path : changed) {
    std::vector<jit::Value*> values;
    for (size_t i = 0; i < n->blocks().size(); ++i) {
      auto it = after[i].find(path);
      values.push_back(it != after[i].end() ? it->second : current(path, n));
    }
    jit::Value* out = n->addOutput();
    c10::TypePtr type = values[0]->type();
    for (size_t i = 0; i < values.size(); ++i) {
      n->blocks()[i]->registerOutput(values[i]);
      if (auto u = c10::unifyTypes(type, values[i]->type())) type = *u;
    }
    out->setType(type);
    written_[path] = out;
  }
}

// A loop: an attribute its body writes is carried through it (a loop input, a body input
// read by the body, the body's output, the loop's output).
void AttrResolver::run_loop(jit::Node* n) {
  jit::Block* body = n->blocks()[0];
  std::set<std::string> paths;
  writes_in(body, paths);
  std::vector<std::pair<std::string, c10::TypePtr>> carried;
  for (const std::string& path : paths) {
    jit::Value* init = current(path, n);
    n->addInput(init);
    written_[path] = body->addInput()->setType(init->type());
    carried.emplace_back(path, init->type());
  }
  const std::map<std::string, jit::Value*> entry = written_;
  run(body);
  for (const auto& [path, type] : carried) body->registerOutput(written_[path]);
  written_ = entry;
  for (const auto& [path, type] : carried) written_[path] = n->addOutput()->setType(type);
}

// The attribute paths a block writes (prim::SetAttr on an object reached from self).
void AttrResolver::writes_in(jit::Block* b, std::set<std::string>& paths) {
  for (jit::Node* n : b->nodes()) {
    for (jit::Block* sub : n->blocks()) writes_in(sub, paths);
    if (n->kind() != c10::prim::SetAttr) continue;
    if (auto base = path_of(n->inputs()[0])) {
      const std::string name = n->s(c10::attr::name);
      paths.insert(base->empty() ? name : *base + "." + name);
    }
  }
}

// The path of an object value: self, an object already resolved, or a GetAttr chain on one.
std::optional<std::string> AttrResolver::path_of(jit::Value* v) {
  if (auto it = objects_.find(v); it != objects_.end()) return it->second.path;
  if (v->node()->kind() != c10::prim::GetAttr) return std::nullopt;
  auto base = path_of(v->node()->input());
  if (!base) return std::nullopt;
  const std::string name = v->node()->s(c10::attr::name);
  return base->empty() ? name : *base + "." + name;
}

// The value of an attribute at `before`: the last write, or the module's own value.
jit::Value* AttrResolver::current(const std::string& path, jit::Node* before) {
  if (auto it = written_.find(path); it != written_.end()) return it->second;
  c10::IValue v(root_);
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string name =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!v.isObject()) throw ExportError("forward reads self." + path + " through a non-module");
    v = v.toObject()->getAttr(name);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (v.isObject() && !is_custom_class(v))
    throw ExportError("forward writes self." + path +
                      " in an if or a loop, and it is a module: tonnx carries tensors and "
                      "numbers out of control flow, not modules");
  return materialize(v, path, before);
}

void AttrResolver::resolve(jit::Node* n) {
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
  if (v.isObject() && !is_custom_class(v)) {
    objects_[n->output()] = {v, path};
    return;
  }
  n->output()->replaceAllUsesWith(materialize(v, path, n));
}

// A graph value for an attribute's value, inserted before `n`: a parameter input, a list of
// them, or a constant (a C++ class object: a constant the reading op's symbolic unpacks).
jit::Value* AttrResolver::materialize(c10::IValue v, const std::string& path, jit::Node* n) {
  if (v.isObject()) {
    // A C++ class object (a quantized layer's packed weights): a constant that the symbolic
    // of the op reading it unpacks.
    jit::WithInsertPoint guard(n);
    return g_.insertConstant(v);  // throws for objects a graph cannot hold
  }
  jit::Value* replacement = nullptr;
  if (v.isTensor() && v.toTensor().defined()) {
    auto idx = param_index_.find(v.toTensor().unsafeGetTensorImpl());
    if (idx != param_index_.end()) replacement = g_.inputs()[first_param_ + idx->second];
  }
  if (!replacement && v.isList() && !v.toListRef().empty()) {
    // A list of tensors (nn.LSTM's _flat_weights, scripted): a ListConstruct of the
    // parameters it holds, or of constants for tensors that are not parameters.
    std::vector<jit::Value*> items;
    for (const c10::IValue& e : v.toListRef()) {
      if (!e.isTensor() || !e.toTensor().defined()) {
        items.clear();
        break;
      }
      auto idx = param_index_.find(e.toTensor().unsafeGetTensorImpl());
      jit::WithInsertPoint guard(n);
      items.push_back(idx != param_index_.end() ? g_.inputs()[first_param_ + idx->second]
                                                : g_.insertConstant(e.toTensor().detach()));
    }
    if (!items.empty()) {
      jit::Node* list = g_.createList(c10::TensorType::get(), items);
      list->insertBefore(n);
      replacement = list->output();
    }
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
  return replacement;
}

}  // namespace tonnx::detail
