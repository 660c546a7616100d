// ONNX backend test cases on tonnx's backend; see conformance.h and docs/backend.md.
#include "tonnx/conformance.h"

#include <ATen/ATen.h>
#include <onnx/onnx-data.pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "backend/kernels/kernel.h"
#include "tonnx/proto.h"

namespace tonnx::backend {
namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename Proto>
Proto parse_file(const std::string& path, const char* what) {
  Proto p;
  if (!p.ParseFromString(read_file(path)))
    throw std::runtime_error("'" + path + "' is not a serialized onnx " + what);
  return p;
}

int64_t numel_of(const onnx::TensorProto& p) {
  int64_t n = 1;
  for (int64_t d : p.dims()) {
    if (d < 0 || (d != 0 && n > std::numeric_limits<int64_t>::max() / d))
      throw std::runtime_error("tensor '" + p.name() + "' has invalid dims");
    n *= d;
  }
  return n;
}

// Unsigned types ATen lacks, widened (see storage_type).
at::Tensor unsigned_from_proto(const onnx::TensorProto& p) {
  auto dt = static_cast<ir::DType>(p.data_type());
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  int64_t n = numel_of(p);
  at::Tensor out = at::empty(dims, at::TensorOptions().dtype(storage_type(dt)));
  size_t width = dt == ir::DType::UInt16 ? 2 : dt == ir::DType::UInt32 ? 4 : 8;
  auto get = [&](int64_t i) -> uint64_t {
    if (p.has_raw_data()) {
      uint64_t v = 0;
      std::memcpy(&v, p.raw_data().data() + i * width, width);
      return v;
    }
    return dt == ir::DType::UInt16 ? static_cast<uint64_t>(p.int32_data(static_cast<int>(i)))
                                   : p.uint64_data(static_cast<int>(i));
  };
  size_t have = p.has_raw_data()          ? p.raw_data().size() / width
                : dt == ir::DType::UInt16 ? static_cast<size_t>(p.int32_data_size())
                                          : static_cast<size_t>(p.uint64_data_size());
  if (have != static_cast<size_t>(n))
    throw std::runtime_error("tensor '" + p.name() + "' holds " + std::to_string(have) +
                             " values but its dims need " + std::to_string(n));
  for (int64_t i = 0; i < n; ++i) {
    if (out.scalar_type() == at::kInt)
      out.data_ptr<int32_t>()[i] = static_cast<int32_t>(get(i));
    else
      out.data_ptr<int64_t>()[i] = static_cast<int64_t>(get(i));
  }
  return out;
}

}  // namespace

RunValue tensor_value_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  auto dt = static_cast<ir::DType>(p.data_type());
  if (dt == ir::DType::String) {
    StringTensor s;
    s.shape.assign(p.dims().begin(), p.dims().end());
    int64_t n = numel_of(p);
    if (p.string_data_size() != n)
      throw std::runtime_error("string tensor '" + p.name() + "' holds " +
                               std::to_string(p.string_data_size()) +
                               " strings but its dims need " + std::to_string(n));
    s.data.assign(p.string_data().begin(), p.string_data().end());
    return RunValue(std::move(s));
  }
  if (dt == ir::DType::UInt16 || dt == ir::DType::UInt32 || dt == ir::DType::UInt64)
    return RunValue(unsigned_from_proto(p));
  return RunValue(tensor_from_proto(p, base_dir));
}

namespace {

RunValue sequence_from_proto(const onnx::SequenceProto& p, const std::string& base_dir);

RunValue optional_from_proto(const onnx::OptionalProto& p, const std::string& base_dir) {
  switch (p.elem_type()) {
    case onnx::OptionalProto::TENSOR:
      return tensor_value_from_proto(p.tensor_value(), base_dir);
    case onnx::OptionalProto::SEQUENCE:
      return sequence_from_proto(p.sequence_value(), base_dir);
    case onnx::OptionalProto::UNDEFINED:
      return RunValue::none();
    default:
      throw std::runtime_error("optional '" + p.name() +
                               "' holds a map or optional, which tonnx "
                               "does not support");
  }
}

RunValue sequence_from_proto(const onnx::SequenceProto& p, const std::string& base_dir) {
  Sequence s;
  switch (p.elem_type()) {
    case onnx::SequenceProto::TENSOR:
      for (const auto& t : p.tensor_values()) {
        s.items.push_back(tensor_value_from_proto(t, base_dir));
        s.elem = static_cast<ir::DType>(t.data_type());
      }
      break;
    case onnx::SequenceProto::SEQUENCE:
      for (const auto& q : p.sequence_values()) s.items.push_back(sequence_from_proto(q, base_dir));
      break;
    case onnx::SequenceProto::OPTIONAL:
      for (const auto& q : p.optional_values()) s.items.push_back(optional_from_proto(q, base_dir));
      break;
    case onnx::SequenceProto::UNDEFINED:
      break;
    default:
      throw std::runtime_error("sequence '" + p.name() +
                               "' holds maps, which tonnx does not support");
  }
  return RunValue(std::move(s));
}

}  // namespace

