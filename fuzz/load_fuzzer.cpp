// Harness: the model reader. Bytes -> ModelProto -> libonnx's checker and strict shape
// inference (tonnx check), the printable graph (tonnx print), and tonnx's IR
// (model_from_proto, external data resolved in a folder of the harness). Errors are
// exceptions; anything else (a sanitizer report, a crash, a hang) is a finding.
#include <onnx/onnx_pb.h>

#include <exception>

#include "fuzz_util.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  return tonnx::fuzz::mutate_model(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    onnx::ModelProto copy = m;
    tonnx::check_model(copy);
  } catch (const std::exception&) {
  }
  try {
    (void)tonnx::printable_graph(m);
  } catch (const std::exception&) {
  }
  try {
    (void)tonnx::model_from_proto(m, tonnx::fuzz::model_dir());
  } catch (const std::exception&) {
  }
  return 0;
}
