// What the opset converter's steps share (private to passes/opset/): the rewrite helpers and
// the table of adapters, one per op and opset where the op's inputs, attributes or meaning
// changed (adapters.cpp).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "tonnx/ir.h"
#include "tonnx/opset.h"

namespace tonnx::passes::opset {

// One node's step between opset `version - 1` and `version`.
struct Step {
  ir::Graph& g;     // the node's graph
  ir::Node* n;      // the node (replace_op and replace_with make a new one)
  int version;      // the newer of the two opsets
  bool up;          // version - 1 -> version (else version -> version - 1)
  int& counter;     // names the constants a step adds
  ir::Graph& root;  // the model's graph (names are unique across the model)

  // Fails the conversion, naming the node and the two opsets.
  [[noreturn]] void fail(const std::string& why) const;
  // The tensor of an initializer or a Constant node (in this graph), or nullptr.
  const at::Tensor* constant(const ir::Value* v) const;
  // A new int64 1-D initializer, or a 0-d one of `like`'s type for a scalar.
  ir::Value* add_constant(const at::Tensor& t, const std::string& what);
  // Attribute `attr` (ints) becomes input `index` (1-D int64); absent stays absent.
  void ints_attr_to_input(const std::string& attr, size_t index);
  // Input `index` (a constant, else fail) becomes attribute `attr` (ints); absent stays absent.
  void input_to_ints_attr(size_t index, const std::string& attr);
  // Refuses attribute `attr` unless absent or equal to `ok` (the older opset's only meaning),
  // then removes it: the other opset does not define it.
  void refuse_attr_unless(const std::string& attr, int64_t ok, const std::string& why);
  void refuse_attr_unless(const std::string& attr, const std::string& ok, const std::string& why);
  // A node of `op` with n's inputs and attributes (or those given) in n's place, computing n's
  // outputs under their names; n is removed.
  void replace_op(const std::string& op);
  void replace_with(const std::string& op, std::vector<ir::Value*> inputs,
                    std::vector<ir::Attr> attrs);
  // Names a node the step added, and its output (unique in the model).
  void name_new(ir::Node* m);
  // Input `index` present (and not the empty name): refused with `why`.
  void refuse_input(size_t index, const std::string& why);
  void drop_trailing_empty_inputs();
  // Input `index` becomes `v` (the omitted inputs before it stay omitted).
  void set_input(size_t index, ir::Value* v);
  // The element type of input 0 where its type says it, else float.
  at::ScalarType input_type() const;
  // `v` as a 0-d tensor of input 0's type (the float range's ends become inf in a narrower
  // float type); fails where an integer type cannot hold it.
  at::Tensor scalar_of_input_type(double v, const std::string& what) const;
  // The rank of `v` where its type says it, else -1.
  static int64_t rank_of(const ir::Value* v);
};

using Adapter = void (*)(Step&);
struct AdapterEntry {
  const char* op;
  int version;       // the step version - 1 <-> version
  Adapter up, down;  // nullptr: the step leaves the node as it is (then checks it)
};
const std::vector<AdapterEntry>& adapters();

}  // namespace tonnx::passes::opset
