// ONNX's backend test-data layout (tonnx/proto.h): DIR/test_data_set_N/{input,output}_K.pb,
// written and read under the model folder's rules.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tonnx/proto.h"

namespace tonnx {
namespace fs = std::filesystem;

namespace {
// A test data set's folder and files follow the model folder's rules: no symbolic links out of
// DIR (a set folder or a tensor file that is a link is refused, for reading and for writing).
void refuse_link(const fs::path& p, const char* what) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(p, ec)))
    throw std::runtime_error("test data " + std::string(what) + " '" + p.string() +
                             "' is a symbolic link; links could lead outside the test data "
                             "folder, so give a real folder and files");
}
}  // namespace

void write_test_data(const std::string& dir, const TestDataSet& set, int index) {
  fs::path d = fs::path(dir) / ("test_data_set_" + std::to_string(index));
  refuse_link(d, "folder");
  std::error_code ec;
  fs::create_directories(d, ec);
  if (ec)
    throw std::runtime_error("cannot create test data folder '" + d.string() +
                             "': " + ec.message());
  auto name_of = [](const std::vector<std::string>& names, size_t i) {
    return i < names.size() ? names[i] : std::string();
  };
  for (size_t i = 0; i < set.inputs.size(); ++i)
    save_tensor_proto(tensor_to_proto(set.inputs[i], name_of(set.input_names, i)),
                      (d / ("input_" + std::to_string(i) + ".pb")).string());
  for (size_t i = 0; i < set.outputs.size(); ++i)
    save_tensor_proto(tensor_to_proto(set.outputs[i], name_of(set.output_names, i)),
                      (d / ("output_" + std::to_string(i) + ".pb")).string());
}

std::vector<TestDataSet> read_test_data(const std::string& dir) {
  std::vector<TestDataSet> sets;
  for (int i = 0;; ++i) {
    fs::path d = fs::path(dir) / ("test_data_set_" + std::to_string(i));
    refuse_link(d, "folder");
    if (!fs::is_directory(d)) break;
    TestDataSet s;
    for (int k = 0;; ++k) {
      fs::path f = d / ("input_" + std::to_string(k) + ".pb");
      refuse_link(f, "file");
      if (!fs::exists(f)) break;
      onnx::TensorProto p = read_tensor_proto(f.string());
      s.inputs.push_back(tensor_from_proto(p, dir));
      s.input_names.push_back(p.name());
    }
    for (int k = 0;; ++k) {
      fs::path f = d / ("output_" + std::to_string(k) + ".pb");
      refuse_link(f, "file");
      if (!fs::exists(f)) break;
      onnx::TensorProto p = read_tensor_proto(f.string());
      s.outputs.push_back(tensor_from_proto(p, dir));
      s.output_names.push_back(p.name());
    }
    sets.push_back(std::move(s));
  }
  if (sets.empty()) throw std::runtime_error("no test_data_set_0 folder under '" + dir + "'");
  return sets;
}

std::vector<at::Tensor> set_inputs(const TestDataSet& set,
                                   const std::vector<std::string>& model_inputs, size_t index) {
  std::string where = "test_data_set_" + std::to_string(index) + ": ";
  auto file_of = [&](const std::string& name) {
    std::vector<size_t> at;
    for (size_t k = 0; k < set.input_names.size() && k < set.inputs.size(); ++k)
      if (set.input_names[k] == name) at.push_back(k);
    return at;
  };
  std::vector<at::Tensor> out;
  std::vector<std::string> missing;
  size_t matched = 0;
  for (const auto& want : model_inputs) {
    std::vector<size_t> at = file_of(want);
    if (at.size() > 1)
      throw std::invalid_argument(where + std::to_string(at.size()) + " input files are named '" +
                                  want + "': name each input_K.pb after one model input");
    if (at.empty()) {
      missing.push_back(want);
      continue;
    }
    ++matched;
    out.push_back(set.inputs[at[0]]);
  }
  if (missing.empty()) return out;  // every model input by its name
  // No file names a model input (unnamed, or named otherwise): by position, as ONNX's test
  // data is read. Some do and some do not: say which are missing rather than guess.
  if (matched == 0 && set.inputs.size() <= model_inputs.size()) return set.inputs;
  std::string names, list;
  for (const auto& n : model_inputs) names += (names.empty() ? "" : ", ") + n;
  for (const auto& n : missing) list += (list.empty() ? "'" : ", '") + n + "'";
  if (matched == 0)
    throw std::invalid_argument(
        where + std::to_string(set.inputs.size()) + " input files for a model with " +
        std::to_string(model_inputs.size()) + " inputs (" + names +
        "), and their names do not say which are the model's: name each input_K.pb after its "
        "input, or keep only the model's inputs");
  throw std::invalid_argument(where + "no input file is named " + list +
                              ", though others are named after the model's inputs (" + names +
                              "): name every input_K.pb after its input");
}

}  // namespace tonnx
