// Recurrent layers: aten::lstm / gru / rnn_tanh / rnn_relu -> ONNX LSTM / GRU / RNN, one
// ONNX node per layer. PyTorch orders gates (i, f, g, o) for LSTM and (r, z, n) for GRU;
// ONNX wants (i, o, f, c) and (z, r, h). Weight reordering is emitted as Split/Concat on
// the parameters, which constant folding turns into new initializers.
#include <torch/csrc/jit/ir/ir.h>

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
// num_layers, dropout, train, bidirectional, batch_first; or, for a packed sequence (the
// .data overload): data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
// bidirectional. A packed sequence is exported as the padded time-major input and the
// sequence lengths (see _pack_padded_sequence below): ONNX's sequence_lens.
Outputs rnn(SymbolicContext& g, const RnnKind& k, bool lstm) {
  const c10::FunctionSchema* schema = g.node()->maybeSchema();
  const bool packed = schema && schema->overload_name() == "data";
  const size_t a = packed ? 1 : 0;  // the argument shift of the .data overload
  Value* x = g.input(0);
  Value* lengths = packed ? g.cast(g.input(1), at::kInt) : nullptr;
  std::vector<Value*> hx = lstm ? g.inputs_list(1 + a) : std::vector<Value*>{g.input(1 + a)};
  std::vector<Value*> params = g.inputs_list(2 + a);
  bool has_biases = g.b(3 + a);
  int64_t layers = g.i(4 + a);
  bool bidirectional = g.b(7 + a), batch_first = packed ? false : g.b(8);
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
    in.push_back(lengths);  // sequence_lens: none, or the packed sequence's lengths
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
  // A packed result is the padded [T, B, dirs * hidden] output, not torch's [sum, ...].
  if (packed)
    y->set_type(
        ir::TensorType{ir::dtype_from_scalar_type(g.scalar_type(0)), std::vector<ir::Dim>(3)});
  auto cat0 = [&](const std::vector<Value*>& v) {
    return v.size() == 1 ? v[0] : g.op("Concat", v, {{"axis", int64_t{0}}});
  };
  if (lstm) return {y, cat0(h_out), cat0(c_out)};
  return {y, cat0(h_out)};
}

// _pack_padded_sequence(input, lengths, batch_first) -> (data, batch_sizes). torch packs the
// valid steps into [sum(lengths), F]; ONNX's recurrent ops take the padded time-major input
// and the lengths instead, so that is what "data" and "batch_sizes" hold here. They are read
// only by the recurrent ops' .data overloads and _pad_packed_sequence (as with torch.onnx).
TONNX_SYMBOLIC("aten::_pack_padded_sequence", 9,
               [](SymbolicContext& g, Value* x, Value* lengths, bool batch_first) -> Outputs {
                 if (batch_first)
                   x = g.op("Transpose", {x}, {{"perm", ir::Ints{1, 0, 2}}});
                 else
                   x = g.op("Identity", {x});
                 x->set_type(ir::TensorType{ir::dtype_from_scalar_type(g.scalar_type(0)),
                                            std::vector<ir::Dim>(3)});
                 Value* n = g.cast(lengths, at::kLong);
                 if (n == lengths) n = g.op("Identity", {lengths});
                 n->set_type(ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>(1)});
                 return {x, n};
               });

