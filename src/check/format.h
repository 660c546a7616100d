// How `tonnx print` writes types and attributes, shared by the text and the picture forms.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace tonnx::detail {

// Float(10, 3, 224, 224); symbolic dims by name, unknown ones as ?; "Dynamic" without a type.
std::string type_str(const onnx::TypeProto& t);
std::string tensor_type_str(const onnx::TensorProto& t);
// An attribute's value: 3, [1, 1], "NOTSET", <Tensor Long(4) {-1, 1, 1, 1}>, <Graph body>.
// A tensor held as external data is read from base_dir (the model's folder) under the
// backend's rules, and never without one; one that cannot be read says why.
std::string attr_str(const onnx::AttributeProto& a, const std::string& base_dir = {});

}  // namespace tonnx::detail
