// The seed's other models: DCGAN (pytorch/examples), DenseNet-121 and Inception v3
// (torchvision), SuperResolution (the ESPCN net of pytorch/examples), and
// word_language_model (pytorch/examples: Embedding, RNN, Linear). Same structure, module
// names and parameter order as the originals.
#include <torch/torch.h>

#include "tonnx/models.h"
#include "tonnx/seed_models.h"

namespace tonnx::models {
namespace nn = torch::nn;

// ---------------- DCGAN ----------------
DCGANGeneratorImpl::DCGANGeneratorImpl(int64_t nz, int64_t ngf, int64_t nc) {
  auto up = [](int64_t in, int64_t out, int64_t s, int64_t p) {
    return nn::ConvTranspose2d(
        nn::ConvTranspose2dOptions(in, out, 4).stride(s).padding(p).bias(false));
  };
  main = register_module(
      "main", nn::Sequential(up(nz, ngf * 8, 1, 0), nn::BatchNorm2d(ngf * 8), nn::ReLU(true),
                             up(ngf * 8, ngf * 4, 2, 1), nn::BatchNorm2d(ngf * 4), nn::ReLU(true),
                             up(ngf * 4, ngf * 2, 2, 1), nn::BatchNorm2d(ngf * 2), nn::ReLU(true),
                             up(ngf * 2, ngf, 2, 1), nn::BatchNorm2d(ngf), nn::ReLU(true),
                             up(ngf, nc, 2, 1), nn::Tanh()));
}
torch::Tensor DCGANGeneratorImpl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  return main->forward(x);
}

DCGANDiscriminatorImpl::DCGANDiscriminatorImpl(int64_t nc, int64_t ndf) {
  auto down = [](int64_t in, int64_t out, int64_t s, int64_t p) {
    return nn::Conv2d(nn::Conv2dOptions(in, out, 4).stride(s).padding(p).bias(false));
  };
  auto lrelu = [] {
    return nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2).inplace(true));
  };
  main = register_module(
      "main",
      nn::Sequential(down(nc, ndf, 2, 1), lrelu(), down(ndf, ndf * 2, 2, 1),
                     nn::BatchNorm2d(ndf * 2), lrelu(), down(ndf * 2, ndf * 4, 2, 1),
                     nn::BatchNorm2d(ndf * 4), lrelu(), down(ndf * 4, ndf * 8, 2, 1),
                     nn::BatchNorm2d(ndf * 8), lrelu(), down(ndf * 8, 1, 1, 0), nn::Sigmoid()));
}
torch::Tensor DCGANDiscriminatorImpl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  return main->forward(x).view({-1, 1}).squeeze(1);
}

// ---------------- SuperResolution ----------------
SuperResolutionImpl::SuperResolutionImpl(int64_t upscale_factor) {
  relu = register_module("relu", nn::ReLU());
  conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 64, 5).padding(2)));
  conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(64, 64, 3).padding(1)));
  conv3 = register_module("conv3", nn::Conv2d(nn::Conv2dOptions(64, 32, 3).padding(1)));
  conv4 = register_module(
      "conv4", nn::Conv2d(nn::Conv2dOptions(32, upscale_factor * upscale_factor, 3).padding(1)));
  pixel_shuffle = register_module("pixel_shuffle", nn::PixelShuffle(upscale_factor));
}
torch::Tensor SuperResolutionImpl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  x = relu->forward(conv1->forward(x));
  x = relu->forward(conv2->forward(x));
  x = relu->forward(conv3->forward(x));
  return pixel_shuffle->forward(conv4->forward(x));
}

// ---------------- word_language_model ----------------
WordLanguageModelImpl::WordLanguageModelImpl(RnnType type, int64_t ntoken, int64_t ninp,
                                             int64_t nhid, int64_t nlayers, double dropout)
    : type_(type), ntoken_(ntoken) {
  drop = register_module("drop", nn::Dropout(dropout));
  encoder = register_module("encoder", nn::Embedding(ntoken, ninp));
  switch (type) {
    case RnnType::LSTM:
      lstm = register_module(
          "rnn", nn::LSTM(nn::LSTMOptions(ninp, nhid).num_layers(nlayers).dropout(dropout)));
      break;
    case RnnType::GRU:
      gru = register_module(
          "rnn", nn::GRU(nn::GRUOptions(ninp, nhid).num_layers(nlayers).dropout(dropout)));
      break;
    case RnnType::RNN_TANH:
    case RnnType::RNN_RELU:
      rnn = register_module(
          "rnn", nn::RNN(nn::RNNOptions(ninp, nhid)
                             .num_layers(nlayers)
                             .dropout(dropout)
                             .nonlinearity(type == RnnType::RNN_TANH
                                               ? nn::RNNOptions::nonlinearity_t(torch::kTanh)
                                               : nn::RNNOptions::nonlinearity_t(torch::kReLU))));
      break;
  }
  decoder = register_module("decoder", nn::Linear(nhid, ntoken));
}

std::vector<torch::Tensor> WordLanguageModelImpl::forward(const std::vector<torch::Tensor>& in) {
  ScopeGuard scope(this);
  torch::Tensor emb = drop->forward(encoder->forward(in.at(0)));
  torch::Tensor output;
  std::vector<torch::Tensor> hidden;
  if (type_ == RnnType::LSTM) {
    auto [out, hc] = lstm->forward(emb, std::make_tuple(in.at(1), in.at(2)));
    output = out;
    hidden = {std::get<0>(hc), std::get<1>(hc)};
  } else if (type_ == RnnType::GRU) {
    auto [out, h] = gru->forward(emb, in.at(1));
    output = out;
    hidden = {h};
  } else {
    auto [out, h] = rnn->forward(emb, in.at(1));
    output = out;
    hidden = {h};
  }
  output = drop->forward(output);
  torch::Tensor decoded = decoder->forward(output).view({-1, ntoken_});
  std::vector<torch::Tensor> result{torch::log_softmax(decoded, 1)};
  result.insert(result.end(), hidden.begin(), hidden.end());
  return result;
}

}  // namespace tonnx::models
