#pragma once

#include <string>
#include <vector>

namespace tonnx::cli {

// Each returns the process exit code. Errors are thrown (UsageError -> 2, others -> 1).
int cmd_export(const std::vector<std::string>& args);
int cmd_models(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_print(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_symbolics(const std::vector<std::string>& args);
int cmd_conformance(const std::vector<std::string>& args);  // conformance.cpp

}  // namespace tonnx::cli
