// One ONNX node as a model, run on tonnx's backend and checked by ONNX Runtime (the oracle for
// what libonnx 1.12 does not know: opsets 18 to 23, converted models): the node's inputs are
// made by the test, tonnx's outputs are written as the test data ONNX Runtime must reproduce.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "graph_builder.h"
#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace tonnx::test {

// One node of `op` at `opset` on `inputs` (an undefined tensor: an empty optional input).
struct NodeCase {
  NodeCase(std::string op, int opset, std::vector<at::Tensor> inputs,
           std::vector<ir::Attr> attrs = {}, size_t outputs = 1)
      : op(std::move(op)),
        opset(opset),
        inputs(std::move(inputs)),
        attrs(std::move(attrs)),
        outputs(outputs) {}
  std::string op;
  int opset;
  std::vector<at::Tensor> inputs;
  std::vector<ir::Attr> attrs;
  size_t outputs;
  // Inputs given as initializers (constants the model holds), not fed at run time.
  std::vector<size_t> constants;
  NodeCase& with_constants(std::vector<size_t> c) {
    constants = std::move(c);
    return *this;
  }
  bool is_constant(size_t i) const {
    return std::find(constants.begin(), constants.end(), i) != constants.end();
  }
};

inline ir::Model node_model(const NodeCase& c) {
  GraphBuilder b;
  b.m.opsets = {{"", c.opset}};
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) {
      in.push_back(nullptr);
      continue;
    }
    if (c.is_constant(i)) {
      in.push_back(b.init("c" + std::to_string(i), c.inputs[i]));
      continue;
    }
    ir::Value* v = b.in("x" + std::to_string(i));
    v->set_type(ir::TensorType::from_tensor(c.inputs[i]));
    in.push_back(v);
  }
  ir::Node* n = b.g.add_node(c.op, in, c.attrs, c.outputs);
  for (size_t k = 0; k < c.outputs; ++k) b.out(n->output(k), "y" + std::to_string(k));
  return std::move(b.m);
}

inline std::vector<at::Tensor> defined_inputs(const NodeCase& c) {
  std::vector<at::Tensor> r;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].defined() && !c.is_constant(i)) r.push_back(c.inputs[i]);
  return r;
}

// Runs `m` on tonnx's backend, then has ONNX Runtime reproduce `want` (default: tonnx's
// outputs, which then must equal `want` too where given); returns tonnx's outputs.
inline std::vector<at::Tensor> run_model_on_both(const ir::Model& m,
                                                 const std::vector<at::Tensor>& in,
                                                 const std::string& name, double rtol = 1e-5,
                                                 double atol = 1e-6,
                                                 std::vector<at::Tensor> want = {}) {
  std::vector<at::Tensor> out = backend::prepare(model_to_proto(m), "CPU").run(in);
  EXPECT_EQ(out.size(), m.graph->outputs().size());
  if (!want.empty()) {
    EXPECT_EQ(want.size(), out.size());
    for (size_t k = 0; k < out.size() && k < want.size(); ++k)
      expect_close(out[k], want[k], rtol, atol);
  } else {
    want = out;
  }
  for (size_t k = 0; k < want.size() && k < m.graph->outputs().size(); ++k) {
    ir::TensorType t;
    t.dtype = ir::dtype_from_scalar_type(want[k].scalar_type());
    m.graph->outputs()[k]->set_type(t);
  }
  std::string dir = temp_dir(name);
  std::string path = dir + "/model.onnx";
  save_model_proto(model_to_proto(m), path);
  TestDataSet set;
  set.inputs = in;
  set.outputs = want;
  write_test_data(dir, set);
  RunResult r = run_ort(path, dir, rtol, atol);
  EXPECT_EQ(r.exit_code, 0) << name << ": ONNX Runtime differs from tonnx:\n" << r.output;
  return out;
}

// One node on both runtimes (run_model_on_both).
inline std::vector<at::Tensor> run_on_both(const NodeCase& c, const std::string& name,
                                           double rtol = 1e-5, double atol = 1e-6) {
  return run_model_on_both(node_model(c), defined_inputs(c),
                           c.op + "_opset" + std::to_string(c.opset) + "_" + name, rtol, atol);
}

}  // namespace tonnx::test
