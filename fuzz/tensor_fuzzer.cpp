// Harness: TensorProto files (tonnx run --input x.pb, test data). Bytes -> TensorProto ->
// tensor (external data resolved in the harness's folder) -> TensorProto again.
#include <onnx/onnx_pb.h>

#include <exception>

#include "fuzz_util.h"
#include "tonnx/proto.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  return tonnx::fuzz::mutate_tensor(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::TensorProto p;
  if (!p.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    at::Tensor t = tonnx::tensor_from_proto(p, tonnx::fuzz::model_dir());
    (void)tonnx::tensor_to_proto(t, p.name());
  } catch (const std::exception&) {
  }
  return 0;
}
