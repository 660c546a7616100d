// Conversion between tonnx's IR and libonnx's protobuf classes, and file I/O.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <iosfwd>
#include <string>

#include "tonnx/ir.h"

namespace tonnx {

// Tensor <-> TensorProto. Reading checks every size against the data it has: a malformed
// proto is an error, never a read outside its buffer. External data is resolved against
// base_dir and must stay inside it.
onnx::TensorProto tensor_to_proto(const at::Tensor& t, const std::string& name = {});
at::Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir = {});

// With with_initializer_data=false, initializers carry names, types and dims but empty
// raw_data: a skeleton for the checker and shape inference that costs no weight copies.
onnx::ModelProto model_to_proto(const ir::Model& m, bool with_initializer_data = true);
ir::Model model_from_proto(const onnx::ModelProto& p, const std::string& base_dir = {});

// Reads and parses a file; errors name the path.
onnx::ModelProto read_model_proto(const std::string& path);
onnx::TensorProto read_tensor_proto(const std::string& path);
ir::Model load_model(const std::string& path);

// Writes `bytes` to `path` through a temporary file in the same folder and a rename: a
// failure leaves no partial file and whatever was at `path` before untouched.
void write_file_atomic(const std::string& path, const std::string& bytes);
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);
// Writes `skeleton` (from model_to_proto(m, false), possibly with inferred value_info) with
// every initializer's bytes streamed straight from the model's tensors: no copy of the
// weights is made. Atomic like write_file_atomic.
void save_model(const ir::Model& m, onnx::ModelProto& skeleton, const std::string& path);
void save_model_proto(const onnx::ModelProto& m, const std::string& path);
void save_tensor_proto(const onnx::TensorProto& t, const std::string& path);

// The ONNX backend test layout: DIR/test_data_set_N/{input,output}_K.pb.
struct TestDataSet {
  std::vector<at::Tensor> inputs, outputs;
  std::vector<std::string> input_names, output_names;
};
void write_test_data(const std::string& dir, const TestDataSet& set, int index = 0);
std::vector<TestDataSet> read_test_data(const std::string& dir);

}  // namespace tonnx
