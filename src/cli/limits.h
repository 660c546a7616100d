// tonnx export --timeout and --memory-limit (limits.cpp).
#pragma once

#include <cstdint>
#include <memory>

namespace tonnx::cli {

// While alive: past `timeout_seconds` (0: none) a watchdog thread reports which op was running
// and ends the process with exit code 1 (a LibTorch forward or TorchScript compilation cannot
// be interrupted from outside; files are written atomically, so none is left behind); the
// process's data segment (heap and anonymous mappings) is limited to `memory_mb` MiB (0: none),
// so a larger allocation fails as an error instead of exhausting the machine.
class ExportLimits {
 public:
  ExportLimits(double timeout_seconds, int64_t memory_mb);
  ~ExportLimits();
  ExportLimits(const ExportLimits&) = delete;
  ExportLimits& operator=(const ExportLimits&) = delete;

 private:
  struct Watchdog;
  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace tonnx::cli
