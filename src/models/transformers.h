// The zoo's transformers (transformers.cpp): bert_base and gpt2_small.
#pragma once

#include <vector>

#include "tonnx/models.h"

namespace tonnx::models {

void add_transformer_models(std::vector<ZooEntry>& z);

}  // namespace tonnx::models
