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
// base_dir (the model's folder: folder_of(model path)) and must stay inside it; with no
// base_dir, a tensor held as external data is an error, never a read of the working directory.
onnx::TensorProto tensor_to_proto(const at::Tensor& t, const std::string& name = {});
at::Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir = {});
// The folder a file lies in, as base_dir above wants it: "." for a bare file name.
std::string folder_of(const std::string& path);

// With with_initializer_data=false, initializers carry names, types and dims but empty
// raw_data: a skeleton for the checker and shape inference that costs no weight copies.
onnx::ModelProto model_to_proto(const ir::Model& m, bool with_initializer_data = true);
// External data as tensor_from_proto: read from base_dir, or refused without one.
ir::Model model_from_proto(const onnx::ModelProto& p, const std::string& base_dir = {});

// Reads and parses a file; errors name the path.
onnx::ModelProto read_model_proto(const std::string& path);
onnx::TensorProto read_tensor_proto(const std::string& path);
ir::Model load_model(const std::string& path);

// A new folder under $TMPDIR (tonnx-PREFIX-XXXXXX), removed with its contents when this goes.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `bytes` to `path` through a temporary file in the same folder and a rename: a
// failure leaves no partial file and whatever was at `path` before untouched.
void write_file_atomic(const std::string& path, const std::string& bytes);
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write);
// Writes `skeleton` (from model_to_proto(m, false), possibly with inferred value_info) with
// every initializer's bytes streamed straight from the model's tensors: no copy of the
// weights is made. Atomic like write_file_atomic.
void save_model(const ir::Model& m, onnx::ModelProto& skeleton, const std::string& path);

// External data (ONNX's layout): `location` is the data file's name relative to the model's
// folder; initializers of at least `threshold` bytes are written there, each at an offset
// aligned to `alignment` bytes, straight from the tensor's memory. A tensor held by several
// initializers (tied weights) is written once. The data file and then the model go through
// temporaries and renames: a failure leaves the previous pair untouched and nothing behind.
struct ExternalDataOptions {
  std::string location;
  int64_t threshold = 1024;
  int64_t alignment = 4096;
};
struct SavedModel {
  uint64_t model_bytes = 0;
  uint64_t data_bytes = 0;  // 0: no data file was written
  std::string data_path;
};
SavedModel save_model(const ir::Model& m, onnx::ModelProto& skeleton, const std::string& path,
                      const ExternalDataOptions& external);
// The serialized size save_model(m, skeleton, path) would write, about, without writing it.
uint64_t inline_model_bytes(const ir::Model& m, const onnx::ModelProto& skeleton);
// Throws unless `location` is a file name relative to the model's folder that stays inside it.
void check_external_location(const std::string& location, const std::string& model_path);
// tonnx convert: rewrites the model file `in` as `out` with the weights (initializers, in
// subgraphs too) of at least external.threshold bytes in one external data file, or with
// external.location empty, every tensor held externally back inside the model. External data
// of `in` is read with the backend's rules (inside its folder, no links). Atomic as save_model.
SavedModel convert_model_file(const std::string& in, const std::string& out,
                              const ExternalDataOptions& external);
void save_model_proto(const onnx::ModelProto& m, const std::string& path);
void save_tensor_proto(const onnx::TensorProto& t, const std::string& path);

// The ONNX backend test layout: DIR/test_data_set_N/{input,output}_K.pb.
struct TestDataSet {
  std::vector<at::Tensor> inputs, outputs;
  std::vector<std::string> input_names, output_names;
};
void write_test_data(const std::string& dir, const TestDataSet& set, int index = 0);
std::vector<TestDataSet> read_test_data(const std::string& dir);
// The set's inputs for a model whose inputs are `model_inputs`: by name where every input file
// is named and every model input is among them (a set may hold example inputs the export
// dropped, as torch.onnx does, because the model never reads them), else by position. Throws
// std::invalid_argument naming set `index` when there are more files than model inputs and
// names cannot tell which to use.
std::vector<at::Tensor> set_inputs(const TestDataSet& set,
                                   const std::vector<std::string>& model_inputs, size_t index = 0);

}  // namespace tonnx
