// tonnx symbolics: the registered symbolic functions, or docs/operators.md's table.
#include <iostream>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/coverage.h"
#include "tonnx/symbolic.h"

namespace tonnx::cli {
namespace {

const char kSymbolicsHelp[] = R"(usage: tonnx symbolics [--markdown]

Lists every registered symbolic function: aten op and first opset.
--markdown prints the table that docs/operators.md holds.
)";

int run_symbolics(const Args& a) {
  if (a.has("--markdown")) {
    // --emitted FILE: the records scripts/gen_docs.sh made while the symbolic tests ran; they
    // give the ONNX ops column.
    std::optional<std::vector<EmittedRecord>> records;
    if (auto f = a.get("--emitted")) records = read_emitted_records(*f);
    std::cout << operators_markdown(records ? &*records : nullptr);
    return 0;
  }
  for (const auto& s : registered_symbolics())
    std::cout << s.name << "\t" << s.since_opset << (s.user ? "\tuser" : "") << "\n";
  return 0;
}

}  // namespace

const Command kSymbolicsCommand{"symbolics", kSymbolicsHelp,
                                Spec{{"--emitted"}, {"--markdown"}, {}, {}}, run_symbolics};

}  // namespace tonnx::cli
