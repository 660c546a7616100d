// `tonnx export MODEL.pt ...`: exports a TorchScript file (traced or scripted) with example
// inputs read from TensorProto files (--inputs, dtypes and shapes kept) or random float
// inputs of given shapes (--input-shape).
#include <torch/script.h>

#include <filesystem>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/export_script.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::cli {
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> parse_shape(const std::string& one) {
  std::vector<int64_t> dims;
  for (const auto& d : split(one, 'x')) {
    int64_t v = parse_int(d, "dimension");
    if (v < 0) throw UsageError("--input-shape: dimension " + d + " is negative");
    dims.push_back(v);
  }
  if (dims.empty()) throw UsageError("--input-shape: empty shape '" + one + "'");
  return dims;
}

torch::Tensor read_input(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UsageError("--inputs: '" + path + "' is not a file (expected an ONNX TensorProto .pb)");
  try {
    return tensor_from_proto(read_tensor_proto(path), fs::path(path).parent_path().string());
  } catch (const std::exception& e) {
    throw UsageError("--inputs: cannot read '" + path + "' as an ONNX TensorProto: " + e.what());
  }
}

}  // namespace

bool is_torchscript_model(const std::string& model) {
  std::error_code ec;
  bool pt = model.size() > 3 && model.compare(model.size() - 3, 3, ".pt") == 0;
  return pt || fs::is_regular_file(model, ec);
}

int cmd_export_script(const Args& a) {
  const std::string model = a.positional[0];
  auto out = a.get("-o") ? a.get("-o") : a.get("--output");
  if (!out) throw UsageError("missing -o OUT.onnx");
  if (a.has("--inputs") == a.has("--input-shape"))
    throw UsageError(
        "a TorchScript model needs example inputs: give either --inputs "
        "in0.pb,in1.pb (ONNX TensorProto files) or --input-shape 1x3x224x224");

  ExportOptions opt = export_options(a);

  std::vector<torch::Tensor> inputs;
  if (auto v = a.get("--inputs")) {
    for (const auto& p : split(*v, ',')) inputs.push_back(read_input(p));
  } else {
    uint64_t seed = 0;
    if (auto s = a.get("--seed")) seed = static_cast<uint64_t>(parse_int(*s, "--seed"));
    torch::manual_seed(seed);
    for (const auto& one : split(*a.get("--input-shape"), ','))
      inputs.push_back(torch::randn(parse_shape(one)));
  }

  torch::jit::Module m = load_torchscript(model);
  ExportSummary s = export_model(m, inputs, *out, opt);
  if (auto dir = a.get("--test-data")) write_export_test_data(*dir, inputs, s);
  std::cout << s.str();
  return 0;
}

}  // namespace tonnx::cli
