// Checking and printing ONNX models: libonnx's checker and shape inference, and a readable
// graph in the style of torch.onnx's verbose output.
#pragma once

#include <onnx/onnx_pb.h>

#include <stdexcept>
#include <string>

namespace tonnx {

class CheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs onnx::checker::check_model, then strict shape inference (type checks on, node errors
// thrown). Inferred types are added to m.graph().value_info(). Throws CheckError.
void check_model(onnx::ModelProto& m, bool infer_shapes = true);
// The same for a file: external data is resolved in the model's folder under tonnx's rules
// (contained, regular files, sizes checked) before libonnx's checker sees the model.
void check_model_file(const std::string& path);
// Strict shape inference alone (no checker, no external data read); throws CheckError.
void infer_shapes_strict(onnx::ModelProto& m);

// The graph, one node a line: %17 : Float(10, 64, 55, 55) = onnx::Conv[...](%x, %w), scope: ...
std::string printable_graph(const onnx::ModelProto& m);

}  // namespace tonnx
