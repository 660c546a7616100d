// The test helpers that export (tests of the backend alone link only test_util.cpp, so that
// the sanitizer build in fuzz/ can run them without the exporter).
#include <cstdio>
#include <cstdlib>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/conformance.h"
#include "tonnx/coverage.h"
#include "tonnx/proto.h"

namespace tonnx::test {

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

std::string expect_export_matches(const Traceable& model, const std::vector<torch::Tensor>& inputs,
                                  const ExportOptions& opt, const std::string& name,
                                  Tolerance tol) {
  std::string dir = temp_dir(name);
  std::string path = dir + "/model.onnx";
  ExportSummary s;
  try {
    s = export_traceable(model, inputs, path, opt);
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": export failed: " << e.what();
    return path;
  }
  TestDataSet set;
  set.inputs = s.graph_inputs(inputs);
  set.outputs = s.eager_outputs;
  write_test_data(dir + "/data", set);
  // tonnx's backend
  try {
    auto rep = backend::prepare(path, "CPU");
    auto outs = rep.run(set.inputs);
    EXPECT_EQ(outs.size(), s.eager_outputs.size()) << name;
    for (size_t i = 0; i < std::min(outs.size(), s.eager_outputs.size()); ++i)
      expect_close(outs[i], s.eager_outputs[i], tol, name + " backend output " + std::to_string(i));
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": tonnx backend failed: " << e.what();
  }
  // ONNX Runtime
  RunResult r = run_ort(path, dir + "/data", tol.rtol, tol.atol);
  EXPECT_EQ(r.exit_code, 0) << name << ": ONNX Runtime disagrees with LibTorch:\n" << r.output;
  return path;
}

}  // namespace tonnx::test
