// The seed's AlexNet example in C++: export with the seed's names, verbose; then run the
// file on tonnx's backend and compare with LibTorch. Usage: example_alexnet OUT.onnx [DATA_DIR]
#include <torch/torch.h>

#include <iostream>

#include "tonnx/backend.h"
#include "tonnx/export.h"
#include "tonnx/models.h"
#include "tonnx/proto.h"

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "alexnet.onnx";
  try {
    torch::manual_seed(0);
    auto model = tonnx::models::AlexNet();
    tonnx::models::init_weights(*model);
    model->eval();
    auto dummy_input = torch::randn({10, 3, 224, 224});

    tonnx::ExportOptions opt;
    opt.input_names = {"actual_input_1"};
    for (int i = 0; i < 16; ++i) opt.input_names.push_back("learned_" + std::to_string(i));
    opt.output_names = {"output1"};
    opt.verbose = true;
    tonnx::ExportSummary summary = tonnx::export_model(model, {dummy_input}, path, opt);
    std::cout << summary.str();

    // The seed's backend step: rep = prepare(model, "CPU"); outputs = rep.run(inputs).
    auto rep = tonnx::backend::prepare(path, "CPU");
    std::vector<torch::Tensor> outputs = rep.run({dummy_input});
    torch::Tensor expected = summary.eager_outputs.at(0);
    double diff = (outputs.at(0) - expected).abs().max().item<double>();
    std::cout << "== tonnx backend vs LibTorch\nmax_abs_diff=" << diff << " (output magnitude "
              << expected.abs().max().item<double>() << ")\n";
    if (argc > 2) {
      tonnx::TestDataSet set;
      set.inputs = {dummy_input};
      set.outputs = summary.eager_outputs;
      tonnx::write_test_data(argv[2], set);
    }
    return diff <= 1e-4 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "example_alexnet: " << e.what() << "\n";
    return 1;
  }
}
