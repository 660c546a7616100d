// tonnx verify: export, run on every runtime, compare with LibTorch, find the first divergent
// node.
#include <stdlib.h>

#include <filesystem>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/proto.h"
#include "tonnx/verify.h"

namespace tonnx::cli {
namespace fs = std::filesystem;

namespace {

const char* kVerifyHelp = R"(usage: tonnx verify MODEL [export options] [verify options]
       tonnx verify MODEL.pt (--inputs in0.pb,... | --input-shape S) [options]

Exports MODEL (a zoo name or a TorchScript file, with `tonnx export`'s options), runs the
export on LibTorch, tonnx's backend and ONNX Runtime with the same inputs, and prints each
output's largest absolute and relative error and pass/fail. On a mismatch it runs the graph
with every intermediate value exposed and prints the first node whose result differs from
what LibTorch computed for the value it was converted from: its ONNX op, aten op, module
scope, shapes and error. Exit code 0 only when every runtime agrees with LibTorch.

verify options:
  --rtol X, --atol Y       tolerance: |got - expected| <= atol + rtol * |expected|
                           (default 1e-3, 1e-5)
  --runtime LIST           tonnx, ort or tonnx,ort (default); ort runs ONNX Runtime through
                           Node (tools/ort_run.js, or $TONNX_ORT_RUNNER) and is skipped with
                           a note when it is not installed, unless named here
  --onnx FILE              compare FILE (made by tonnx with the same options, or by another
                           tool) instead of the fresh export; LibTorch's values still come
                           from tracing MODEL
  -o, --output PATH        keep the export there (default: a temporary file)
  --repro-dir DIR          write the first divergent node alone as DIR/node.onnx with its
                           inputs in DIR/test_data_set_0 (`tonnx run DIR/node.onnx
                           --test-data DIR` reproduces it)
  --search                 look for a divergent node even when the outputs agree

Every `tonnx export` option applies (see `tonnx export --help`): --opset, --input-shape,
--inputs, --dynamic-axes, --no-constant-folding, --aten-fallback, --seed, ...
)";

}  // namespace

int cmd_verify(const std::vector<std::string>& argv) {
  if (wants_help(argv)) {
    std::cout << kVerifyHelp;
    return 0;
  }
  // verify's own options; the rest goes to the export.
  VerifyOptions vo;
  std::vector<std::string> rest;
  std::string onnx, out;
  auto value = [&](size_t& i, const std::string& key) {
    const std::string& s = argv[i];
    if (s.size() > key.size() && s[key.size()] == '=') return s.substr(key.size() + 1);
    if (i + 1 >= argv.size()) throw UsageError("option " + key + " needs a value");
    return argv[++i];
  };
  auto is = [](const std::string& s, const std::string& key) {
    return s == key || s.rfind(key + "=", 0) == 0;
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (is(s, "--rtol")) {
      vo.tolerance.rtol = parse_double(value(i, "--rtol"), "--rtol");
    } else if (is(s, "--atol")) {
      vo.tolerance.atol = parse_double(value(i, "--atol"), "--atol");
    } else if (is(s, "--runtime")) {
      vo.runtimes = split(value(i, "--runtime"), ',');
      for (const auto& r : vo.runtimes)
        if (r != "tonnx" && r != "ort")
          throw UsageError("--runtime: unknown runtime '" + r + "'; use tonnx, ort or tonnx,ort");
      if (vo.runtimes.empty()) throw UsageError("--runtime is empty; use tonnx, ort or tonnx,ort");
      vo.require_runtimes = true;
    } else if (is(s, "--onnx")) {
      onnx = value(i, "--onnx");
    } else if (is(s, "--repro-dir")) {
      vo.repro_dir = value(i, "--repro-dir");
    } else if (s == "--search") {
      vo.always_search = true;
    } else if (is(s, "-o") || is(s, "--output")) {
      out = value(i, s.rfind("--output", 0) == 0 ? "--output" : "-o");
    } else if (is(s, "--test-data")) {
      throw UsageError("--test-data is export's; verify makes its own test data");
    } else {
      rest.push_back(s);
    }
  }
  if (!onnx.empty() && !fs::exists(onnx)) throw UsageError("--onnx " + onnx + ": no such file");
  ScratchDir tmp("verify");
  std::string model = out.empty() ? (fs::path(tmp.path()) / "model.onnx").string() : out;
  rest.insert(rest.end(), {"-o", model, "--test-data", tmp.path()});
  ReferenceRecorder rec;
  int rc = cmd_export(rest);
  if (rc != 0) return rc;
  std::vector<TestDataSet> sets = read_test_data(tmp.path());
  if (sets.size() != 1) throw std::runtime_error("the export wrote no test data");
  VerifyReport r = verify_file(onnx.empty() ? model : onnx, sets[0], vo, rec.values());
  if (!rec.note().empty()) r.notes.push_back(rec.note());
  std::cout << r.str();
  return r.ok ? 0 : 1;
}

}  // namespace tonnx::cli
