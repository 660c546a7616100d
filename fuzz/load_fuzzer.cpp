// Harness: the model reader. Bytes -> ModelProto -> the printable graph (tonnx print),
// tonnx's IR (model_from_proto, external data resolved in a folder of the harness) and the
// backend's schema validation. Errors are exceptions; anything else (a sanitizer report, a
// crash, a hang) is a finding. libonnx's checker and shape inference are not fuzzed here:
// tonnx runs them in a child process (src/check/check.cpp), so their crashes are errors, and a
// fork per input would run this harness at a few inputs a second.
#include <onnx/onnx_pb.h>

#include <exception>

#include "fuzz_util.h"
#include "backend/validate.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    (void)tonnx::printable_graph(m);
  } catch (const std::exception&) {
  }
  try {
    tonnx::ir::Model model = tonnx::model_from_proto(m, tonnx::fuzz::model_dir());
    tonnx::backend::validate_model(model);
  } catch (const std::exception&) {
  }
  return 0;
}
