// libonnx's checker and shape inference, and tonnx's one graph printer (printable_graph),
// used by `tonnx print`, `tonnx check` and verbose export alike.
#include "tonnx/check.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <sstream>
#include <unordered_map>

#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace tonnx {

void infer_shapes_strict(onnx::ModelProto& m) {
  try {
    onnx::ShapeInferenceOptions opts(/*check_type=*/true, /*strict_mode=*/1, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    throw CheckError(std::string("ONNX shape inference: ") + e.what());
  }
}

void check_model(onnx::ModelProto& m, bool infer_shapes) {
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    throw CheckError(std::string("ONNX checker: ") + e.what());
  }
  if (infer_shapes) infer_shapes_strict(m);
}

namespace {
// tonnx's reading of every tensor held as external data (initializers and tensor attributes,
// subgraphs included): a regular file inside the model's folder, of the size the tensor
// needs. Inline tensors are not copied.
void check_external_data(const onnx::GraphProto& g, const std::string& dir) {
  auto one = [&](const onnx::TensorProto& t) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) tensor_from_proto(t, dir);
  };
  for (const auto& t : g.initializer()) one(t);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_t()) one(a.t());
      for (const auto& t : a.tensors()) one(t);
      if (a.has_g()) check_external_data(a.g(), dir);
      for (const auto& sub : a.graphs()) check_external_data(sub, dir);
    }
}
}  // namespace

void check_model_file(const std::string& path) {
  onnx::ModelProto m = read_model_proto(path);
  // tonnx's own rules first (libonnx 1.13's checker follows links).
  try {
    check_external_data(m.graph(), std::filesystem::path(path).parent_path().string());
  } catch (const std::exception& e) {
    throw CheckError(e.what());
  }
  try {
    // The path form resolves external data relative to the model's folder.
    onnx::checker::check_model(path);
  } catch (const std::exception& e) {
    throw CheckError(std::string("ONNX checker: ") + e.what());
  }
  infer_shapes_strict(m);
}

namespace {

// Element type names as the seed prints them (Float, Long, ...): the IR's one table.
const char* elem_name(int t) { return ir::dtype_name(static_cast<ir::DType>(t)); }

std::string type_str(const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) return "Dynamic";
  std::ostringstream os;
  os << elem_name(t.tensor_type().elem_type());
  if (t.tensor_type().has_shape()) {
    os << "(";
    const auto& dims = t.tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) {
      if (i) os << ", ";
      if (dims[i].has_dim_value())
        os << dims[i].dim_value();
      else if (!dims[i].dim_param().empty())
        os << dims[i].dim_param();
      else
        os << "?";
    }
    os << ")";
  }
  return os.str();
}

std::string tensor_type_str(const onnx::TensorProto& t) {
  std::ostringstream os;
  os << elem_name(t.data_type()) << "(";
  for (int i = 0; i < t.dims_size(); ++i) os << (i ? ", " : "") << t.dims(i);
  os << ")";
  return os.str();
}

std::string attr_str(const onnx::AttributeProto& a) {
  std::ostringstream os;
  auto list = [&](const auto& v, bool quote) {
    os << "[";
    for (int i = 0; i < v.size(); ++i) {
      if (i) os << ", ";
      if (quote)
        os << '"' << v[i] << '"';
      else
        os << v[i];
    }
    os << "]";
  };
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      os << a.i();
      break;
    case onnx::AttributeProto::FLOAT:
      os << a.f();
      break;
    case onnx::AttributeProto::STRING:
      os << '"' << a.s() << '"';
      break;
    case onnx::AttributeProto::INTS:
      list(a.ints(), false);
      break;
    case onnx::AttributeProto::FLOATS:
      list(a.floats(), false);
      break;
    case onnx::AttributeProto::STRINGS:
      list(a.strings(), true);
      break;
    case onnx::AttributeProto::TENSOR: {
      const auto& t = a.t();
      int64_t n = 1;
      for (auto d : t.dims()) n *= d;
      if (n == 1) {
        try {
          at::Tensor v = tensor_from_proto(t).to(at::kDouble);
          os << "{" << v.item<double>() << "}";
          break;
        } catch (const std::exception&) {
        }
      }
      os << "<Tensor " << tensor_type_str(t) << ">";
      break;
    }
    case onnx::AttributeProto::GRAPH:
      os << "<Graph " << a.g().name() << ">";
      break;
    default:
      os << "<?>";
      break;
  }
  return os.str();
}

}  // namespace

std::string printable_graph(const onnx::ModelProto& m) {
  const auto& g = m.graph();
  std::unordered_map<std::string, std::string> types;
  for (const auto& v : g.input()) types[v.name()] = type_str(v.type());
  for (const auto& v : g.value_info()) types[v.name()] = type_str(v.type());
  for (const auto& v : g.output()) types[v.name()] = type_str(v.type());
  for (const auto& t : g.initializer()) types[t.name()] = tensor_type_str(t);
  auto type_of = [&](const std::string& n) {
    auto it = types.find(n);
    return it == types.end() ? std::string("Dynamic") : it->second;
  };
  std::ostringstream os;
  std::vector<std::string> params;
  std::unordered_map<std::string, bool> listed;
  for (const auto& v : g.input()) {
    params.push_back("%" + v.name() + " : " + type_of(v.name()));
    listed[v.name()] = true;
  }
  for (const auto& t : g.initializer())
    if (!listed.count(t.name())) params.push_back("%" + t.name() + " : " + type_of(t.name()));
  os << "graph(";
  for (size_t i = 0; i < params.size(); ++i) os << (i ? ",\n      " : "") << params[i];
  os << ") {\n";
  for (const auto& n : g.node()) {
    os << "  ";
    for (int i = 0; i < n.output_size(); ++i)
      os << (i ? ", " : "") << "%" << n.output(i) << " : " << type_of(n.output(i));
    os << " = " << (n.domain().empty() ? "onnx" : n.domain()) << "::" << n.op_type();
    if (n.attribute_size()) {
      std::vector<const onnx::AttributeProto*> attrs;
      for (const auto& a : n.attribute()) attrs.push_back(&a);
      std::sort(attrs.begin(), attrs.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
      os << "[";
      for (size_t i = 0; i < attrs.size(); ++i)
        os << (i ? ", " : "") << attrs[i]->name() << "=" << attr_str(*attrs[i]);
      os << "]";
    }
    os << "(";
    for (int i = 0; i < n.input_size(); ++i)
      os << (i ? ", " : "") << (n.input(i).empty() ? "None" : "%" + n.input(i));
    os << ")";
    const std::string& doc = n.doc_string();
    if (doc.rfind("scope: ", 0) == 0) os << ", " << doc.substr(0, doc.find('\n'));
    os << "\n";
  }
  os << "  return (";
  for (int i = 0; i < g.output_size(); ++i) os << (i ? ", " : "") << "%" << g.output(i).name();
  os << ");\n}\n";
  return os.str();
}

}  // namespace tonnx
