// tonnx check: ONNX's checker and strict shape inference on a model file.
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/check.h"

namespace tonnx::cli {
namespace {

const char kCheckHelp[] = R"(usage: tonnx check M.onnx

Runs ONNX's checker and strict shape inference. Exit 0 when valid.
)";

int run_check(const Args& a) {
  if (a.positional.size() != 1) throw UsageError("expected one .onnx file");
  check_model_file(a.positional[0]);
  std::cout << a.positional[0] << ": valid (ONNX checker and strict shape inference passed)\n";
  return 0;
}

}  // namespace

const Command kCheckCommand{"check", kCheckHelp, Spec{}, run_check};

}  // namespace tonnx::cli
