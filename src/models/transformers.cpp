// BERT-base and GPT-2-small shaped transformers for the zoo and the backend benchmark. They are
// written as Hugging Face's BertModel and GPT2LMHeadModel compute them (bench/torch_export.py has
// the Python twins), so their exports carry the patterns deployed transformers have: sizes read
// at run time for the per-head Reshape/Transpose, scaled scores, an additive padding mask or a
// causal one from a buffer, Softmax, GELU (exact for BERT, tanh for GPT-2) and LayerNorm.
#include "models/transformers.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace tonnx::models {
namespace {

using torch::nn::Embedding;
using torch::nn::LayerNorm;
using torch::nn::LayerNormOptions;
using torch::nn::Linear;

// [B, T, H * Dh] -> [B, H, T, Dh]
torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

// [B, H, T, Dh] -> [B, T, H * Dh]
torch::Tensor merge_heads(const torch::Tensor& x) {
  torch::Tensor t = x.transpose(1, 2).contiguous();
  return t.view({t.size(0), t.size(1), t.size(2) * t.size(3)});
}

struct BertLayerImpl : torch::nn::Module {
  BertLayerImpl(int64_t d, int64_t heads, int64_t ff) : heads(heads) {
    query = register_module("query", Linear(d, d));
    key = register_module("key", Linear(d, d));
    value = register_module("value", Linear(d, d));
    attention_output = register_module("attention_output", Linear(d, d));
    attention_norm = register_module("attention_norm", LayerNorm(LayerNormOptions({d}).eps(1e-12)));
    intermediate = register_module("intermediate", Linear(d, ff));
    output = register_module("output", Linear(ff, d));
    output_norm = register_module("output_norm", LayerNorm(LayerNormOptions({d}).eps(1e-12)));
  }
  // mask: [B, 1, 1, T], 0 where a token is attended to and -10000 at padding.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    torch::Tensor q = split_heads(query(x), heads), k = split_heads(key(x), heads),
                  v = split_heads(value(x), heads);
    torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(q.size(-1)));
    torch::Tensor probs = torch::softmax(scores + mask, -1);
    torch::Tensor h = attention_norm(attention_output(merge_heads(torch::matmul(probs, v))) + x);
    return output_norm(output(torch::gelu(intermediate(h))) + h);
  }
  int64_t heads;
  Linear query{nullptr}, key{nullptr}, value{nullptr}, attention_output{nullptr},
      intermediate{nullptr}, output{nullptr};
  LayerNorm attention_norm{nullptr}, output_norm{nullptr};
};
TORCH_MODULE(BertLayer);

struct BertImpl : torch::nn::Module {
  BertImpl(int64_t vocab, int64_t positions, int64_t d, int64_t heads, int64_t ff, int64_t layers) {
    word_embeddings = register_module("word_embeddings", Embedding(vocab, d));
    position_embeddings = register_module("position_embeddings", Embedding(positions, d));
    token_type_embeddings = register_module("token_type_embeddings", Embedding(2, d));
    embedding_norm = register_module("embedding_norm", LayerNorm(LayerNormOptions({d}).eps(1e-12)));
    encoder = register_module("encoder", torch::nn::ModuleList());
    for (int64_t i = 0; i < layers; ++i) encoder->push_back(BertLayer(d, heads, ff));
    position_ids = register_buffer("position_ids", torch::arange(positions).unsqueeze(0));
    token_type_ids = register_buffer("token_type_ids", torch::zeros({1, positions}, torch::kLong));
  }
  // ids, attention_mask: [B, T] int64 (mask 1 for tokens, 0 for padding) -> [B, T, d]
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& attention_mask) {
    int64_t t = ids.size(1);
    torch::Tensor h = word_embeddings(ids) + position_embeddings(position_ids.slice(1, 0, t)) +
                      token_type_embeddings(token_type_ids.slice(1, 0, t));
    h = embedding_norm(h);
    torch::Tensor mask =
        (1.0 - attention_mask.unsqueeze(1).unsqueeze(2).to(torch::kFloat)) * -10000.0;
    for (const auto& layer : *encoder) h = layer->as<BertLayerImpl>()->forward(h, mask);
    return h;
  }
  Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  LayerNorm embedding_norm{nullptr};
  torch::nn::ModuleList encoder{nullptr};
  torch::Tensor position_ids, token_type_ids;
};
TORCH_MODULE(Bert);

struct Gpt2BlockImpl : torch::nn::Module {
  Gpt2BlockImpl(int64_t d, int64_t heads, int64_t positions) : d(d), heads(heads) {
    ln_1 = register_module("ln_1", LayerNorm(LayerNormOptions({d}).eps(1e-5)));
    c_attn = register_module("c_attn", Linear(d, 3 * d));
    attn_proj = register_module("attn_proj", Linear(d, d));
    ln_2 = register_module("ln_2", LayerNorm(LayerNormOptions({d}).eps(1e-5)));
    c_fc = register_module("c_fc", Linear(d, 4 * d));
    mlp_proj = register_module("mlp_proj", Linear(4 * d, d));
    causal = register_buffer("causal", torch::ones({positions, positions}, torch::kBool)
                                           .tril()
                                           .view({1, 1, positions, positions}));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    std::vector<torch::Tensor> qkv = c_attn(ln_1(x)).split(d, 2);
    torch::Tensor q = split_heads(qkv[0], heads), k = split_heads(qkv[1], heads),
                  v = split_heads(qkv[2], heads);
    torch::Tensor w = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(q.size(-1)));
    int64_t t = x.size(1);
    torch::Tensor allowed = causal.slice(2, 0, t).slice(3, 0, t);
    torch::Tensor lowest = torch::full({}, std::numeric_limits<float>::lowest());
    w = torch::softmax(torch::where(allowed, w, lowest), -1);
    torch::Tensor h = x + attn_proj(merge_heads(torch::matmul(w, v)));
    return h + mlp_proj(torch::gelu(c_fc(ln_2(h)), "tanh"));
  }
  int64_t d, heads;
  LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};
  torch::Tensor causal;
};
TORCH_MODULE(Gpt2Block);

