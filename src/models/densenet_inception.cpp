// DenseNet-121 and Inception v3 as torchvision 0.14 defines them (eval: no aux output).
#include <torch/torch.h>

#include "tonnx/models.h"
#include "tonnx/seed_models.h"

namespace tonnx::models {
namespace nn = torch::nn;
namespace F = torch::nn::functional;

namespace {

nn::Conv2d conv_nb(int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t pad = 0) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

// ---------------- DenseNet ----------------
struct DenseLayerImpl : nn::Module {
  DenseLayerImpl(int64_t in, int64_t growth, int64_t bn_size) {
    norm1 = register_module("norm1", nn::BatchNorm2d(in));
    relu1 = register_module("relu1", nn::ReLU(true));
    conv1 = register_module("conv1", conv_nb(in, bn_size * growth, 1));
    norm2 = register_module("norm2", nn::BatchNorm2d(bn_size * growth));
    relu2 = register_module("relu2", nn::ReLU(true));
    conv2 = register_module("conv2", conv_nb(bn_size * growth, growth, 3, 1, 1));
  }
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs) {
    ScopeGuard scope(this);
    torch::Tensor x = torch::cat(inputs, 1);
    x = conv1->forward(relu1->forward(norm1->forward(x)));
    return conv2->forward(relu2->forward(norm2->forward(x)));
  }
  nn::BatchNorm2d norm1{nullptr}, norm2{nullptr};
  nn::ReLU relu1{nullptr}, relu2{nullptr};
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
};
TORCH_MODULE(DenseLayer);

struct DenseBlockImpl : nn::Module {
  DenseBlockImpl(int64_t layers, int64_t in, int64_t bn_size, int64_t growth) {
    for (int64_t i = 0; i < layers; ++i)
      this->layers.push_back(register_module("denselayer" + std::to_string(i + 1),
                                             DenseLayer(in + i * growth, growth, bn_size)));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    std::vector<torch::Tensor> features{x};
    for (auto& layer : layers) features.push_back(layer->forward(features));
    return torch::cat(features, 1);
  }
  std::vector<DenseLayer> layers;
};
TORCH_MODULE(DenseBlock);

// torchvision's _Transition is a Sequential; a Sequential cannot hold another in the C++
// frontend, so this module registers the same children and runs them in order.
struct TransitionImpl : nn::Module {
  TransitionImpl(int64_t in, int64_t out) {
    norm = register_module("norm", nn::BatchNorm2d(in));
    relu = register_module("relu", nn::ReLU(true));
    conv = register_module("conv", conv_nb(in, out, 1));
    pool = register_module("pool", nn::AvgPool2d(nn::AvgPool2dOptions(2).stride(2)));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    return pool->forward(conv->forward(relu->forward(norm->forward(x))));
  }
  nn::BatchNorm2d norm{nullptr};
  nn::ReLU relu{nullptr};
  nn::Conv2d conv{nullptr};
  nn::AvgPool2d pool{nullptr};
};
TORCH_MODULE(Transition);

}  // namespace

DenseNetImpl::DenseNetImpl(int64_t growth_rate, std::vector<int64_t> block_config,
                           int64_t num_init_features, int64_t bn_size, int64_t num_classes) {
  nn::Sequential f;
  f->push_back("conv0", conv_nb(3, num_init_features, 7, 2, 3));
  f->push_back("norm0", nn::BatchNorm2d(num_init_features));
  f->push_back("relu0", nn::ReLU(true));
  f->push_back("pool0", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  int64_t n = num_init_features;
  for (size_t i = 0; i < block_config.size(); ++i) {
    f->push_back("denseblock" + std::to_string(i + 1),
                 DenseBlock(block_config[i], n, bn_size, growth_rate));
    n += block_config[i] * growth_rate;
    if (i + 1 != block_config.size()) {
      f->push_back("transition" + std::to_string(i + 1), Transition(n, n / 2));
      n /= 2;
    }
  }
  f->push_back("norm5", nn::BatchNorm2d(n));
  features = register_module("features", f);
  classifier = register_module("classifier", nn::Linear(n, num_classes));
}

torch::Tensor DenseNetImpl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  x = torch::relu(features->forward(x));
  x = torch::flatten(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({1, 1})), 1);
  return classifier->forward(x);
}

// ---------------- Inception v3 ----------------
namespace {

struct BasicConv2dImpl : nn::Module {
  BasicConv2dImpl(int64_t in, int64_t out, std::vector<int64_t> k,
                  std::vector<int64_t> stride = {1, 1}, std::vector<int64_t> pad = {0, 0}) {
    conv = register_module(
        "conv", nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(out).eps(0.001)));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    return torch::relu(bn->forward(conv->forward(x)));
  }
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
};
TORCH_MODULE(BasicConv2d);

using K = std::vector<int64_t>;
BasicConv2d bc(int64_t in, int64_t out, K k, K s = {1, 1}, K p = {0, 0}) {
  if (k.size() == 1) k = {k[0], k[0]};
  if (s.size() == 1) s = {s[0], s[0]};
  if (p.size() == 1) p = {p[0], p[0]};
  return BasicConv2d(in, out, k, s, p);
}
torch::Tensor avg3(const torch::Tensor& x) {
  return F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(1).padding(1));
}
torch::Tensor max3s2(const torch::Tensor& x) {
  return F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2));
}

