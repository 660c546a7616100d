// tonnx-check: tonnx's checker process. libtonnx starts it (checker_process.cpp) with a socket
// as its standard input and sends it models; it runs libonnx's checker and shape inference on
// each and answers with the inferred types. libonnx trusts the models it checks (it crashes on
// some malformed ones), so it runs here, in a process of its own, and not in the caller's;
// unlike a forked copy of the caller, this process does not copy the caller's page tables
// (tens of milliseconds for a process holding a large model), and it builds libonnx's
// schemas once, while the caller traces. Links libonnx only; it exits when the socket closes.
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "check/check_work.h"

namespace cw = tonnx::check_work;

int main(int argc, char** argv) {
  struct stat st {};
  if (argc != 1 || ::fstat(0, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr,
                 "%s: tonnx's checker process; libtonnx starts it with a socket as its input. "
                 "To check a model, run `tonnx check MODEL.onnx`.\n",
                 argc > 0 ? argv[0] : "tonnx-check");
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  // A crash of libonnx ends this process by its signal, which the caller reports, as a forked
  // child's; a sanitizer build's handlers would exit with a status instead.
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  // Nothing of the caller's but the socket and stderr (stdout is /dev/null).
  ::close_range(3, ~0U, 0);
  cw::load_schemas();
  if (!cw::send_frame(0, cw::kHelloKind, cw::kHello)) return 0;
  for (;;) {
    char kind = 0;
    std::string payload;
    if (cw::read_frame(0, std::nullopt, cw::kMaxFrameBytes, kind, payload) != cw::ReadStatus::kOk)
      return 0;  // the caller closed the socket (or exited)
    onnx::ModelProto m;
    bool parsed = m.ParseFromString(payload);
    payload.clear();
    payload.shrink_to_fit();
    if (!parsed) {
      if (!cw::send_frame(0, cw::kUnparsedKind, {})) return 0;
      continue;
    }
    if (!cw::send_frame(0, cw::kAnswerKind, cw::run(kind, m))) return 0;
  }
}