struct Gpt2Impl : torch::nn::Module {
  Gpt2Impl(int64_t vocab, int64_t positions, int64_t d, int64_t heads, int64_t layers) {
    wte = register_module("wte", Embedding(vocab, d));
    wpe = register_module("wpe", Embedding(positions, d));
    h = register_module("h", torch::nn::ModuleList());
    for (int64_t i = 0; i < layers; ++i) h->push_back(Gpt2Block(d, heads, positions));
    ln_f = register_module("ln_f", LayerNorm(LayerNormOptions({d}).eps(1e-5)));
    position_ids = register_buffer("position_ids", torch::arange(positions).unsqueeze(0));
  }
  // ids: [B, T] int64 -> logits [B, T, vocab]; the output projection is the token embedding.
  torch::Tensor forward(const torch::Tensor& ids) {
    torch::Tensor x = wte(ids) + wpe(position_ids.slice(1, 0, ids.size(1)));
    for (const auto& block : *h) x = block->as<Gpt2BlockImpl>()->forward(x);
    return torch::nn::functional::linear(ln_f(x), wte->weight);
  }
  Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList h{nullptr};
  LayerNorm ln_f{nullptr};
  torch::Tensor position_ids;
};
TORCH_MODULE(Gpt2);

template <typename Holder>
Traceable traceable(Holder m, size_t inputs, const char* what) {
  // Hugging Face's initialization is normal(0, 0.02) for matrices and embeddings, with zero
  // biases and LayerNorms at (1, 0); those are drawn near their values instead.
  randomize_transformer(
      *m.ptr(), [](torch::Tensor& w) { w.normal_(0, 0.02); }, 0.02);
  m->eval();
  Traceable t;
  t.module = m.ptr();
  t.forward = [m, inputs, what](const std::vector<torch::Tensor>& in) mutable {
    if (in.size() != inputs) throw ExportError(what);
    if constexpr (std::is_same_v<Holder, Bert>)
      return std::vector<torch::Tensor>{m->forward(in[0], in[1])};
    else
      return std::vector<torch::Tensor>{m->forward(in[0])};
  };
  return t;
}

}  // namespace

void randomize_transformer(torch::nn::Module& m, const std::function<void(torch::Tensor&)>& matrix,
                           double bias) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters()) {
    const std::string& k = p.key();
    if (p.value().dim() >= 2)
      matrix(p.value());
    else if (k.size() > 7 && k.compare(k.size() - 7, 7, ".weight") == 0)
      p.value().uniform_(0.9, 1.1);  // LayerNorm scales
    else
      p.value().uniform_(-bias, bias);
  }
}

void add_transformer_models(std::vector<ZooEntry>& z) {
  using S = std::vector<std::vector<int64_t>>;
  // BERT: token ids and an attention mask whose last eighth is padding.
  z.push_back(
      {"bert_base",
       "BERT-base-shaped encoder (Hugging Face's BertModel): 12 layers, d_model 768, 12 "
       "heads, ff 3072, padding mask",
       S{{1, 128}, {1, 128}},
       {at::kLong, at::kLong},
       [](uint64_t seed) {
         torch::manual_seed(seed);
         return traceable(Bert(30522, 512, 768, 12, 3072, 12), 2,
                          "bert_base takes input_ids and attention_mask [batch, seq]");
       },
       [](const S& shapes, uint64_t seed) {
         torch::manual_seed(seed + 1);
         torch::Tensor ids = torch::randint(0, 30522, shapes.at(0), torch::kLong);
         torch::Tensor mask = torch::ones(shapes.at(1), torch::kLong);
         int64_t t = mask.size(-1);
         if (t > 1)
           mask.narrow(-1, t - std::max<int64_t>(1, t / 8), std::max<int64_t>(1, t / 8)).zero_();
         return std::vector<torch::Tensor>{ids, mask};
       },
       0});
  z.push_back({"gpt2_small",
               "GPT-2-small-shaped decoder (Hugging Face's GPT2LMHeadModel): 12 layers, d_model "
               "768, 12 heads, causal mask, tied output projection",
               S{{1, 128}},
               {at::kLong},
               [](uint64_t seed) {
                 torch::manual_seed(seed);
                 return traceable(Gpt2(50257, 1024, 768, 12, 12), 1,
                                  "gpt2_small takes input_ids [batch, seq]");
               },
               [](const S& shapes, uint64_t seed) {
                 torch::manual_seed(seed + 1);
                 return std::vector<torch::Tensor>{
                     torch::randint(0, 50257, shapes.at(0), torch::kLong)};
               },
               0});
}

}  // namespace tonnx::models
