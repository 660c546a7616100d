// Recurrent kernels: RNN, GRU, LSTM (ONNX gate orders: GRU z r h; LSTM i o f c; peepholes i o f).
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

using Act = std::function<at::Tensor(const at::Tensor&)>;

Act make_act(const ir::Node& n, const std::string& name, float alpha, float beta) {
  if (name == "Relu") return [](const at::Tensor& x) { return at::relu(x); };
  if (name == "Tanh") return [](const at::Tensor& x) { return at::tanh(x); };
  if (name == "Sigmoid") return [](const at::Tensor& x) { return at::sigmoid(x); };
  if (name == "Affine") return [alpha, beta](const at::Tensor& x) { return x * alpha + beta; };
  if (name == "LeakyRelu") return [alpha](const at::Tensor& x) { return at::leaky_relu(x, alpha); };
  if (name == "ThresholdedRelu")
    return [alpha](const at::Tensor& x) { return at::where(x > alpha, x, at::zeros_like(x)); };
  if (name == "ScaledTanh")
    return [alpha, beta](const at::Tensor& x) { return alpha * at::tanh(beta * x); };
  if (name == "HardSigmoid")
    return [alpha, beta](const at::Tensor& x) { return at::clamp(x * alpha + beta, 0, 1); };
  if (name == "Elu") return [alpha](const at::Tensor& x) { return at::elu(x, alpha); };
  if (name == "Softsign") return [](const at::Tensor& x) { return x / (1 + at::abs(x)); };
  if (name == "Softplus") return [](const at::Tensor& x) { return at::softplus(x); };
  kernel_fail(n, "unknown activation '" + name + "'");
}

struct RnnAttrs {
  int64_t hidden = 0, num_dirs = 1, layout = 0;
  bool reverse_only = false, linear_before_reset = false, input_forget = false;
  float clip = 0;
  std::vector<Act> acts;  // per direction: the op's activations, in order
};

RnnAttrs parse(const ir::Node& n, const std::vector<std::string>& defaults) {
  RnnAttrs a;
  a.hidden = n.attr_i("hidden_size", 0);
  std::string dir = n.attr_s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    kernel_fail(n, "direction must be forward, reverse or bidirectional; got " + dir);
  a.num_dirs = dir == "bidirectional" ? 2 : 1;
  a.reverse_only = dir == "reverse";
  a.layout = n.attr_i("layout", 0);
  a.linear_before_reset = n.attr_i("linear_before_reset", 0) != 0;
  a.input_forget = n.attr_i("input_forget", 0) != 0;
  a.clip = n.has_attr("clip") ? n.attr_f("clip", 0) : 0;
  std::vector<std::string> names;
  if (const ir::AttrValue* v = n.attr("activations")) names = v->strings();
  size_t per = defaults.size();
  if (names.empty())
    for (int64_t d = 0; d < a.num_dirs; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per * static_cast<size_t>(a.num_dirs))
    kernel_fail(n, "activations has " + std::to_string(names.size()) + " names; expected " +
                       std::to_string(per * a.num_dirs));
  std::vector<float> alphas = n.attr_floats("activation_alpha"),
                     betas = n.attr_floats("activation_beta");
  for (size_t i = 0; i < names.size(); ++i) {
    float dflt_a = names[i] == "LeakyRelu" ? 0.01f : names[i] == "HardSigmoid" ? 0.2f : 1.0f;
    float dflt_b = names[i] == "HardSigmoid" ? 0.5f : 0.0f;
    a.acts.push_back(make_act(n, names[i], i < alphas.size() ? alphas[i] : dflt_a,
                              i < betas.size() ? betas[i] : dflt_b));
  }
  return a;
}

enum class Cell { RNN, GRU, LSTM };

