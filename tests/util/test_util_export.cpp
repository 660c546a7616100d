// The test helpers that export (tests of the backend alone link only test_util.cpp, so that
// the sanitizer build in fuzz/ can run them without the exporter).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <torch/script.h>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/conformance.h"
#include "tonnx/coverage.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::test {
namespace fs = std::filesystem;

namespace {
// TONNX_RECORD_EMITTED=FILE: record which ONNX ops each symbolic emits while the tests run,
// and write them (aten op, opset, ONNX op) to FILE at the end: scripts/gen_docs.sh uses it.
class RecordEmitted : public ::testing::Environment {
 public:
  void SetUp() override {
    if (std::getenv("TONNX_RECORD_EMITTED")) set_emitted_recording(true);
  }
  void TearDown() override {
    const char* path = std::getenv("TONNX_RECORD_EMITTED");
    if (!path) return;
    std::remove(path);  // the file holds this run's records only
    append_emitted_records(path, emitted_records());
  }
};
const auto* const kRecordEmitted [[maybe_unused]] =
    ::testing::AddGlobalTestEnvironment(new RecordEmitted);
}  // namespace

namespace {
// Exports through `run_export(path)` into a fresh folder named `name`, then checks the result
// by expect_outputs_match. Returns the .onnx path.
std::string export_and_check(const std::string& name, const std::vector<torch::Tensor>& inputs,
                             Tolerance tol,
                             const std::function<ExportSummary(const std::string&)>& run_export) {
  std::string path = temp_dir(name) + "/model.onnx";
  ExportSummary s;
  try {
    s = run_export(path);
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": export failed: " << e.what();
    return path;
  }
  expect_outputs_match(path, s.graph_inputs(inputs), s.eager_outputs, name, tol);
  return path;
}
}  // namespace

std::string expect_export_matches(const Traceable& model, const std::vector<torch::Tensor>& inputs,
                                  const ExportOptions& opt, const std::string& name,
                                  Tolerance tol) {
  return export_and_check(name, inputs, tol, [&](const std::string& path) {
    return export_traceable(model, inputs, path, opt);
  });
}

namespace {
// A copy of the model at `path` whose sequence output p is replaced by its lengths.at(p)
// elements (SequenceAt), for ONNX Runtime's Node binding.
std::string sequence_reader(const std::string& path, const std::map<int, size_t>& lengths) {
  onnx::ModelProto m = read_model_proto(path);
  auto* g = m.mutable_graph();
  std::vector<onnx::ValueInfoProto> outputs(g->output().begin(), g->output().end());
  g->clear_output();
  for (int p = 0; p < static_cast<int>(outputs.size()); ++p) {
    const onnx::ValueInfoProto& out = outputs[p];
    if (!lengths.count(p)) {
      *g->add_output() = out;
      continue;
    }
    for (size_t i = 0; i < lengths.at(p); ++i) {
      std::string idx = "__test_idx_" + std::to_string(p) + "_" + std::to_string(i);
      std::string at = "__test_at_" + std::to_string(p) + "_" + std::to_string(i);
      auto* c = g->add_node();
      c->set_op_type("Constant");
      c->add_output(idx);
      auto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      *a->mutable_t() = tensor_to_proto(at::scalar_tensor(static_cast<int64_t>(i), at::kLong));
      auto* n = g->add_node();
      n->set_op_type("SequenceAt");
      n->add_input(out.name());
      n->add_input(idx);
      n->add_output(at);
      auto* o = g->add_output();
      o->set_name(at);
      *o->mutable_type() = out.type().sequence_type().elem_type();
    }
  }
  std::string reader = path + ".elements.onnx";
  save_model_proto(m, reader);
  return reader;
}
}  // namespace

void expect_outputs_match(const std::string& path, const std::vector<torch::Tensor>& inputs,
                          const std::vector<torch::Tensor>& eager_outputs, const std::string& name,
                          Tolerance tol) {
  std::map<int, size_t> lengths;  // sequence outputs by position
  try {
    auto rep = backend::prepare(path, "CPU");
    backend::RunValues in(inputs.begin(), inputs.end());
    std::vector<at::Tensor> outs;
    int p = 0;
    for (const backend::RunValue& v : rep.run_values(in)) {
      if (v.is_sequence()) {
        lengths[p] = v.sequence().items.size();
        for (const backend::RunValue& e : v.sequence().items) outs.push_back(e.tensor());
      } else {
        outs.push_back(v.tensor());
      }
      ++p;
    }
    EXPECT_EQ(outs.size(), eager_outputs.size()) << name << ": outputs (sequences spread)";
    for (size_t i = 0; i < std::min(outs.size(), eager_outputs.size()); ++i)
      expect_close(outs[i], eager_outputs[i], tol, name + " backend output " + std::to_string(i));
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": tonnx backend failed: " << e.what();  // ORT still runs
  }
  std::string dir = fs::path(path).parent_path().string();
  TestDataSet set;
  set.inputs = inputs;
  set.outputs = eager_outputs;
  write_test_data(dir + "/data", set);
  std::string model = lengths.empty() ? path : sequence_reader(path, lengths);
  RunResult r = run_ort(model, dir + "/data", tol.rtol, tol.atol);
  EXPECT_EQ(r.exit_code, 0) << name << ": ONNX Runtime disagrees with LibTorch:\n" << r.output;
}

std::string expect_script_matches(const std::string& source,
                                  const std::vector<torch::Tensor>& inputs,
                                  const ExportOptions& opt, const std::string& name,
                                  Tolerance tol) {
  torch::jit::Module m("Scripted");
  m.define(source);
  return export_and_check(name, inputs, tol, [&](const std::string& path) {
    return export_model(m, inputs, path, opt);
  });
}

}  // namespace tonnx::test
