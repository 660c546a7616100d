// The zoo's registry: names, default inputs and seeded construction.
#include <torch/torch.h>

#include <sstream>

#include "models/transformers.h"
#include "tonnx/models.h"
#include "tonnx/seed_models.h"

namespace tonnx::models {

void randomize_batchnorm(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  for (const auto& m : root.modules()) {
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(m.get())) {
      if (!bn->options.track_running_stats()) continue;
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
                 randn_inputs,
                 0});
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
  image("densenet121", "DenseNet-121 (torchvision)", S{{1, 3, 224, 224}},
        maker<DenseNet>([] { return DenseNet(); }));
  image("inception_v3", "Inception v3 (torchvision; eval, no aux output)", S{{1, 3, 299, 299}},
        maker<InceptionV3>([] { return InceptionV3(); }));
  image("dcgan_generator", "DCGAN generator (pytorch/examples dcgan)", S{{1, 100, 1, 1}},
        maker<DCGANGenerator>([] { return DCGANGenerator(); }));
  image("dcgan_discriminator", "DCGAN discriminator (pytorch/examples dcgan)", S{{1, 3, 64, 64}},
        maker<DCGANDiscriminator>([] { return DCGANDiscriminator(); }));
  image("super_resolution", "SuperResolution, ESPCN with pixel_shuffle (pytorch/examples)",
        S{{1, 1, 224, 224}}, maker<SuperResolution>([] { return SuperResolution(3); }));
  // word_language_model: tokens [seq, batch] int64, then the RNN state(s).
  struct Lm {
    const char* name;
    RnnType type;
    const char* desc;
  };
  for (const Lm& lm :
       {Lm{"word_language_model", RnnType::LSTM,
           "word_language_model: Embedding, 2-layer LSTM, Linear (pytorch/examples)"},
        Lm{"word_language_model_gru", RnnType::GRU, "word_language_model with GRU"},
        Lm{"word_language_model_rnn_tanh", RnnType::RNN_TANH, "word_language_model with RNN_TANH"},
        Lm{"word_language_model_rnn_relu", RnnType::RNN_RELU,
           "word_language_model with RNN_RELU"}}) {
    RnnType type = lm.type;
    bool lstm = type == RnnType::LSTM;
    S shapes{{35, 20}, {2, 20, 200}};
    std::vector<at::ScalarType> dtypes{at::kLong, at::kFloat};
    if (lstm) {
      shapes.push_back({2, 20, 200});
      dtypes.push_back(at::kFloat);
    }
    z.push_back({lm.name, lm.desc, shapes, dtypes,
                 [type](uint64_t seed) {
                   torch::manual_seed(seed);
                   WordLanguageModel m(type);
                   {
                     torch::NoGradGuard ng;
                     for (auto& p : m->parameters()) p.uniform_(-0.1, 0.1);
                   }
                   m->eval();
                   Traceable t;
                   t.module = m.ptr();
                   t.forward = [m](const std::vector<torch::Tensor>& in) mutable {
                     if (in.size() != (m->lstm ? 3u : 2u))
                       throw ExportError("word_language_model takes tokens and " +
                                         std::string(m->lstm ? "(h0, c0)" : "h0"));
                     return m->forward(in);
                   };
                   return t;
                 },
                 [](const S& shapes, uint64_t seed) {
                   torch::manual_seed(seed + 1);
                   std::vector<torch::Tensor> in{
                       torch::randint(0, 33278, shapes.at(0), torch::kLong)};
                   for (size_t i = 1; i < shapes.size(); ++i)
                     in.push_back(torch::randn(shapes[i]) * 0.5);
                   return in;
                 },
                 0});
  }
  // Transformer encoders (nn.TransformerEncoder, sequence first): the large one is the anchor
  // of the external-data benchmark (805M parameters, 3.2 GB), the small one its test size.
  struct Enc {
    const char* name;
    int64_t d_model, heads, ff, layers, seq;
    const char* desc;
  };
  for (const Enc& e :
       {Enc{"transformer_encoder", 2048, 16, 8192, 16, 128,
            "nn.TransformerEncoder: d_model 2048, 16 heads, 16 layers, ff 8192 (3.2 GB; the "
            "external-data anchor)"},
        Enc{"transformer_encoder_small", 256, 4, 1024, 2, 16,
            "nn.TransformerEncoder: d_model 256, 4 heads, 2 layers, ff 1024"}}) {
    Enc c = e;
    const int64_t per_layer = 4 * c.d_model * c.d_model + 4 * c.d_model + 2 * c.d_model * c.ff +
                              c.ff + c.d_model + 4 * c.d_model;
    z.push_back(
        {c.name,
         c.desc,
         S{{c.seq, 1, c.d_model}},
         {at::kFloat},
         [c](uint64_t seed) {
           torch::manual_seed(seed);
           // TransformerEncoder(options(layer, N)) clones its prototype layer N
           // times and keeps the prototype in its options: one layer's weights
           // (200 MB at the anchor's size) held for nothing, and a clone's fresh
           // weights on top while it is made. So the encoder starts empty, the
           // prototype gives its weights back, and the layers are built in place.
           auto layer_options = torch::nn::TransformerEncoderLayerOptions(c.d_model, c.heads)
                                    .dim_feedforward(c.ff)
                                    .dropout(0.1);
           torch::nn::TransformerEncoderLayer prototype(layer_options);
           {
             torch::NoGradGuard no_grad;
             for (auto& p : prototype->parameters()) p.set_data(torch::empty({0}));
           }
           torch::nn::TransformerEncoder enc(torch::nn::TransformerEncoderOptions(prototype, 0));
           enc->options.num_layers(c.layers);
           for (int64_t i = 0; i < c.layers; ++i)
             enc->layers->push_back(torch::nn::TransformerEncoderLayer(layer_options));
           // Every layer gets its own random weights, as a trained model has.
           randomize_transformer(
               *enc, [](torch::Tensor& w) { torch::nn::init::xavier_uniform_(w); }, 0.1);
           enc->eval();
           Traceable t;
           t.module = enc.ptr();
           t.forward = [enc](const std::vector<torch::Tensor>& in) mutable {
             if (in.size() != 1)
               throw ExportError("transformer_encoder takes one input [seq, batch, d_model]");
             return std::vector<torch::Tensor>{enc->forward(in[0])};
           };
           return t;
         },
         randn_inputs,
         c.layers * per_layer});
  }
  add_transformer_models(z);
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

int64_t parameter_count(const ZooEntry& e) {
  return e.parameters ? e.parameters : parameter_count(e.make(0));
}

int64_t parameter_count(const Traceable& t) {
  if (!t.module) return 0;
  int64_t n = 0;
  for (const auto& p : t.module->parameters()) n += p.numel();
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  return out;
}

std::string zoo_markdown() {
  std::string out =
      "<!-- generated by `tonnx models --markdown`; a test fails when it is stale -->\n"
      "| model | default input | parameters | description |\n|---|---|---|---|\n";
  for (const auto& e : zoo()) {
    std::string shapes;
    for (size_t i = 0; i < e.input_shapes.size(); ++i)
      shapes += (i ? ", " : "") + shape_string(e.input_shapes[i]);
    out += "| " + e.name + " | " + shapes + " | " + std::to_string(parameter_count(e)) + " | " +
           e.description + " |\n";
  }
  return out;
}

}  // namespace tonnx::models
