// The C++ model zoo: the seed's models written with LibTorch's C++ frontend, with the same
// structure and parameter order as their PyTorch originals. Weights are random, seeded.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include <functional>
#include <string>
#include <vector>

#include "tonnx/export.h"

namespace tonnx::models {

struct AlexNetImpl : torch::nn::Module {
  explicit AlexNetImpl(int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Sequential features{nullptr}, classifier{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool{nullptr};
};
TORCH_MODULE(AlexNet);

struct VGGImpl : torch::nn::Module {
  // cfg: channel counts, 0 for a max pool ("M" in torchvision).
  VGGImpl(const std::vector<int64_t>& cfg, bool batch_norm, int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Sequential features{nullptr}, classifier{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool{nullptr};
};
TORCH_MODULE(VGG);
VGG vgg11();
VGG vgg16();
VGG vgg16_bn();

struct ResNetImpl : torch::nn::Module {
  // bottleneck: Bottleneck blocks (ResNet-50) instead of BasicBlocks (ResNet-18).
  ResNetImpl(bool bottleneck, const std::vector<int64_t>& layers, int64_t num_classes = 1000);
  torch::Tensor forward(torch::Tensor x);
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::ReLU relu{nullptr};
  torch::nn::MaxPool2d maxpool{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet);
ResNet resnet18();
ResNet resnet50();

struct ZooEntry {
  std::string name;
  std::string description;
  std::vector<std::vector<int64_t>> input_shapes;  // default example inputs
  std::vector<at::ScalarType> input_dtypes;
  // Builds the model (eval mode, weights from `seed`) ready to trace.
  std::function<Traceable(uint64_t seed)> make;
  // Example inputs for the given shapes (random, seeded); token models draw valid ids.
  std::function<std::vector<torch::Tensor>(const std::vector<std::vector<int64_t>>&, uint64_t seed)>
      inputs;
  // The parameter count when building the model to count them is costly (0: build and count).
  int64_t parameters;
};

const std::vector<ZooEntry>& zoo();
// Throws std::invalid_argument naming the known models.
const ZooEntry& find_model(const std::string& name);
int64_t parameter_count(const Traceable& t);
int64_t parameter_count(const ZooEntry& e);
// "10x3x224x224", the form `tonnx export --input-shape` takes.
std::string shape_string(const std::vector<int64_t>& shape);
// docs/models.md: the zoo as a table (name, default inputs, parameters, description).
std::string zoo_markdown();

// Variance-preserving random weights (Kaiming normal, fan-in) for every conv and linear
// layer, so that outputs stay O(1) through deep nets and differences are meaningful.
void init_weights(torch::nn::Module& m);

// Gives BatchNorm running statistics and affine parameters non-trivial random values, so
// that an exported model is tested on more than the identity normalization.
void randomize_batchnorm(torch::nn::Module& m);

}  // namespace tonnx::models
