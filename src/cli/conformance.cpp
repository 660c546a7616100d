// tonnx conformance: runs ONNX backend test cases (model.onnx + test_data_set_N) on tonnx's
// backend through the library's runner (tonnx/conformance.h); see docs/backend.md.
#include <torch/torch.h>

#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/conformance.h"

namespace tonnx::cli {
namespace {

const char kConformanceHelp[] = R"(usage: tonnx conformance DIR... [options]

Runs ONNX backend test cases on tonnx's backend. Each DIR is a case folder (model.onnx and
test_data_set_N/) or a folder of case folders. Prints `pass NAME`, `FAIL NAME: why` or
`skip NAME: reason` per case, then `N passed, M failed, K skipped`; exits 1 on any failure.

options:
  --skips FILE     cases to skip: `case_name<TAB>reason` lines, # comments
  --rtol X         relative tolerance (default 1e-3)
  --atol Y         absolute tolerance (default 1e-7)
  --quiet          print only failures and the summary
)";

int run_conformance(const Args& a) {
  if (a.positional.empty()) throw UsageError("expected at least one test case folder");
  Tolerance tol = backend::kConformanceTolerance;
  const double inf = std::numeric_limits<double>::infinity();
  tol.rtol = a.number("--rtol", 0, inf, false, "give a number >= 0").value_or(tol.rtol);
  tol.atol = a.number("--atol", 0, inf, false, "give a number >= 0").value_or(tol.atol);
  std::map<std::string, std::string> skips;
  if (auto v = a.get("--skips")) skips = backend::read_skip_list(*v);
  bool quiet = a.has("--quiet");
  torch::NoGradGuard no_grad;
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string& dir : backend::find_cases(a.positional)) {
    backend::CaseResult r = backend::run_case(dir, skips, tol);
    switch (r.status) {
      case backend::CaseStatus::Pass:
        ++passed;
        if (!quiet) std::cout << "pass " << r.name << "\n";
        break;
      case backend::CaseStatus::Fail:
        ++failed;
        std::cout << "FAIL " << r.name << ": " << r.message << "\n";
        break;
      case backend::CaseStatus::Skip:
        ++skipped;
        if (!quiet) std::cout << "skip " << r.name << ": " << r.message << "\n";
        break;
    }
    std::cout.flush();
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed ? 1 : 0;
}

}  // namespace

const Command kConformanceCommand{"conformance", kConformanceHelp,
                                  Spec{{"--skips", "--rtol", "--atol"}, {"--quiet"}, {}, {}},
                                  run_conformance};

}  // namespace tonnx::cli
