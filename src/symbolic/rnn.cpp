// Recurrent layers: aten::lstm / gru / rnn_tanh / rnn_relu -> ONNX LSTM / GRU / RNN, one
// ONNX node per layer. PyTorch orders gates (i, f, g, o) for LSTM and (r, z, n) for GRU;
// ONNX wants (i, o, f, c) and (z, r, h). Weight reordering is emitted as Split/Concat on
// the parameters, which constant folding turns into new initializers.
#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

struct RnnKind {
  const char* onnx_op;
  int gates;
  std::vector<int> order;  // ONNX gate k takes PyTorch gate order[k]
  const char* activation;  // RNN only
};

int64_t dim_of(SymbolicContext& g, Value* v, size_t d) {
  if (!v->type() || !v->type()->shape || v->type()->shape->size() <= d ||
      !(*v->type()->shape)[d].value)
    g.fail("the shape of an RNN parameter is not known");
  return *(*v->type()->shape)[d].value;
}

Value* reorder_gates(SymbolicContext& g, Value* w, const RnnKind& k, int64_t hidden) {
  if (k.gates == 1) return w;
  std::vector<int64_t> sizes(k.gates, hidden);
  std::vector<Value*> parts;
  if (g.opset() >= 13)
    parts = g.op_n("Split", {w, g.constant_ints(sizes)}, {{"axis", int64_t{0}}}, k.gates);
  else
    parts = g.op_n("Split", {w}, {{"axis", int64_t{0}}, {"split", sizes}}, k.gates);
  std::vector<Value*> ordered;
  for (int i : k.order) ordered.push_back(parts[i]);
  return g.op("Concat", ordered, {{"axis", int64_t{0}}});
}

Value* stack_dirs(SymbolicContext& g, const std::vector<Value*>& per_dir) {
  std::vector<Value*> u;
  for (Value* v : per_dir) u.push_back(unsqueeze(g, v, {0}));
  return u.size() == 1 ? u[0] : g.op("Concat", u, {{"axis", int64_t{0}}});
}

Value* slice0(SymbolicContext& g, Value* x, int64_t start, int64_t end) {
  if (g.opset() < 10)
    return g.op("Slice", {x},
                {{"axes", ir::Ints{0}}, {"starts", ir::Ints{start}}, {"ends", ir::Ints{end}}});
  return g.op("Slice", {x, g.constant_ints({start}), g.constant_ints({end}), g.constant_ints({0})});
}

// input, hx (Tensor for GRU/RNN, Tensor[] {h0, c0} for LSTM), params, has_biases,
// num_layers, dropout, train, bidirectional, batch_first
Outputs rnn(SymbolicContext& g, const RnnKind& k, bool lstm) {
  Value* x = g.input(0);
  std::vector<Value*> hx = lstm ? g.inputs_list(1) : std::vector<Value*>{g.input(1)};
  std::vector<Value*> params = g.inputs_list(2);
  bool has_biases = g.b(3);
  int64_t layers = g.i(4);
  bool bidirectional = g.b(7), batch_first = g.b(8);
  int64_t dirs = bidirectional ? 2 : 1;
  size_t per = has_biases ? 4 : 2;
  if (params.size() != static_cast<size_t>(layers * dirs) * per)
    g.fail("expected " + std::to_string(layers * dirs * per) + " parameter tensors, got " +
           std::to_string(params.size()) + (lstm ? " (LSTM with proj_size is not supported)" : ""));
  int64_t hidden = dim_of(g, params[1], 1);
  if (batch_first) x = g.op("Transpose", {x}, {{"perm", ir::Ints{1, 0, 2}}});
  std::vector<Value*> h_out, c_out;
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<Value*> ws, rs, bs;
    for (int64_t d = 0; d < dirs; ++d) {
      size_t base = static_cast<size_t>((l * dirs + d)) * per;
      ws.push_back(reorder_gates(g, params[base], k, hidden));
      rs.push_back(reorder_gates(g, params[base + 1], k, hidden));
      if (has_biases)
        bs.push_back(g.op("Concat",
                          {reorder_gates(g, params[base + 2], k, hidden),
                           reorder_gates(g, params[base + 3], k, hidden)},
                          {{"axis", int64_t{0}}}));
    }
    std::vector<Value*> in{x, stack_dirs(g, ws), stack_dirs(g, rs)};
    in.push_back(has_biases ? stack_dirs(g, bs) : nullptr);
    in.push_back(nullptr);  // sequence_lens
    in.push_back(slice0(g, hx[0], l * dirs, (l + 1) * dirs));
    if (lstm) in.push_back(slice0(g, hx[1], l * dirs, (l + 1) * dirs));
    std::vector<ir::Attr> attrs{{"hidden_size", hidden},
                                {"direction", bidirectional ? "bidirectional" : "forward"}};
    if (k.activation) attrs.push_back({"activations", ir::Strings(dirs, k.activation)});
    if (std::string(k.onnx_op) == "GRU") attrs.push_back({"linear_before_reset", int64_t{1}});
    auto outs = g.op_n(k.onnx_op, in, attrs, lstm ? 3 : 2);
    // Y: [seq, dirs, batch, hidden] -> [seq, batch, dirs * hidden]
    Value* y = g.op("Transpose", {outs[0]}, {{"perm", ir::Ints{0, 2, 1, 3}}});
    x = g.op("Reshape", {y, g.constant_ints({0, 0, -1})});
    h_out.push_back(outs[1]);
    if (lstm) c_out.push_back(outs[2]);
  }
  Value* y = batch_first ? g.op("Transpose", {x}, {{"perm", ir::Ints{1, 0, 2}}}) : x;
  auto cat0 = [&](const std::vector<Value*>& v) {
    return v.size() == 1 ? v[0] : g.op("Concat", v, {{"axis", int64_t{0}}});
  };
  if (lstm) return {y, cat0(h_out), cat0(c_out)};
  return {y, cat0(h_out)};
}

const RnnKind kLstm{"LSTM", 4, {0, 3, 1, 2}, nullptr};
const RnnKind kGru{"GRU", 3, {1, 0, 2}, nullptr};
const RnnKind kRnnTanh{"RNN", 1, {0}, "Tanh"};
const RnnKind kRnnRelu{"RNN", 1, {0}, "Relu"};

TONNX_SYMBOLIC("aten::lstm", 9, [](SymbolicContext& g) { return rnn(g, kLstm, true); });
TONNX_SYMBOLIC("aten::gru", 9, [](SymbolicContext& g) { return rnn(g, kGru, false); });
TONNX_SYMBOLIC("aten::rnn_tanh", 9, [](SymbolicContext& g) { return rnn(g, kRnnTanh, false); });
TONNX_SYMBOLIC("aten::rnn_relu", 9, [](SymbolicContext& g) { return rnn(g, kRnnRelu, false); });

}  // namespace
}  // namespace tonnx::sym
