// Harness: the backend. Bytes -> ModelProto -> prepare (validation, folding, fusion, kernel
// factories) -> one run on small inputs made from the declared input types, with a 2 s
// RunOptions limit. Errors are exceptions; a sanitizer report, crash or hang is a finding.
#include <onnx/onnx_pb.h>

#include <exception>

#include "fuzz_util.h"
#include "tonnx/backend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return 0;
  tonnx::backend::RunValues inputs;
  if (!tonnx::fuzz::make_inputs(m, inputs)) return 0;
  try {
    tonnx::backend::PrepareOptions opts;
    opts.check_input_shapes = false;  // inputs are capped at 4 per dim
    auto rep = tonnx::backend::prepare(m, "CPU", opts, tonnx::fuzz::model_dir());
    tonnx::backend::RunOptions limits;
    limits.timeout_seconds = 2;
    (void)rep.run_values(inputs, limits);
  } catch (const std::exception&) {
  }
  return 0;
}
