// Module attributes in a scripted forward: prim::GetAttr chains rooted at `self` become
// parameter inputs or constants, and attribute writes (prim::SetAttr) become data flow,
// carried out of ifs and through loops. Used by the TorchScript frontend (torchscript.cpp).
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tonnx/symbolic.h"

namespace tonnx::detail {
namespace jit = torch::jit;

// An object of a class registered from C++ (torch.classes.*), as opposed to a module or a
// TorchScript class.
inline bool is_custom_class(const c10::IValue& v) {
  const auto& name = v.toObjectRef().type()->name();
  return name && name->qualifiedName().rfind("__torch__.torch.classes.", 0) == 0;
}

// Replaces prim::GetAttr chains rooted at `self` by parameter inputs (tensors that are
// parameters or buffers), constants (other tensors, numbers, bools, strings, None) or, for
// submodules, nothing (their attribute reads are resolved through the chain).
class AttrResolver {
 public:
  AttrResolver(jit::Graph& g, jit::Value* self, const c10::intrusive_ptr<c10::ivalue::Object>& root,
               const std::unordered_map<const c10::TensorImpl*, size_t>& param_index,
               size_t first_param_input)
      : g_(g), param_index_(param_index), first_param_(first_param_input), root_(root) {
    objects_[self] = {c10::IValue(root), ""};
  }

  void run(jit::Block* block);

  void remove_dead();

 private:
  struct Obj {
    c10::IValue value;
    std::string path;
  };

  // A write to an attribute of self (a counter, a cached tensor): later reads in forward read
  // the written value. The module's state after forward is not part of the ONNX model (as
  // with torch.onnx). A write in an if or a loop is carried out of it as a value (below).
  void write(jit::Node* n);

  // An if: each branch starts from the values before it; an attribute either branch writes
  // becomes an output of the if (the other branch returns the value it had).
  void run_if(jit::Node* n);

  // A loop: an attribute its body writes is carried through it (a loop input, a body input
  // read by the body, the body's output, the loop's output).
  void run_loop(jit::Node* n);

  // The attribute paths a block writes (prim::SetAttr on an object reached from self).
  void writes_in(jit::Block* b, std::set<std::string>& paths);

  // The path of an object value: self, an object already resolved, or a GetAttr chain on one.
  std::optional<std::string> path_of(jit::Value* v);

  // The value of an attribute at `before`: the last write, or the module's own value.
  jit::Value* current(const std::string& path, jit::Node* before);

  void resolve(jit::Node* n);

  // A graph value for an attribute's value, inserted before `n`: a parameter input, a list of
  // them, or a constant (a C++ class object: a constant the reading op's symbolic unpacks).
  jit::Value* materialize(c10::IValue v, const std::string& path, jit::Node* n);

  jit::Graph& g_;
  const std::unordered_map<const c10::TensorImpl*, size_t>& param_index_;
  size_t first_param_;
  std::unordered_map<const jit::Value*, Obj> objects_;
  std::vector<jit::Node*> getattrs_, setattrs_;
  std::map<std::string, jit::Value*> written_;
  c10::intrusive_ptr<c10::ivalue::Object> root_;
};

}  // namespace tonnx::detail
