// tonnx convert: moves a model's weights into one external data file or back inside it, and
// converts it to another ai.onnx opset.
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/check.h"
#include "tonnx/opset.h"
#include "tonnx/proto.h"

namespace tonnx::cli {

namespace {

const char kConvertHelp[] =
    R"(usage: tonnx convert IN.onnx -o OUT.onnx (--external-data[=NAME] | --inline | --opset N)

Rewrites a model with its weights in one external data file, or with every externally held
tensor back inside the model file. Works on models from any tool (torch.onnx's one file per
tensor included) and streams: weights are written from the input's memory or mapped files.
With --opset, converts the model to ai.onnx opset N (9 to 23, up or down) with the adapters of
ONNX's version converter for the ops that changed (docs/operators.md, "Opset conversion"); a
node the target opset cannot express fails the conversion, named with the reason.
OUT may be IN. The data file and then the model are written through temporaries and renamed:
a failure leaves what was there before untouched.

options:
  -o, --output PATH            the model to write
  --opset N                    convert to ai.onnx opset N (9 to 23); with --external-data the
                               weights go to one data file, else inside the model
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
  std::optional<int64_t> opset = a.integer(
      "--opset", kMinConvertOpset, kMaxConvertOpset,
      "use " + std::to_string(kMinConvertOpset) + " to " + std::to_string(kMaxConvertOpset));
  if (opset && a.has("--inline"))
    throw UsageError("--opset writes the weights inside the model unless --external-data");
  if (!opset && a.has("--inline") == a.has("--external-data"))
    throw UsageError("give exactly one of --external-data[=NAME], --inline and --opset N");
  ExternalDataOptions ext;
  if (a.has("--external-data-threshold") && a.has("--inline"))
    throw UsageError("--external-data-threshold goes with --external-data");
  ext.threshold = a.integer("--external-data-threshold", 0, INT64_MAX, "give a byte count >= 0")
                      .value_or(ext.threshold);
  if (a.has("--external-data")) {
    auto name = a.get("--external-data");
    ext.location = name ? *name : std::filesystem::path(*out).filename().string() + ".data";
  }
  SavedModel s;
  if (opset) {
    // Value types from libonnx's shape inference where it knows the opset (best effort): the
    // steps down to 10 make negative axes positive from the ranks.
    onnx::ModelProto proto = read_model_proto(a.positional[0]);
    int64_t from = -1;
    for (const auto& o : proto.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") from = o.version();
    if (from >= 1 && from <= kLibonnxMaxOpset) {
      try {
        infer_shapes_strict(proto);
      } catch (const std::exception&) {  // the conversion names what it lacks
      }
    }
    ir::Model m =
        model_from_proto(proto, std::filesystem::path(a.positional[0]).parent_path().string());
    OpsetConversion c = convert_opset(m, static_cast<int>(*opset));
    onnx::ModelProto skeleton = model_to_proto(m, false);
    if (a.has("--external-data")) {
      s = save_model(m, skeleton, *out, ext);
    } else {
      save_model(m, skeleton, *out);
      s.model_bytes = std::filesystem::file_size(*out);
    }
    std::cout << "opset " << c.from << " -> " << c.to << ": " << c.nodes_changed
              << " node(s) rewritten\n";
  } else {
    s = convert_model_file(a.positional[0], *out, ext);
  }
  std::cout << "converted " << a.positional[0] << " -> " << *out << " (" << s.model_bytes
            << " bytes)\n";
  if (!s.data_path.empty())
    std::cout << "  external data " << s.data_path << " (" << s.data_bytes << " bytes)\n";
  return 0;
}

}  // namespace

const Command kConvertCommand{"convert", kConvertHelp,
                              Spec{{"-o", "--output", "--external-data-threshold", "--opset"},
                                   {"--inline"},
                                   {},
                                   {"--external-data"}},
                              run_convert};

}  // namespace tonnx::cli
