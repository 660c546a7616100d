// AlexNet, VGG and ResNet as torchvision defines them.
#include <torch/torch.h>

#include "tonnx/models.h"

namespace tonnx::models {
namespace nn = torch::nn;

AlexNetImpl::AlexNetImpl(int64_t num_classes) {
  features = register_module(
      "features",
      nn::Sequential(
          nn::Conv2d(nn::Conv2dOptions(3, 64, 11).stride(4).padding(2)),
          nn::ReLU(nn::ReLUOptions(true)), nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)),
          nn::Conv2d(nn::Conv2dOptions(64, 192, 5).padding(2)), nn::ReLU(nn::ReLUOptions(true)),
          nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)),
          nn::Conv2d(nn::Conv2dOptions(192, 384, 3).padding(1)), nn::ReLU(nn::ReLUOptions(true)),
          nn::Conv2d(nn::Conv2dOptions(384, 256, 3).padding(1)), nn::ReLU(nn::ReLUOptions(true)),
          nn::Conv2d(nn::Conv2dOptions(256, 256, 3).padding(1)), nn::ReLU(nn::ReLUOptions(true)),
          nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2))));
  avgpool = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({6, 6})));
  classifier = register_module(
      "classifier",
      nn::Sequential(nn::Dropout(0.5), nn::Linear(256 * 6 * 6, 4096),
                     nn::ReLU(nn::ReLUOptions(true)), nn::Dropout(0.5), nn::Linear(4096, 4096),
                     nn::ReLU(nn::ReLUOptions(true)), nn::Linear(4096, num_classes)));
}

torch::Tensor AlexNetImpl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  x = features->forward(x);
  x = avgpool->forward(x);
  x = torch::flatten(x, 1);
  return classifier->forward(x);
}

VGGImpl::VGGImpl(const std::vector<int64_t>& cfg, bool batch_norm, int64_t num_classes) {
  nn::Sequential f;
  int64_t in = 3;
  for (int64_t v : cfg) {
    if (v == 0) {
      f->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)));
      continue;
    }
    f->push_back(nn::Conv2d(nn::Conv2dOptions(in, v, 3).padding(1)));
    if (batch_norm) f->push_back(nn::BatchNorm2d(v));
    f->push_back(nn::ReLU(nn::ReLUOptions(true)));
    in = v;
  }
  features = register_module("features", f);
  avgpool = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({7, 7})));
  classifier = register_module(
      "classifier",
      nn::Sequential(nn::Linear(512 * 7 * 7, 4096), nn::ReLU(nn::ReLUOptions(true)),
                     nn::Dropout(0.5), nn::Linear(4096, 4096), nn::ReLU(nn::ReLUOptions(true)),
                     nn::Dropout(0.5), nn::Linear(4096, num_classes)));
}

torch::Tensor VGGImpl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  x = features->forward(x);
  x = avgpool->forward(x);
  x = torch::flatten(x, 1);
  return classifier->forward(x);
}

VGG vgg11() {
  return VGG(std::vector<int64_t>{64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0}, false);
}
static const std::vector<int64_t> kVgg16 = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                                            0,  512, 512, 512, 0,   512, 512, 512, 0};
VGG vgg16() { return VGG(kVgg16, false); }
VGG vgg16_bn() { return VGG(kVgg16, true); }

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

struct BasicBlockImpl : nn::Module {
  BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride, nn::Sequential downsample_)
      : conv1(register_module("conv1", conv(inplanes, planes, 3, stride, 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(planes))),
        relu(register_module("relu", nn::ReLU(nn::ReLUOptions(true)))),
        conv2(register_module("conv2", conv(planes, planes, 3, 1, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(planes))),
        downsample(downsample_) {
    if (downsample) register_module("downsample", downsample);
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    torch::Tensor identity = x;
    torch::Tensor out = relu->forward(bn1->forward(conv1->forward(x)));
    out = bn2->forward(conv2->forward(out));
    if (downsample) identity = downsample->forward(x);
    out += identity;
    return relu->forward(out);
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::ReLU relu;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Sequential downsample;
};
TORCH_MODULE(BasicBlock);

struct BottleneckImpl : nn::Module {
  static constexpr int64_t expansion = 4;
  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride, nn::Sequential downsample_)
      : conv1(register_module("conv1", conv(inplanes, planes, 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2(register_module("conv2", conv(planes, planes, 3, stride, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(planes))),
        conv3(register_module("conv3", conv(planes, planes * expansion, 1))),
        bn3(register_module("bn3", nn::BatchNorm2d(planes * expansion))),
        relu(register_module("relu", nn::ReLU(nn::ReLUOptions(true)))),
        downsample(downsample_) {
    if (downsample) register_module("downsample", downsample);
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    torch::Tensor identity = x;
    torch::Tensor out = relu->forward(bn1->forward(conv1->forward(x)));
    out = relu->forward(bn2->forward(conv2->forward(out)));
    out = bn3->forward(conv3->forward(out));
    if (downsample) identity = downsample->forward(x);
    out += identity;
    return relu->forward(out);
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
  nn::ReLU relu;
  nn::Sequential downsample;
};
TORCH_MODULE(Bottleneck);

}  // namespace

ResNetImpl::ResNetImpl(bool bottleneck, const std::vector<int64_t>& layers, int64_t num_classes) {
  const int64_t expansion = bottleneck ? 4 : 1;
  int64_t inplanes = 64;
  conv1 = register_module("conv1", conv(3, 64, 7, 2, 3));
  bn1 = register_module("bn1", nn::BatchNorm2d(64));
  relu = register_module("relu", nn::ReLU(nn::ReLUOptions(true)));
  maxpool = register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  auto make_layer = [&](int64_t planes, int64_t blocks, int64_t stride) {
    nn::Sequential layer;
    nn::Sequential down{nullptr};
    if (stride != 1 || inplanes != planes * expansion)
      down = nn::Sequential(conv(inplanes, planes * expansion, 1, stride),
                            nn::BatchNorm2d(planes * expansion));
    for (int64_t i = 0; i < blocks; ++i) {
      int64_t s = i == 0 ? stride : 1;
      nn::Sequential d = i == 0 ? down : nn::Sequential(nullptr);
      if (bottleneck)
        layer->push_back(Bottleneck(inplanes, planes, s, d));
      else
        layer->push_back(BasicBlock(inplanes, planes, s, d));
      inplanes = planes * expansion;
    }
    return layer;
  };
  layer1 = register_module("layer1", make_layer(64, layers[0], 1));
  layer2 = register_module("layer2", make_layer(128, layers[1], 2));
  layer3 = register_module("layer3", make_layer(256, layers[2], 2));
  layer4 = register_module("layer4", make_layer(512, layers[3], 2));
  avgpool = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  fc = register_module("fc", nn::Linear(512 * expansion, num_classes));
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  x = maxpool->forward(relu->forward(bn1->forward(conv1->forward(x))));
  x = layer4->forward(layer3->forward(layer2->forward(layer1->forward(x))));
  x = torch::flatten(avgpool->forward(x), 1);
  return fc->forward(x);
}

ResNet resnet18() { return ResNet(false, std::vector<int64_t>{2, 2, 2, 2}); }
ResNet resnet50() { return ResNet(true, std::vector<int64_t>{3, 4, 6, 3}); }

}  // namespace tonnx::models
