// Exporting TorchScript modules (.pt files from torch.jit.trace / torch.jit.script, saved by
// Python or C++) to ONNX, with their control flow (If, Loop).
//
//   torch::jit::Module m = tonnx::load_torchscript("model.pt");
//   tonnx::ExportSummary s = tonnx::export_model(m, {torch::randn({1, 3, 224, 224})},
//                                                "model.onnx", opt);
//
// Parameters and buffers become graph inputs after the user inputs, in state_dict order and
// named by attribute path (layer1.0.conv1.weight), exactly as for C++ modules: input_names
// renames them. Nodes carry module scopes (ResNet/Sequential[layer1]/BasicBlock[0]/...).
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "tonnx/export.h"

namespace torch::jit {
struct Module;
}

namespace tonnx {

// Loads a library of custom ops into the process, as Python's torch.ops.load_library does:
// torchvision's (its _C .so: torchvision::nms, roi_align...) or your own TORCH_LIBRARY. Call it
// before load_torchscript for a file that uses those ops. Throws ExportError with the loader's
// message.
void load_library(const std::string& path);

// torch::jit::load with errors a user can act on: a missing, unreadable, truncated or
// corrupt file is an ExportError naming the file and what was wrong. Every tensor the loaded
// module holds is checked against the bytes its archive record really holds (LibTorch does not
// check that): a storage declared larger than its record, or a view past its storage, is an
// ExportError naming the tensor, never heap bytes in an export (docs/torchscript.md, "Errors").
torch::jit::Module load_torchscript(const std::string& path);

// Exports `module.forward` on `inputs` (one tensor per argument of forward after self).
// The module is cloned; options.training selects the clone's mode (EVAL by default).
// The summary's eager_outputs are what LibTorch's forward returned on `inputs`.
ExportSummary export_model(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                           const std::string& path, const ExportOptions& options = {});

// Exports `module.forward` on arguments of any of the types forward takes: tensors become
// the graph's inputs (in order); ints, floats, bools, strings, None (an Optional left out) and
// lists of numbers are constants of the export, as torch.onnx does with non-tensor arguments.
ExportSummary export_model_args(torch::jit::Module& module, const std::vector<c10::IValue>& args,
                                const std::string& path, const ExportOptions& options = {});

// Same, but returns the checked model instead of writing it.
ir::Model export_to_model(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                          const ExportOptions& options = {});

}  // namespace tonnx
