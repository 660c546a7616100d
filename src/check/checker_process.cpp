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

// TONNX_CHECK_HELPER=off: every check forks (read at each call, so that it can change).
bool turned_off() {
  const char* env = std::getenv("TONNX_CHECK_HELPER");
  return env && std::string(env) == "off";
}

struct Checker {
  std::mutex mu;
  pid_t pid = 0;    // 0: none running
  pid_t owner = 0;  // the process that started it (a forked copy of the caller must not share it)
  int fd = -1;      // our end of its socket
  bool greeted = false;
  bool disabled = false;  // it could not start, or spoke another protocol: fork from now on
};
// Never destroyed: no static destructor races an exit. A fork()ed copy of the process gets
// a fresh one (its lock may have been held by a thread the copy does not have), and closes its
// copy of the socket, so that the helper ends when the process that started it ends.
Checker* g_checker = nullptr;
void forked_copy() {
  if (g_checker && g_checker->fd >= 0) ::close(g_checker->fd);
  g_checker = new Checker;
}
Checker& checker() {
  static bool once = [] {
    g_checker = new Checker;
    ::pthread_atfork(nullptr, nullptr, forked_copy);
    return true;
  }();
  (void)once;
  return *g_checker;
}

// Forgets the process, killed first (a no-op on one that has ended, whose status stays),
// and reaps it; the caller holds the lock.
void forget(Checker& c, int* status = nullptr) {
  if (c.fd >= 0) ::close(c.fd);
  if (c.pid > 0 && c.owner == ::getpid()) {
    ::kill(c.pid, SIGKILL);
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
  if (c.disabled || turned_off()) return false;
  std::string path = checker_process_path();
  if (path.empty()) {
    c.disabled = true;
    return false;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
  // Both ends above the standard streams: the child's becomes its fd 0 (a dup2 onto itself
  // would keep it close-on-exec), and ours must not be a stream someone else writes to.
  for (int& end : sv) {
    if (end >= 3) continue;
    int moved = ::fcntl(end, F_DUPFD_CLOEXEC, 3);
    ::close(end);
    end = moved;
  }
  if (sv[0] < 0 || sv[1] < 0) {
    for (int end : sv)
      if (end >= 0) ::close(end);
    return false;
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
  // Its own process group: a Ctrl-C at the terminal is for the caller, whose exit ends it.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
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
  if (turned_off()) return "";
  const char* env = std::getenv("TONNX_CHECK_HELPER");
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
  if (turned_off() || m.ByteSizeLong() > kMaxSent) return std::nullopt;
  std::unique_lock<std::mutex> lock(c.mu, std::try_to_lock);
  if (!lock) return std::nullopt;  // busy with another thread's model: that one forks
  std::string bytes;
  // A second attempt after the process ended under the request: killed from outside (the
  // OOM killer, say) is not the model's fault; a model that crashes it does so again.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!start_locked(c)) return std::nullopt;
    char k = 0;
    std::string payload;
    if (!c.greeted) {
      // The greeting comes once its schemas are built (milliseconds). None in 10 s, or
      // another: it did not start (a library missing, say), hangs, or is another build's:
      // fork from now on.
      cw::ReadStatus h = cw::read_frame(
          c.fd, std::chrono::steady_clock::now() + std::chrono::seconds(10), 1024, k, payload);
      if (h != cw::ReadStatus::kOk || k != cw::kHelloKind || payload != cw::kHello) {
        forget(c);
        c.disabled = true;
        return std::nullopt;
      }
      c.greeted = true;
    }
    if (bytes.empty()) bytes = m.SerializeAsString();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
    cw::ReadStatus s = cw::send_frame(c.fd, kind, bytes, deadline)
                           ? cw::read_frame(c.fd, deadline, cw::kMaxFrameBytes, k, payload)
                           : cw::ReadStatus::kClosed;
    if (s == cw::ReadStatus::kOk) {
      if (k == cw::kUnparsedKind) return std::nullopt;
      // Another kind is no answer: check.cpp calls it unreadable.
      return k == cw::kAnswerKind ? std::move(payload) : std::string();
    }
    int status = 0;
    forget(c, &status);
    if (s == cw::ReadStatus::kTimedOut || std::chrono::steady_clock::now() >= deadline)
      throw CheckError(what + " did not finish in 600 s; it was stopped");
    if (attempt == 1) throw CheckError(cw::crash_message(what, status));
  }
  return std::nullopt;
}

}  // namespace tonnx::detail