struct InceptionAImpl : nn::Module {
  InceptionAImpl(int64_t in, int64_t pool_features) {
    b1 = register_module("branch1x1", bc(in, 64, {1}));
    b5_1 = register_module("branch5x5_1", bc(in, 48, {1}));
    b5_2 = register_module("branch5x5_2", bc(48, 64, {5}, {1}, {2}));
    b3_1 = register_module("branch3x3dbl_1", bc(in, 64, {1}));
    b3_2 = register_module("branch3x3dbl_2", bc(64, 96, {3}, {1}, {1}));
    b3_3 = register_module("branch3x3dbl_3", bc(96, 96, {3}, {1}, {1}));
    bp = register_module("branch_pool", bc(in, pool_features, {1}));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    return torch::cat({b1->forward(x), b5_2->forward(b5_1->forward(x)),
                       b3_3->forward(b3_2->forward(b3_1->forward(x))), bp->forward(avg3(x))},
                      1);
  }
  BasicConv2d b1{nullptr}, b5_1{nullptr}, b5_2{nullptr}, b3_1{nullptr}, b3_2{nullptr},
      b3_3{nullptr}, bp{nullptr};
};
TORCH_MODULE(InceptionA);

struct InceptionBImpl : nn::Module {
  explicit InceptionBImpl(int64_t in) {
    b3 = register_module("branch3x3", bc(in, 384, {3}, {2}));
    d1 = register_module("branch3x3dbl_1", bc(in, 64, {1}));
    d2 = register_module("branch3x3dbl_2", bc(64, 96, {3}, {1}, {1}));
    d3 = register_module("branch3x3dbl_3", bc(96, 96, {3}, {2}));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    return torch::cat({b3->forward(x), d3->forward(d2->forward(d1->forward(x))), max3s2(x)}, 1);
  }
  BasicConv2d b3{nullptr}, d1{nullptr}, d2{nullptr}, d3{nullptr};
};
TORCH_MODULE(InceptionB);

struct InceptionCImpl : nn::Module {
  InceptionCImpl(int64_t in, int64_t c7) {
    b1 = register_module("branch1x1", bc(in, 192, {1}));
    s1 = register_module("branch7x7_1", bc(in, c7, {1}));
    s2 = register_module("branch7x7_2", bc(c7, c7, {1, 7}, {1}, {0, 3}));
    s3 = register_module("branch7x7_3", bc(c7, 192, {7, 1}, {1}, {3, 0}));
    d1 = register_module("branch7x7dbl_1", bc(in, c7, {1}));
    d2 = register_module("branch7x7dbl_2", bc(c7, c7, {7, 1}, {1}, {3, 0}));
    d3 = register_module("branch7x7dbl_3", bc(c7, c7, {1, 7}, {1}, {0, 3}));
    d4 = register_module("branch7x7dbl_4", bc(c7, c7, {7, 1}, {1}, {3, 0}));
    d5 = register_module("branch7x7dbl_5", bc(c7, 192, {1, 7}, {1}, {0, 3}));
    bp = register_module("branch_pool", bc(in, 192, {1}));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    auto s = s3->forward(s2->forward(s1->forward(x)));
    auto d = d5->forward(d4->forward(d3->forward(d2->forward(d1->forward(x)))));
    return torch::cat({b1->forward(x), s, d, bp->forward(avg3(x))}, 1);
  }
  BasicConv2d b1{nullptr}, s1{nullptr}, s2{nullptr}, s3{nullptr}, d1{nullptr}, d2{nullptr},
      d3{nullptr}, d4{nullptr}, d5{nullptr}, bp{nullptr};
};
TORCH_MODULE(InceptionC);

struct InceptionDImpl : nn::Module {
  explicit InceptionDImpl(int64_t in) {
    a1 = register_module("branch3x3_1", bc(in, 192, {1}));
    a2 = register_module("branch3x3_2", bc(192, 320, {3}, {2}));
    b1 = register_module("branch7x7x3_1", bc(in, 192, {1}));
    b2 = register_module("branch7x7x3_2", bc(192, 192, {1, 7}, {1}, {0, 3}));
    b3 = register_module("branch7x7x3_3", bc(192, 192, {7, 1}, {1}, {3, 0}));
    b4 = register_module("branch7x7x3_4", bc(192, 192, {3}, {2}));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    return torch::cat({a2->forward(a1->forward(x)),
                       b4->forward(b3->forward(b2->forward(b1->forward(x)))), max3s2(x)},
                      1);
  }
  BasicConv2d a1{nullptr}, a2{nullptr}, b1{nullptr}, b2{nullptr}, b3{nullptr}, b4{nullptr};
};
TORCH_MODULE(InceptionD);