RunValue value_from_proto_file(const std::string& path, const onnx::TypeProto& type,
                               const std::string& base_dir) {
  if (type.has_sequence_type())
    return sequence_from_proto(parse_file<onnx::SequenceProto>(path, "SequenceProto"), base_dir);
  if (type.has_optional_type())
    return optional_from_proto(parse_file<onnx::OptionalProto>(path, "OptionalProto"), base_dir);
  auto p = parse_file<onnx::TensorProto>(path, "TensorProto");
  // ONNX's generator stores bfloat16 test data as uint16 bit patterns (numpy has no bfloat16).
  if (type.tensor_type().elem_type() == onnx::TensorProto::BFLOAT16 &&
      p.data_type() == onnx::TensorProto::UINT16)
    p.set_data_type(onnx::TensorProto::BFLOAT16);
  return tensor_value_from_proto(p, base_dir);
}

std::map<std::string, std::string> read_skip_list(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open skip list '" + path + "': " + std::strerror(errno));
  std::map<std::string, std::string> out;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 >= line.size())
      throw std::runtime_error(path + ":" + std::to_string(lineno) +
                               ": expected 'case_name<TAB>reason'");
    out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

std::vector<std::string> find_cases(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    if (fs::exists(fs::path(p) / "model.onnx")) {
      out.push_back(p);
      continue;
    }
    if (!fs::is_directory(p))
      throw std::runtime_error("'" + p + "' is neither a test case (no model.onnx) nor a folder");
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) found.push_back(e.path());
    if (found.empty()) throw std::runtime_error("'" + p + "' holds no test case folders");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

CaseResult run_case(const std::string& case_dir, const std::map<std::string, std::string>& skips,
                    Tolerance tol) {
  CaseResult r;
  r.name = fs::path(case_dir).filename().string();
  if (r.name.empty()) r.name = fs::path(case_dir).parent_path().filename().string();
  auto skip = skips.find(r.name);
  if (skip != skips.end()) {
    r.status = CaseStatus::Skip;
    r.message = skip->second;
    return r;
  }
  r.status = CaseStatus::Fail;
  try {
    std::string model_path = (fs::path(case_dir) / "model.onnx").string();
    onnx::ModelProto mp = read_model_proto(model_path);
    PrepareOptions opts;
    opts.check_input_shapes = false;  // some cases' inputs contradict their declared shapes
    Rep rep = prepare(mp, "CPU", opts, case_dir);
    std::vector<const onnx::ValueInfoProto*> ins, outs;
    std::set<std::string> inits;
    for (const auto& i : mp.graph().initializer()) inits.insert(i.name());
    for (const auto& i : mp.graph().input())
      if (!inits.count(i.name())) ins.push_back(&i);
    for (const auto& o : mp.graph().output()) outs.push_back(&o);
    int sets = 0;
    for (int si = 0;; ++si) {
      fs::path d = fs::path(case_dir) / ("test_data_set_" + std::to_string(si));
      if (!fs::is_directory(d)) break;
      ++sets;
      RunValues inputs;
      for (size_t k = 0; k < ins.size(); ++k) {
        fs::path f = d / ("input_" + std::to_string(k) + ".pb");
        // A missing file is an omitted optional input.
        inputs.push_back(fs::exists(f) ? value_from_proto_file(f, ins[k]->type(), case_dir)
                                       : RunValue::none());
      }
      RunValues got = rep.run_values(inputs);
      for (size_t k = 0; k < outs.size(); ++k) {
        fs::path f = d / ("output_" + std::to_string(k) + ".pb");
        if (!fs::exists(f)) continue;
        RunValue want = value_from_proto_file(f, outs[k]->type(), case_dir);
        Comparison c = compare(got.at(k), want, tol);
        if (!c.ok) {
          r.message = "output '" + outs[k]->name() + "' (test_data_set_" + std::to_string(si) +
                      ") " + c.mismatch;
          return r;
        }
      }
    }
    if (sets == 0) {
      r.message = "no test_data_set_0 folder";
      return r;
    }
    r.status = CaseStatus::Pass;
  } catch (const c10::Error& e) {
    r.message = e.what_without_backtrace();
  } catch (const std::exception& e) {
    r.message = e.what();
  }
  return r;
}

}  // namespace tonnx::backend
