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

const char kVerifyHelp[] = R"(usage: tonnx verify MODEL [export options] [verify options]
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

// Export's options and verify's own.
Spec verify_spec() {
  Spec s = export_spec();
  s.with_value.insert({"--rtol", "--atol", "--runtime", "--onnx", "--repro-dir"});
  s.switches.insert("--search");
  return s;
}

int run_verify(const Args& in) {
  if (in.has("--test-data"))
    throw UsageError("--test-data is export's; verify makes its own test data");
  VerifyOptions vo;
  const double inf = std::numeric_limits<double>::infinity();
  vo.tolerance.rtol =
      in.number("--rtol", 0, inf, false, "give a number >= 0").value_or(vo.tolerance.rtol);
  vo.tolerance.atol =
      in.number("--atol", 0, inf, false, "give a number >= 0").value_or(vo.tolerance.atol);
  if (auto v = in.get("--runtime")) {
    vo.runtimes = split(*v, ',');
    for (const auto& r : vo.runtimes)
      if (r != "tonnx" && r != "ort")
        throw UsageError("--runtime: unknown runtime '" + r + "'; use tonnx, ort or tonnx,ort");
    if (vo.runtimes.empty()) throw UsageError("--runtime is empty; use tonnx, ort or tonnx,ort");
    vo.require_runtimes = true;
  }
  vo.repro_dir = in.get("--repro-dir").value_or("");
  vo.always_search = in.has("--search");
  std::string onnx = in.get("--onnx").value_or("");
  if (!onnx.empty() && !fs::exists(onnx)) throw UsageError("--onnx " + onnx + ": no such file");
  ScratchDir tmp("verify");
  std::string model = in.output().value_or((fs::path(tmp.path()) / "model.onnx").string());
  // The export, with its output and test data where verify reads them.
  Args a = in;
  a.values.erase("--output");
  a.values["-o"] = {model};
  a.values["--test-data"] = {tmp.path()};
  ReferenceRecorder rec;
  int rc = run_export(a);
  if (rc != 0) return rc;
  std::vector<TestDataSet> sets = read_test_data(tmp.path());
  if (sets.size() != 1) throw std::runtime_error("the export wrote no test data");
  VerifyReport r = verify_file(onnx.empty() ? model : onnx, sets[0], vo, rec.values());
  if (!rec.note().empty()) r.notes.push_back(rec.note());
  std::cout << r.str();
  return r.ok ? 0 : 1;
}

}  // namespace

const Command kVerifyCommand{"verify", kVerifyHelp, verify_spec(), run_verify};

}  // namespace tonnx::cli
