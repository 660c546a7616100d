// Exports a small module with an installed tonnx and runs it back on tonnx's backend.
#include <torch/torch.h>

#include <iostream>

#include "tonnx/backend.h"
#include "tonnx/export.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  torch::nn::Sequential model(torch::nn::Linear(4, 3), torch::nn::ReLU());
  model->eval();
  auto x = torch::randn({2, 4});
  auto summary = tonnx::export_model(model, {x}, argv[1]);
  auto out = tonnx::backend::prepare(argv[1], "CPU").run({x});
  double diff = (out[0] - summary.eager_outputs[0]).abs().max().item<double>();
  std::cout << "consumer: exported " << summary.num_nodes << " nodes, max diff " << diff << "\n";
  return diff < 1e-5 ? 0 : 1;
}
