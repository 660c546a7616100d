// The zoo's transformers (transformers.cpp): bert_base and gpt2_small, and the random weights
// every transformer of the zoo gets.
#pragma once

#include <functional>
#include <vector>

#include "tonnx/models.h"

namespace tonnx::models {

void add_transformer_models(std::vector<ZooEntry>& z);

// Random weights for a transformer, each parameter its own draw (as a trained model has, so
// that a wrong one shows): matrices and embeddings by `matrix`, LayerNorm scales (".weight"
// vectors) U(0.9, 1.1), every other vector U(-bias, bias).
void randomize_transformer(torch::nn::Module& m, const std::function<void(torch::Tensor&)>& matrix,
                           double bias);

}  // namespace tonnx::models