// _pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length) ->
// (output, lengths): the padded output cut to the longest sequence (or cut or padded to
// total_length), steps past each length set to padding_value (the recurrent ops leave zeros
// there). torch refuses a total_length below the longest sequence; at run time ONNX cannot
// refuse, so such lengths are cut (torch.onnx ignores total_length altogether).
TONNX_SYMBOLIC("aten::_pad_packed_sequence", 11, [](SymbolicContext& g) -> Outputs {
  Value* y = g.input(0);
  Value* lengths = g.cast(g.input(1), at::kLong);
  bool batch_first = g.b(2);
  double pad = g.f(3);
  at::ScalarType dt = g.scalar_type(0);
  Value* longest = reduce(g, "ReduceMax", lengths, std::vector<int64_t>{0}, true);  // [1]
  if (g.is_constant(4)) {
    int64_t total = g.i(4);
    if (total < 0) g.fail("total_length must not be negative, got " + std::to_string(total));
    longest = g.constant_ints({total});
    y = g.op("Slice", {y, g.constant_ints({0}), longest, g.constant_ints({0})});
    // Steps past the input's own length: [0, total - T] along time, padding_value.
    Value* steps = g.op("Slice", {g.op("Shape", {y}), g.constant_ints({0}), g.constant_ints({1})});
    Value* more = g.op("Sub", {longest, steps});
    Value* zero = g.constant_ints({0});
    Value* pads = g.op("Concat", {zero, zero, zero, more, zero, zero}, {{"axis", int64_t{0}}});
    y = g.op("Pad", {y, pads, g.constant_scalar(pad, dt)});
  } else {
    y = g.op("Slice", {y, g.constant_ints({0}), longest, g.constant_ints({0})});
  }
  if (pad != 0.0) {
    Value* t = g.op("Range", {g.constant(at::scalar_tensor(0, at::kLong)), squeeze(g, longest, {0}),
                              g.constant(at::scalar_tensor(1, at::kLong))});
    Value* valid = g.op("Less", {unsqueeze(g, t, {1}), unsqueeze(g, lengths, {0})});  // [T, B]
    y = g.op("Where", {unsqueeze(g, valid, {2}), y, g.constant_scalar(pad, dt)});
  }
  if (batch_first) y = g.op("Transpose", {y}, {{"perm", ir::Ints{1, 0, 2}}});
  y->set_type(ir::TensorType{ir::dtype_from_scalar_type(dt), std::vector<ir::Dim>(3)});
  return {y, lengths};
});

const RnnKind kLstm{"LSTM", 4, {0, 3, 1, 2}, nullptr};
const RnnKind kGru{"GRU", 3, {1, 0, 2}, nullptr};
const RnnKind kRnnTanh{"RNN", 1, {0}, "Tanh"};
const RnnKind kRnnRelu{"RNN", 1, {0}, "Relu"};

TONNX_SYMBOLIC("aten::lstm", 9, [](SymbolicContext& g) { return rnn(g, kLstm, true); });
TONNX_SYMBOLIC("aten::gru", 9, [](SymbolicContext& g) { return rnn(g, kGru, false); });
TONNX_SYMBOLIC("aten::rnn_tanh", 9, [](SymbolicContext& g) { return rnn(g, kRnnTanh, false); });
TONNX_SYMBOLIC("aten::rnn_relu", 9, [](SymbolicContext& g) { return rnn(g, kRnnRelu, false); });

// lstm_cell(input [B, I], hx {h, c}, w_ih [4H, I], w_hh [4H, H], b_ih?, b_hh?) -> (h', c'):
// one step, with PyTorch's gate order (i, f, g, o).
TONNX_SYMBOLIC("aten::lstm_cell", 9, [](SymbolicContext& g) -> Outputs {
  std::vector<Value*> hx = g.inputs_list(1);
  if (hx.size() != 2)
    g.fail("lstm_cell's hx must be [h, c], got " + std::to_string(hx.size()) + " tensors");
  int64_t four_h = g.sizes(2).at(0);
  if (four_h % 4 != 0) g.fail("w_ih's first dim " + std::to_string(four_h) + " is not 4 * hidden");
  auto matmul_t = [&](Value* a, Value* w) {
    return g.op("MatMul", {a, g.op("Transpose", {w}, {{"perm", ir::Ints{1, 0}}})});
  };
  Value* gates = g.op("Add", {matmul_t(g.input(0), g.input(2)), matmul_t(hx[0], g.input(3))});
  if (g.num_inputs() > 4 && !g.is_none(4)) gates = g.op("Add", {gates, g.input(4)});
  if (g.num_inputs() > 5 && !g.is_none(5)) gates = g.op("Add", {gates, g.input(5)});
  std::vector<Value*> p = split_sizes(g, gates, std::vector<int64_t>(4, four_h / 4), -1);
  Value* i = g.op("Sigmoid", {p[0]});
  Value* f = g.op("Sigmoid", {p[1]});
  Value* c = g.op("Add", {g.op("Mul", {f, hx[1]}), g.op("Mul", {i, g.op("Tanh", {p[2]})})});
  Value* h = g.op("Mul", {g.op("Sigmoid", {p[3]}), g.op("Tanh", {c})});
  return {h, c};
});

}  // namespace
}  // namespace tonnx::sym
