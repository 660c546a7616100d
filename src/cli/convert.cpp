// tonnx convert: moves a model's weights into one external data file or back inside it.
#include <filesystem>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/proto.h"

namespace tonnx::cli {

namespace {

const char kConvertHelp[] =
    R"(usage: tonnx convert IN.onnx -o OUT.onnx (--external-data[=NAME] | --inline)

Rewrites a model with its weights in one external data file, or with every externally held
tensor back inside the model file. Works on models from any tool (torch.onnx's one file per
tensor included) and streams: weights are written from the input's memory or mapped files.
OUT may be IN. The data file and then the model are written through temporaries and renamed:
a failure leaves what was there before untouched.

options:
  -o, --output PATH            the model to write
  --external-data[=NAME]       initializers of at least the threshold go into NAME, relative
                               to OUT's folder (default OUT's file name + .data), each at an
                               offset aligned to 4096 bytes; smaller external tensors come back
                               inside the model
  --external-data-threshold N  the smallest tensor (bytes) moved out (default 1024)
  --inline                     every external tensor back inside the model (under 2 GB)
)";

int run_convert(const Args& a) {
  if (a.positional.size() != 1)
    throw UsageError("expected one input model, got " + std::to_string(a.positional.size()));
  auto out = a.output();
  if (!out) throw UsageError("missing -o OUT.onnx");
  if (a.has("--inline") == a.has("--external-data"))
    throw UsageError("give exactly one of --external-data[=NAME] and --inline");
  ExternalDataOptions ext;
  if (a.has("--external-data-threshold") && a.has("--inline"))
    throw UsageError("--external-data-threshold goes with --external-data");
  ext.threshold = a.integer("--external-data-threshold", 0, INT64_MAX, "give a byte count >= 0")
                      .value_or(ext.threshold);
  if (a.has("--external-data")) {
    auto name = a.get("--external-data");
    ext.location = name ? *name : std::filesystem::path(*out).filename().string() + ".data";
  }
  SavedModel s = convert_model_file(a.positional[0], *out, ext);
  std::cout << "converted " << a.positional[0] << " -> " << *out << " (" << s.model_bytes
            << " bytes)\n";
  if (!s.data_path.empty())
    std::cout << "  external data " << s.data_path << " (" << s.data_bytes << " bytes)\n";
  return 0;
}

}  // namespace

const Command kConvertCommand{
    "convert", kConvertHelp,
    Spec{{"-o", "--output", "--external-data-threshold"}, {"--inline"}, {}, {"--external-data"}},
    run_convert};

}  // namespace tonnx::cli
