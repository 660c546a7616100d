// tonnx export --float64-reference: the model run in double precision by LibTorch, the
// reference that whole-model accuracy is measured against (docs/backend.md, "Accuracy").
#include <c10/core/DefaultDtype.h>
#include <torch/torch.h>

#include <filesystem>
#include <stdexcept>

#include "cli/commands.h"
#include "tonnx/proto.h"

namespace tonnx::cli {

void write_float64_reference(const std::string& dir, Traceable& model,
                             const std::vector<at::Tensor>& inputs) {
  if (!model.module)
    throw std::runtime_error("--float64-reference: the model has no module to convert to double");
  torch::NoGradGuard no_grad;
  // Floating parameters and buffers only (Module::to(dtype) would turn an integer buffer of
  // position ids into doubles as well).
  for (auto& t : model.module->parameters(true))
    if (t.is_floating_point()) t.set_data(t.to(at::kDouble));
  for (auto& t : model.module->buffers(true))
    if (t.is_floating_point()) t.set_data(t.to(at::kDouble));
  std::vector<at::Tensor> in;
  for (const auto& t : inputs) in.push_back(t.is_floating_point() ? t.to(at::kDouble) : t);
  // Tensors the forward makes itself (masks, positions) in double too.
  const caffe2::TypeMeta before = c10::get_default_dtype();
  c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
  std::vector<at::Tensor> outs;
  try {
    outs = model.forward(in);
  } catch (...) {
    c10::set_default_dtype(before);
    throw;
  }
  c10::set_default_dtype(before);
  const std::filesystem::path out = std::filesystem::path(dir) / "float64_reference";
  std::filesystem::create_directories(out);
  for (size_t k = 0; k < outs.size(); ++k)
    save_tensor_proto(tensor_to_proto(outs[k].contiguous()),
                      (out / ("output_" + std::to_string(k) + ".pb")).string());
}

}  // namespace tonnx::cli
