// tonnx check: ONNX's checker and strict shape inference on a model file.
#include <filesystem>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/backend.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"

namespace tonnx::cli {
namespace {

const char kCheckHelp[] = R"(usage: tonnx check M.onnx

Runs ONNX's checker and strict shape inference (libonnx, which knows ai.onnx opsets up to
17). A model of a later opset (18 to 23) is judged by tonnx's validation instead, against
ONNX's operator schemas of that opset, without shape inference; the answer says which judged
the model. Exit 0 when valid.
)";

int run_check(const Args& a) {
  if (a.positional.size() != 1) throw UsageError("expected one .onnx file");
  const std::string& path = a.positional[0];
  int64_t opset = -1;
  const onnx::ModelProto proto = read_model_proto(path);
  for (const auto& o : proto.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset > kLibonnxMaxOpset) {
    backend::validate(model_from_proto(proto, std::filesystem::path(path).parent_path().string()));
    std::cout << path << ": valid (tonnx's validation against ONNX's schemas of opset " << opset
              << "; libonnx's checker and shape inference know opsets up to " << kLibonnxMaxOpset
              << " and did not judge it)\n";
    return 0;
  }
  check_model_file(path);
  std::cout << path << ": valid (ONNX checker and strict shape inference passed)\n";
  return 0;
}

}  // namespace

const Command kCheckCommand{"check", kCheckHelp, Spec{}, run_check};

}  // namespace tonnx::cli
