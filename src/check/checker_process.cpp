// libtonnx's end of tonnx-check's socket (checker_process.h).
#include "check/checker_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "check/check_work.h"
#include "tonnx/check.h"

extern char** environ;

// Where an installed tonnx-check lies, from the folder of libtonnx (CMakeLists.txt writes it).
#if __has_include("tonnx_install_paths.h")
#include "tonnx_install_paths.h"
#endif
#ifndef TONNX_LIBEXEC_FROM_LIBDIR
#define TONNX_LIBEXEC_FROM_LIBDIR "../libexec/tonnx"
#endif

namespace tonnx::detail {
namespace {

namespace cw = check_work;
namespace fs = std::filesystem;

// Larger models are forked with instead: the child shares their bytes, where the socket
// would copy them twice.
constexpr size_t kMaxSent = size_t{64} << 20;

struct Checker {
  std::mutex mu;
  pid_t pid = 0;    // 0: none running
  pid_t owner = 0;  // the process that started it (a forked copy of the caller must not share it)
  int fd = -1;      // our end of its socket
  bool greeted = false;
  bool disabled = false;  // it could not start, or spoke another protocol: fork from now on
};
Checker& checker() {
  static Checker* c = new Checker;  // never destroyed: no static destructor races an exit
  return *c;
}

// Forgets the process (reaping it when `reap`); the caller holds the lock.
void forget(Checker& c, bool kill_it, int* status = nullptr) {
  if (c.fd >= 0) ::close(c.fd);
  if (c.pid > 0 && c.owner == ::getpid()) {
    if (kill_it) ::kill(c.pid, SIGKILL);
    int st = 0;
    while (::waitpid(c.pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (status) *status = st;
  }
  c.fd = -1;
  c.pid = 0;
  c.greeted = false;
}

bool start_locked(Checker& c) {
  if (c.pid > 0 && c.owner != ::getpid()) {
    // A forked copy of the process that started it: the process is the parent's.
    ::close(c.fd);
    c.fd = -1;
    c.pid = 0;
    c.greeted = false;
  }
  if (c.pid > 0) return true;
  const char* env = std::getenv("TONNX_CHECK_HELPER");
  if (c.disabled || (env && std::string(env) == "off")) return false;
  std::string path = checker_process_path();
  if (path.empty()) {
    c.disabled = true;
    return false;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
  // The child's end becomes its fd 0; a dup2 onto itself would keep it close-on-exec.
  if (sv[1] < 3) {
    int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 3);
    ::close(sv[1]);
    if (moved < 0) {
      ::close(sv[0]);
      return false;
    }
    sv[1] = moved;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::string arg0 = path;
  char* argv[] = {arg0.data(), nullptr};
  pid_t pid = 0;
  int err = ::posix_spawn(&pid, path.c_str(), &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  if (err != 0) {
    ::close(sv[0]);
    c.disabled = true;
    return false;
  }
  c.pid = pid;
  c.owner = ::getpid();
  c.fd = sv[0];
  c.greeted = false;
  return true;
}

}  // namespace

std::string checker_process_path() {
  const char* env = std::getenv("TONNX_CHECK_HELPER");
  if (env && std::string(env) == "off") return "";
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (env && *env) return runnable(env) ? std::string(env) : std::string();
  Dl_info info{};
  if (!::dladdr(reinterpret_cast<void*>(&checker_process_path), &info) || !info.dli_fname)
    return "";
  std::error_code ec;
  fs::path lib = fs::weakly_canonical(fs::absolute(info.dli_fname, ec), ec);
  if (ec) return "";
  // The build tree has it beside libtonnx; an installed tonnx, in libexec/tonnx.
  for (const fs::path& p : {lib.parent_path() / "tonnx-check",
                            lib.parent_path() / TONNX_LIBEXEC_FROM_LIBDIR / "tonnx-check"})
    if (runnable(p)) return fs::weakly_canonical(p, ec).string();
  return "";
}

bool start_checker_process() {
  Checker& c = checker();
  std::unique_lock<std::mutex> lock(c.mu, std::try_to_lock);
  if (!lock) return true;  // another thread is asking it (or starting it) already
  return start_locked(c);
}

std::optional<std::string> ask_checker_process(char kind, const onnx::ModelProto& m,
                                               const std::string& what) {
  Checker& c = checker();
  const char* env = std::getenv("TONNX_CHECK_HELPER");
  if ((env && std::string(env) == "off") || m.ByteSizeLong() > kMaxSent) return std::nullopt;
  std::unique_lock<std::mutex> lock(c.mu, std::try_to_lock);
  if (!lock) return std::nullopt;  // busy with another thread's model: that one forks
  std::string bytes;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!start_locked(c)) return std::nullopt;
    if (bytes.empty()) bytes = m.SerializeAsString();
    bool sent = cw::send_frame(c.fd, kind, bytes);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
    char k = 0;
    std::string payload;
    if (!c.greeted) {
      // The greeting comes once its schemas are built. None: it did not start (a library
      // missing, say) or is another build's: fork from now on.
      cw::ReadStatus h = cw::read_frame(
          c.fd, std::chrono::steady_clock::now() + std::chrono::seconds(60), 1024, k, payload);
      if (h != cw::ReadStatus::kOk || k != cw::kHelloKind || payload != cw::kHello) {
        forget(c, true);
        c.disabled = true;
        return std::nullopt;
      }
      c.greeted = true;
    }
    if (!sent) {
      forget(c, true);  // it had ended (killed from outside): start another, once
      continue;
    }
    cw::ReadStatus s = cw::read_frame(c.fd, deadline, uint64_t{1} << 32, k, payload);
    if (s == cw::ReadStatus::kOk) {
      if (k == cw::kUnparsedKind) return std::nullopt;
      return std::string(1, k) + payload;
    }
    if (s == cw::ReadStatus::kTimedOut) {
      forget(c, true);
      throw CheckError(what + " did not finish in 600 s; it was stopped");
    }
    int status = 0;
    forget(c, s == cw::ReadStatus::kTooLong, &status);
    throw CheckError(cw::crash_message(what, status));
  }
  return std::nullopt;
}

}  // namespace tonnx::detail
