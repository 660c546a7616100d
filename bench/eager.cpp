// LibTorch eager latency of a zoo model, for bench/backend.py: the same weights (seed) and
// inputs that `tonnx export NAME --seed S` uses. Prints eager_median_ms=X.
// Usage: bench_eager NAME [--threads N] [--repeat N] [--seed S] [--input-shape AxBxC]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "tonnx/models.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr
        << "usage: bench_eager NAME [--threads N] [--repeat N] [--seed S] [--input-shape AxBxC]\n";
    return 2;
  }
  int threads = 1, repeat = 20;
  uint64_t seed = 0;
  std::vector<int64_t> shape;  // the first input's shape, as `tonnx export --input-shape`
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (k == "--repeat")
      repeat = std::stoi(argv[i + 1]);
    else if (k == "--seed")
      seed = std::stoull(argv[i + 1]);
    else if (k == "--input-shape") {
      std::string v = std::string(argv[i + 1]) + "x";
      for (size_t p = 0, q; (q = v.find('x', p)) != std::string::npos; p = q + 1)
        shape.push_back(std::stoll(v.substr(p, q - p)));
    }
  }
  try {
    at::set_num_threads(threads);
    const auto& entry = tonnx::models::find_model(argv[1]);
    auto model = entry.make(seed);
    auto shapes = entry.input_shapes;
    if (!shape.empty()) shapes.at(0) = shape;
    auto inputs = entry.inputs(shapes, seed);
    torch::InferenceMode guard;
    model.forward(inputs);  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      model.forward(inputs);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::cout << "eager_median_ms=" << ms[ms.size() / 2] << "\n";
  } catch (const std::exception& e) {
    std::cerr << "bench_eager: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
