// See limits.h.
#include "cli/limits.h"

#include <ATen/record_function.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace tonnx::cli {
namespace {

// The name of the last op the export's thread started (a static string of the op registry).
std::atomic<const char*> g_running{nullptr};

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  g_running.store(fn.name(), std::memory_order_relaxed);
  return nullptr;
}

}  // namespace

struct ExportLimits::Watchdog {
  double seconds;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  at::CallbackHandle handle = 0;
  std::thread thread;

  void watch() {
    std::unique_lock<std::mutex> lock(mu);
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    if (cv.wait_until(lock, until, [this] { return done; })) return;
    const char* op = g_running.load(std::memory_order_relaxed);
    std::ostringstream limit;
    limit << seconds;
    std::string msg = "tonnx export: error: the export ran past --timeout " + limit.str() + " s (" +
                      (op ? std::string("running ") + op + " or after it"
                          : std::string("before any op ran: loading or compiling the model")) +
                      "); nothing was written\n";
    // The export's thread cannot be stopped from here: end the process. Atomic writes leave
    // no partial file.
    ssize_t ignored = ::write(STDERR_FILENO, msg.data(), msg.size());
    (void)ignored;
    ::_exit(1);
  }
};

ExportLimits::ExportLimits(double timeout_seconds, int64_t memory_mb) {
  if (memory_mb > 0) {
    rlimit r{};
    r.rlim_cur = r.rlim_max = static_cast<rlim_t>(memory_mb) << 20;
    if (::setrlimit(RLIMIT_DATA, &r) != 0)
      throw std::runtime_error(std::string("--memory-limit: cannot set the limit: ") +
                               std::strerror(errno));
  }
  if (timeout_seconds > 0) {
    watchdog_ = std::make_unique<Watchdog>();
    watchdog_->seconds = timeout_seconds;
    watchdog_->handle =
        at::addThreadLocalCallback(at::RecordFunctionCallback(&on_op_start).needsInputs(false));
    watchdog_->thread = std::thread([w = watchdog_.get()] { w->watch(); });
  }
}

ExportLimits::~ExportLimits() {
  if (!watchdog_) return;
  {
    std::lock_guard<std::mutex> lock(watchdog_->mu);
    watchdog_->done = true;
  }
  watchdog_->cv.notify_one();
  watchdog_->thread.join();
  at::removeCallback(watchdog_->handle);
}

}  // namespace tonnx::cli
