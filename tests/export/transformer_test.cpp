// Transformers from LibTorch's C++ frontend: MultiheadAttention with masks, TransformerEncoder
// and TransformerDecoder, exported and checked on ONNX Runtime and tonnx's backend.
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class Transformer : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(5); }
};
INSTANTIATE_TEST_SUITE_P(Opsets, Transformer, ::testing::Values(13, 17));

TEST_P(Transformer, MultiheadAttentionWithMasks) {
  torch::nn::MultiheadAttention mha(torch::nn::MultiheadAttentionOptions(16, 4));
  mha->eval();
  Traceable t{mha.ptr(), [mha](const std::vector<Tensor>& in) mutable {
                // A causal attention mask made inside the model (triu) and a key padding mask.
                int64_t l = in[0].size(0);
                Tensor causal = torch::triu(torch::ones({l, l}), 1).to(torch::kBool);
                auto [out, w] = mha->forward(in[0], in[0], in[0], in[1], true, causal);
                return std::vector<Tensor>{out, w};
              }};
  Tensor pad =
      torch::tensor({{false, false, false, true, true}, {false, false, false, false, false}});
  ExportOptions opt;
  opt.opset_version = GetParam();
  expect_export_matches(t, {torch::randn({5, 2, 16}), pad}, opt,
                        "mha_masks" + std::to_string(GetParam()), Tolerance{1e-3, 1e-5});
}

TEST_P(Transformer, EncoderAndDecoderStacks) {
  torch::nn::TransformerEncoder enc(torch::nn::TransformerEncoderOptions(
      torch::nn::TransformerEncoderLayerOptions(16, 2).dim_feedforward(32).dropout(0.1), 2));
  torch::nn::TransformerDecoder dec(torch::nn::TransformerDecoderOptions(
      torch::nn::TransformerDecoderLayerOptions(16, 2).dim_feedforward(32).activation(torch::kGELU),
      2));
  enc->eval();
  dec->eval();
  ExportOptions opt;
  opt.opset_version = GetParam();
  Traceable te{enc.ptr(), [enc](const std::vector<Tensor>& in) mutable {
                 return std::vector<Tensor>{enc->forward(in[0])};
               }};
  expect_export_matches(te, {torch::randn({6, 2, 16})}, opt, "encoder" + std::to_string(GetParam()),
                        Tolerance{1e-3, 1e-5});
  Traceable td{dec.ptr(), [dec](const std::vector<Tensor>& in) mutable {
                 int64_t l = in[0].size(0);
                 Tensor mask = torch::triu(torch::full({l, l}, -INFINITY), 1);
                 return std::vector<Tensor>{dec->forward(in[0], in[1], mask)};
               }};
  expect_export_matches(td, {torch::randn({4, 2, 16}), torch::randn({6, 2, 16})}, opt,
                        "decoder" + std::to_string(GetParam()), Tolerance{1e-3, 1e-5});
}

}  // namespace
}  // namespace tonnx::test
