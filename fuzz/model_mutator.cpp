// The structure-aware mutator of the two ModelProto harnesses (fuzz_load, fuzz_run).
#include "fuzz_util.h"

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  return tonnx::fuzz::mutate_model(data, size, max_size, seed);
}
