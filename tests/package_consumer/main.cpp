// Exports a small module with an installed tonnx and runs it back on tonnx's backend.
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
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
  // The export's check ran in the installed tonnx-check, which stays as a child of this process.
  int checkers = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    for (int pid = 0; children >> pid;) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string name;
      std::getline(comm, name);
      checkers += name == "tonnx-check";
    }
  }
  std::cout << "consumer: exported " << summary.num_nodes << " nodes, max diff " << diff
            << ", checker processes " << checkers << "\n";
  return diff < 1e-5 && checkers == 1 ? 0 : 1;
}
