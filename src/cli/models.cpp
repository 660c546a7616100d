// tonnx models: the zoo, as a table or as docs/models.md's markdown.
#include <array>
#include <iomanip>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/models.h"

namespace tonnx::cli {
namespace {

const char kModelsHelp[] = R"(usage: tonnx models [--markdown]

Lists the zoo: name, default input shape, parameter count.
--markdown prints the table that docs/models.md holds.
)";

int run_models(const Args& a) {
  if (!a.positional.empty()) throw UsageError("models takes no arguments");
  if (a.has("--markdown")) {
    std::cout << models::zoo_markdown();
    return 0;
  }
  // Columns as wide as their longest entry, two spaces apart.
  std::vector<std::array<std::string, 4>> rows{
      {"name", "input shape", "parameters", "description"}};
  for (const auto& e : models::zoo()) {
    std::string shapes;
    for (size_t i = 0; i < e.input_shapes.size(); ++i)
      shapes += (i ? "," : "") + models::shape_string(e.input_shapes[i]);
    rows.push_back({e.name, shapes, std::to_string(models::parameter_count(e)), e.description});
  }
  size_t width[3] = {0, 0, 0};
  for (const auto& r : rows)
    for (size_t c = 0; c < 3; ++c) width[c] = std::max(width[c], r[c].size() + 2);
  for (const auto& r : rows)
    std::cout << std::left << std::setw(static_cast<int>(width[0])) << r[0]
              << std::setw(static_cast<int>(width[1])) << r[1]
              << std::setw(static_cast<int>(width[2])) << r[2] << r[3] << "\n";
  return 0;
}

}  // namespace

const Command kModelsCommand{"models", kModelsHelp, Spec{{}, {"--markdown"}, {}, {}}, run_models};

}  // namespace tonnx::cli
