// The seed's models beyond AlexNet/ResNet/VGG (see tonnx/models.h for the zoo registry).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/pixelshuffle.h>
#include <torch/nn/modules/rnn.h>

#include "tonnx/export.h"

namespace tonnx::models {

struct DCGANGeneratorImpl : torch::nn::Module {
  DCGANGeneratorImpl(int64_t nz = 100, int64_t ngf = 64, int64_t nc = 3);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Sequential main{nullptr};
};
TORCH_MODULE(DCGANGenerator);

struct DCGANDiscriminatorImpl : torch::nn::Module {
  DCGANDiscriminatorImpl(int64_t nc = 3, int64_t ndf = 64);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Sequential main{nullptr};
};
TORCH_MODULE(DCGANDiscriminator);

struct SuperResolutionImpl : torch::nn::Module {
  explicit SuperResolutionImpl(int64_t upscale_factor = 3);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::ReLU relu{nullptr};
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, conv4{nullptr};
  torch::nn::PixelShuffle pixel_shuffle{nullptr};
};
TORCH_MODULE(SuperResolution);

enum class RnnType { LSTM, GRU, RNN_TANH, RNN_RELU };

// forward({tokens [seq, batch] int64, h0 [nlayers, batch, nhid][, c0]}) ->
// {log_softmax [seq*batch, ntoken], h_n[, c_n]}
struct WordLanguageModelImpl : torch::nn::Module {
  WordLanguageModelImpl(RnnType type, int64_t ntoken = 33278, int64_t ninp = 200,
                        int64_t nhid = 200, int64_t nlayers = 2, double dropout = 0.2);
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& inputs);
  torch::nn::Dropout drop{nullptr};
  torch::nn::Embedding encoder{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::GRU gru{nullptr};
  torch::nn::RNN rnn{nullptr};
  torch::nn::Linear decoder{nullptr};

 private:
  RnnType type_;
  int64_t ntoken_;
};
TORCH_MODULE(WordLanguageModel);

struct DenseNetImpl : torch::nn::Module {
  DenseNetImpl(int64_t growth_rate = 32, std::vector<int64_t> block_config = {6, 12, 24, 16},
               int64_t num_init_features = 64, int64_t bn_size = 4, int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Sequential features{nullptr};
  torch::nn::Linear classifier{nullptr};
};
TORCH_MODULE(DenseNet);

struct InceptionV3Impl : torch::nn::Module {
  explicit InceptionV3Impl(int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(InceptionV3);

}  // namespace tonnx::models