struct InceptionEImpl : nn::Module {
  explicit InceptionEImpl(int64_t in) {
    b1 = register_module("branch1x1", bc(in, 320, {1}));
    t1 = register_module("branch3x3_1", bc(in, 384, {1}));
    t2a = register_module("branch3x3_2a", bc(384, 384, {1, 3}, {1}, {0, 1}));
    t2b = register_module("branch3x3_2b", bc(384, 384, {3, 1}, {1}, {1, 0}));
    d1 = register_module("branch3x3dbl_1", bc(in, 448, {1}));
    d2 = register_module("branch3x3dbl_2", bc(448, 384, {3}, {1}, {1}));
    d3a = register_module("branch3x3dbl_3a", bc(384, 384, {1, 3}, {1}, {0, 1}));
    d3b = register_module("branch3x3dbl_3b", bc(384, 384, {3, 1}, {1}, {1, 0}));
    bp = register_module("branch_pool", bc(in, 192, {1}));
  }
  torch::Tensor forward(torch::Tensor x) {
    ScopeGuard scope(this);
    auto t = t1->forward(x);
    t = torch::cat({t2a->forward(t), t2b->forward(t)}, 1);
    auto d = d2->forward(d1->forward(x));
    d = torch::cat({d3a->forward(d), d3b->forward(d)}, 1);
    return torch::cat({b1->forward(x), t, d, bp->forward(avg3(x))}, 1);
  }
  BasicConv2d b1{nullptr}, t1{nullptr}, t2a{nullptr}, t2b{nullptr}, d1{nullptr}, d2{nullptr},
      d3a{nullptr}, d3b{nullptr}, bp{nullptr};
};
TORCH_MODULE(InceptionE);

// Registered (its parameters are in the state_dict) but not run in eval.
struct InceptionAuxImpl : nn::Module {
  InceptionAuxImpl(int64_t in, int64_t num_classes) {
    conv0 = register_module("conv0", bc(in, 128, {1}));
    conv1 = register_module("conv1", bc(128, 768, {5}));
    fc = register_module("fc", nn::Linear(768, num_classes));
  }
  BasicConv2d conv0{nullptr}, conv1{nullptr};
  nn::Linear fc{nullptr};
};
TORCH_MODULE(InceptionAux);

}  // namespace

InceptionV3Impl::InceptionV3Impl(int64_t num_classes) {
  register_module("Conv2d_1a_3x3", bc(3, 32, {3}, {2}));
  register_module("Conv2d_2a_3x3", bc(32, 32, {3}));
  register_module("Conv2d_2b_3x3", bc(32, 64, {3}, {1}, {1}));
  register_module("maxpool1", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)));
  register_module("Conv2d_3b_1x1", bc(64, 80, {1}));
  register_module("Conv2d_4a_3x3", bc(80, 192, {3}));
  register_module("maxpool2", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)));
  register_module("Mixed_5b", InceptionA(192, 32));
  register_module("Mixed_5c", InceptionA(256, 64));
  register_module("Mixed_5d", InceptionA(288, 64));
  register_module("Mixed_6a", InceptionB(288));
  register_module("Mixed_6b", InceptionC(768, 128));
  register_module("Mixed_6c", InceptionC(768, 160));
  register_module("Mixed_6d", InceptionC(768, 160));
  register_module("Mixed_6e", InceptionC(768, 192));
  register_module("AuxLogits", InceptionAux(768, num_classes));
  register_module("Mixed_7a", InceptionD(768));
  register_module("Mixed_7b", InceptionE(1280));
  register_module("Mixed_7c", InceptionE(2048));
  register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  register_module("dropout", nn::Dropout(0.5));
  register_module("fc", nn::Linear(2048, num_classes));
}

torch::Tensor InceptionV3Impl::forward(torch::Tensor x) {
  ScopeGuard scope(this);
  auto call = [this](const char* name, torch::Tensor t) {
    auto m = named_children()[name];
    if (auto* b = m->as<BasicConv2dImpl>()) return b->forward(t);
    if (auto* a = m->as<InceptionAImpl>()) return a->forward(t);
    if (auto* b = m->as<InceptionBImpl>()) return b->forward(t);
    if (auto* c = m->as<InceptionCImpl>()) return c->forward(t);
    if (auto* d = m->as<InceptionDImpl>()) return d->forward(t);
    if (auto* e = m->as<InceptionEImpl>()) return e->forward(t);
    if (auto* p = m->as<nn::MaxPool2dImpl>()) return p->forward(t);
    if (auto* p = m->as<nn::AdaptiveAvgPool2dImpl>()) return p->forward(t);
    if (auto* d = m->as<nn::DropoutImpl>()) return d->forward(t);
    return m->as<nn::LinearImpl>()->forward(t);
  };
  for (const char* name :
       {"Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "maxpool1", "Conv2d_3b_1x1",
        "Conv2d_4a_3x3", "maxpool2",      "Mixed_5b",      "Mixed_5c", "Mixed_5d",
        "Mixed_6a",      "Mixed_6b",      "Mixed_6c",      "Mixed_6d", "Mixed_6e",
        "Mixed_7a",      "Mixed_7b",      "Mixed_7c",      "avgpool",  "dropout"})
    x = call(name, x);
  return call("fc", torch::flatten(x, 1));
}

}  // namespace tonnx::models
