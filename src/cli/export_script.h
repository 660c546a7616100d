// `tonnx export MODEL.pt`: the TorchScript path of the export command.
#pragma once

#include <string>
#include <vector>

namespace tonnx::cli {

// True when MODEL names a TorchScript file (ends in .pt, or is an existing file).
bool is_torchscript_model(const std::string& model);
struct Args;
// Runs the export of a TorchScript file, with the arguments cmd_export parsed.
int cmd_export_script(const Args& a);

}  // namespace tonnx::cli
