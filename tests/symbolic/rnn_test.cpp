// Recurrent layers (src/symbolic/rnn.cpp): a two-layer bidirectional batch-first LSTM with
// initial states, a two-layer GRU without, a ReLU RNN without bias, and RNN's default tanh.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager.
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class RnnSymbolic : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, RnnSymbolic, ::testing::Values(11, 13, 17));
// The recurrent layers have an opset-9 form too.
class RnnSymbolic9 : public RnnSymbolic {};
INSTANTIATE_TEST_SUITE_P(Opsets, RnnSymbolic9, ::testing::Values(9, 12, 17));

TEST_P(RnnSymbolic9, RecurrentLayers) {
  torch::nn::LSTM lstm(
      torch::nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true).batch_first(true));
  torch::nn::GRU gru(torch::nn::GRUOptions(4, 5).num_layers(2));
  torch::nn::RNN rnn(torch::nn::RNNOptions(4, 3).nonlinearity(torch::kReLU).bias(false));
  lstm->eval();
  gru->eval();
  rnn->eval();
  Tensor x = torch::randn({3, 7, 4});
  ExportOptions opt;
  opt.opset_version = opset();
  std::string suffix = std::to_string(opset());
  Traceable t_lstm{lstm.ptr(), [lstm](const std::vector<Tensor>& in) mutable {
                     auto [y, hc] = lstm->forward(in[0], std::make_tuple(in[1], in[2]));
                     return std::vector<Tensor>{y, std::get<0>(hc), std::get<1>(hc)};
                   }};
  expect_export_matches(t_lstm, {x, torch::randn({4, 3, 6}), torch::randn({4, 3, 6})}, opt,
                        "lstm_bidir_batch_first" + suffix);
  expect_export_matches(make_traceable(gru), {x}, opt, "gru_no_state" + suffix);
  Traceable t_rnn{rnn.ptr(), [rnn](const std::vector<Tensor>& in) mutable {
                    auto [y, hn] = rnn->forward(in[0], in[1]);
                    return std::vector<Tensor>{y, hn};
                  }};
  expect_export_matches(t_rnn, {x, torch::randn({1, 7, 3})}, opt, "rnn_relu_nobias" + suffix);
}

TEST_P(RnnSymbolic, RnnTanhDefault) {
  torch::nn::RNN rnn(torch::nn::RNNOptions(3, 4).num_layers(2));
  rnn->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  expect_export_matches(make_traceable(rnn), {torch::randn({5, 2, 3})}, opt,
                        "rnn_tanh" + std::to_string(opset()));
}

}  // namespace
}  // namespace tonnx::test
