// The zoo's registry: names, default inputs and seeded construction.
#include <torch/torch.h>

#include <sstream>

#include "tonnx/models.h"

namespace tonnx::models {

void randomize_batchnorm(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  for (const auto& m : root.modules()) {
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) {
      bn->running_mean.uniform_(-0.1, 0.1);
      bn->running_var.uniform_(0.5, 1.5);
      if (bn->weight.defined()) bn->weight.uniform_(0.5, 1.5);
      if (bn->bias.defined()) bn->bias.uniform_(-0.1, 0.1);
    }
  }
}

void init_weights(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  for (const auto& m : root.modules()) {
    for (auto& p : m->named_parameters(/*recurse=*/false)) {
      if (p.key() == "weight" && p.value().dim() >= 2) {
        torch::nn::init::kaiming_normal_(p.value(), 0.0, torch::kFanIn, torch::kReLU);
      } else if (p.key() == "bias" && !dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) {
        p.value().uniform_(-0.1, 0.1);
      }
    }
  }
}

namespace {

template <typename Holder>
std::function<Traceable(uint64_t)> maker(std::function<Holder()> build) {
  return [build](uint64_t seed) {
    torch::manual_seed(seed);
    Holder m = build();
    init_weights(*m.ptr());
    randomize_batchnorm(*m.ptr());
    m->eval();
    return make_traceable(m);
  };
}

std::vector<torch::Tensor> randn_inputs(const std::vector<std::vector<int64_t>>& shapes,
                                        uint64_t seed) {
  torch::manual_seed(seed + 1);
  std::vector<torch::Tensor> out;
  for (const auto& s : shapes) out.push_back(torch::randn(s));
  return out;
}

using S = std::vector<std::vector<int64_t>>;

std::vector<ZooEntry> build_zoo() {
  std::vector<ZooEntry> z;
  auto image = [&](std::string name, std::string desc, S shapes,
                   std::function<Traceable(uint64_t)> make) {
    z.push_back({std::move(name),
                 std::move(desc),
                 std::move(shapes),
                 {at::kFloat},
                 std::move(make),
                 randn_inputs});
  };
  image("alexnet", "AlexNet (torchvision), the seed's example", S{{10, 3, 224, 224}},
        maker<AlexNet>([] { return AlexNet(); }));
  image("resnet18", "ResNet-18 (torchvision)", S{{1, 3, 224, 224}},
        maker<ResNet>([] { return resnet18(); }));
  image("resnet50", "ResNet-50 (torchvision)", S{{1, 3, 224, 224}},
        maker<ResNet>([] { return resnet50(); }));
  image("vgg11", "VGG-11 (torchvision)", S{{1, 3, 224, 224}}, maker<VGG>([] { return vgg11(); }));
  image("vgg16", "VGG-16 (torchvision)", S{{1, 3, 224, 224}}, maker<VGG>([] { return vgg16(); }));
  image("vgg16_bn", "VGG-16 with batch norm (torchvision)", S{{1, 3, 224, 224}},
        maker<VGG>([] { return vgg16_bn(); }));
  return z;
}

}  // namespace

const std::vector<ZooEntry>& zoo() {
  static const std::vector<ZooEntry> z = build_zoo();
  return z;
}

const ZooEntry& find_model(const std::string& name) {
  for (const auto& e : zoo())
    if (e.name == name) return e;
  std::ostringstream os;
  os << "unknown model '" << name << "'; the zoo has:";
  for (const auto& e : zoo()) os << " " << e.name;
  throw std::invalid_argument(os.str());
}

int64_t parameter_count(const Traceable& t) {
  if (!t.module) return 0;
  int64_t n = 0;
  for (const auto& p : t.module->parameters()) n += p.numel();
  return n;
}

}  // namespace tonnx::models