Tensors run_rnn(const ir::Node& n, const RnnAttrs& a, Cell cell, const Tensors& in) {
  at::Tensor X = in.at(0);
  if (a.layout) X = X.transpose(0, 1);
  const at::Tensor &W = in.at(1), &R = in.at(2);
  auto opt = [&](size_t i) { return in.size() > i && in[i].defined() ? in[i] : at::Tensor(); };
  at::Tensor B = opt(3), lens = opt(4), h0 = opt(5), c0 = opt(6), P = opt(7);
  if (h0.defined() && a.layout) h0 = h0.transpose(0, 1);
  if (c0.defined() && a.layout) c0 = c0.transpose(0, 1);
  int64_t T = X.size(0), N = X.size(1), H = a.hidden ? a.hidden : R.size(2);
  int64_t G = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
  size_t per = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
  std::vector<int64_t> seq_len(N, T);
  if (lens.defined()) seq_len = to_int_vector(lens);
  at::Tensor Y = at::zeros({T, a.num_dirs, N, H}, X.options());
  at::Tensor Yh = at::zeros({a.num_dirs, N, H}, X.options()), Yc = at::zeros_like(Yh);
  auto clip = [&](const at::Tensor& t) { return a.clip > 0 ? at::clamp(t, -a.clip, a.clip) : t; };
  for (int64_t d = 0; d < a.num_dirs; ++d) {
    const Act* acts = &a.acts[d * per];
    at::Tensor w = W[d], r = R[d];
    at::Tensor wb = B.defined() ? B[d].narrow(0, 0, G * H) : at::zeros({G * H}, X.options());
    at::Tensor rb = B.defined() ? B[d].narrow(0, G * H, G * H) : at::zeros({G * H}, X.options());
    at::Tensor h = h0.defined() ? h0[d] : at::zeros({N, H}, X.options());
    at::Tensor c = c0.defined() ? c0[d] : at::zeros({N, H}, X.options());
    bool rev = a.reverse_only || d == 1;
    for (int64_t step = 0; step < T; ++step) {
      int64_t t = rev ? T - 1 - step : step;
      at::Tensor xw = at::matmul(X[t], w.t()) + wb;
      at::Tensor hn, cn = c;
      if (cell == Cell::RNN) {
        hn = acts[0](clip(xw + at::matmul(h, r.t()) + rb));
      } else if (cell == Cell::GRU) {
        auto xs = xw.chunk(3, 1);
        auto rs = r.chunk(3, 0);
        auto rbs = rb.chunk(3, 0);
        at::Tensor z = acts[0](clip(xs[0] + at::matmul(h, rs[0].t()) + rbs[0]));
        at::Tensor rr = acts[0](clip(xs[1] + at::matmul(h, rs[1].t()) + rbs[1]));
        at::Tensor hh;
        if (a.linear_before_reset)
          hh = acts[1](clip(xs[2] + rr * (at::matmul(h, rs[2].t()) + rbs[2])));
        else
          hh = acts[1](clip(xs[2] + at::matmul(rr * h, rs[2].t()) + rbs[2]));
        hn = (1 - z) * hh + z * h;
      } else {
        at::Tensor g = xw + at::matmul(h, r.t()) + rb;
        auto gs = g.chunk(4, 1);  // i o f c
        at::Tensor pi, po, pf;
        if (P.defined()) {
          auto ps = P[d].chunk(3, 0);
          pi = ps[0], po = ps[1], pf = ps[2];
        }
        at::Tensor i = gs[0] + (P.defined() ? pi * c : at::zeros_like(c));
        at::Tensor f = gs[2] + (P.defined() ? pf * c : at::zeros_like(c));
        i = acts[0](clip(i));
        f = a.input_forget ? 1 - i : acts[0](clip(f));
        at::Tensor cc = acts[1](clip(gs[3]));
        cn = f * c + i * cc;
        at::Tensor o = acts[0](clip(gs[1] + (P.defined() ? po * cn : at::zeros_like(cn))));
        hn = o * acts[2](cn);
      }
      // Past a batch entry's sequence length its state stays and its output is 0.
      at::Tensor live = at::tensor(seq_len, at::kLong).gt(t).unsqueeze(1).to(X.scalar_type());
      h = hn * live + h * (1 - live);
      c = cn * live + c * (1 - live);
      Y[t][d].copy_(hn * live);
    }
    Yh[d].copy_(h);
    Yc[d].copy_(c);
  }
  if (a.layout) {
    Y = Y.permute({2, 0, 1, 3}).contiguous();
    Yh = Yh.transpose(0, 1).contiguous();
    Yc = Yc.transpose(0, 1).contiguous();
  }
  (void)n;
  return {Y, Yh, Yc};
}

KernelFactory rnn_factory(Cell cell, std::vector<std::string> defaults) {
  return [cell, defaults](const KernelSpec& s) -> Kernel {
    const ir::Node& n = s.node;
    RnnAttrs a = parse(n, defaults);
    return [&n, a, cell](const Tensors& in) -> Tensors { return run_rnn(n, a, cell, in); };
  };
}

TONNX_KERNEL("RNN", 1, kAnyOpset, rnn_factory(Cell::RNN, {"Tanh"}));
TONNX_KERNEL("GRU", 1, kAnyOpset, rnn_factory(Cell::GRU, {"Sigmoid", "Tanh"}));
TONNX_KERNEL("LSTM", 1, kAnyOpset, rnn_factory(Cell::LSTM, {"Sigmoid", "Tanh", "Tanh"}));

}  // namespace
}  // namespace tonnx::backend
