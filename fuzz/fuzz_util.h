// Shared by the libFuzzer harnesses: a folder for external data, a structure-aware mutator of
// ModelProto and TensorProto bytes, and inputs made from a model's declared input types.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tonnx/backend.h"

namespace tonnx::fuzz {

// A folder that holds the harnesses' external-data files (data.bin, 4 KiB of floats), and a
// file outside it that nothing may read (secret.bin). Made once per process.
const std::string& model_dir();

// Mutates a serialized ModelProto in place (size bytes of max_size): when it parses, one
// structural change (an attribute, a dim, a tensor's data or size, a node's inputs or op, an
// opset, an external-data entry) chosen by seed; otherwise, or one time in five, libFuzzer's
// byte mutation. Returns the new size.
size_t mutate_model(uint8_t* data, size_t size, size_t max_size, unsigned seed);
// The same for a serialized TensorProto.
size_t mutate_tensor(uint8_t* data, size_t size, size_t max_size, unsigned seed);

// Values for every graph input that is not an initializer, from its declared type: dims
// capped at 4 (symbolic ones are 2), at most 4096 elements, small deterministic values with a
// NaN and an infinity among the floats. Returns false for types it cannot make.
bool make_inputs(const onnx::ModelProto& m, backend::RunValues& out);

}  // namespace tonnx::fuzz
