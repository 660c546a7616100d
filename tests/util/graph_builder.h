// A graph under construction for backend tests (inputs, initializers, nodes and outputs), and
// the checks those tests share.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include <string>
#include <vector>

#include "expect_close.h"
#include "tonnx/compare.h"
#include "tonnx/ir.h"

namespace tonnx::test {

struct GraphBuilder {
  ir::Model m;
  ir::Graph& g = *m.graph;
  int count = 0;
  // Float scalars from scalar(): initializers, or Constant nodes as exporters write them.
  bool constant_nodes = false;

  GraphBuilder() { m.opsets = {{"", 17}}; }
  ir::Value* in(const std::string& name) { return g.add_input(name); }
  ir::Value* init(const std::string& name, at::Tensor t) { return g.add_initializer(name, t); }
  ir::Value* op(const std::string& type, std::vector<ir::Value*> ins,
                std::vector<ir::Attr> a = {}) {
    ir::Value* v = g.add_node(type, std::move(ins), std::move(a))->output();
    v->set_name("v" + std::to_string(++count));
    return v;
  }
  void out(ir::Value* v, const std::string& name) {
    v->set_name(name);
    g.add_output(v);
  }
  ir::Value* scalar(double v) {
    at::Tensor t = torch::tensor(static_cast<float>(v));
    if (constant_nodes) return op("Constant", {}, {{"value", ir::AttrValue(t)}});
    return init("c" + std::to_string(++count), t);
  }
};

inline bool has(const std::vector<std::string>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

}  // namespace tonnx::test
