// A graph under construction for backend tests (inputs, initializers, nodes and outputs), and
// the checks those tests share.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include <string>
#include <vector>

#include "expect_close.h"
#include "tonnx/backend.h"
#include "tonnx/compare.h"
#include "tonnx/ir.h"
#include "tonnx/proto.h"

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

// One node of `op` at `opset` on graph inputs x0, x1, ... (one per tensor of `inputs`), with
// `outputs` outputs, prepared on tonnx's backend (through the model file's form) and run.
inline std::vector<at::Tensor> run_one_node(const std::string& op, std::vector<at::Tensor> inputs,
                                            std::vector<ir::Attr> attrs, size_t outputs = 1,
                                            int opset = 17) {
  GraphBuilder g;
  g.m.opsets = {{"", opset}};
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < inputs.size(); ++i) in.push_back(g.in("x" + std::to_string(i)));
  ir::Node* n = g.g.add_node(op, in, std::move(attrs), outputs);
  for (size_t k = 0; k < outputs; ++k) g.out(n->output(k), "y" + std::to_string(k));
  return backend::prepare(model_to_proto(g.m), "CPU").run(inputs);
}

inline bool has(const std::vector<std::string>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

}  // namespace tonnx::test
