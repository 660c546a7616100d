// The tonnx command line.
#include <c10/util/Exception.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/coverage.h"

namespace {

const char* kUsage =
    R"(tonnx: torch.onnx for C++ — export LibTorch models to ONNX, check, print and run them.

usage: tonnx COMMAND [options]

commands:
  export MODEL -o OUT.onnx   export a zoo model (see `tonnx models`) to ONNX
  models                     list the zoo: names, default input shapes, parameter counts
  check M.onnx               run ONNX's checker and strict shape inference; exit 0 when valid
  print M.onnx               print the graph in a readable form
  convert IN.onnx -o OUT     move weights into one external data file, or back (--inline)
  run M.onnx                 run a model on tonnx's CPU backend
  verify MODEL               export, run on LibTorch, tonnx and ONNX Runtime, compare; on a
                             mismatch, find the first node that differs from LibTorch
  symbolics                  list the registered symbolic functions (aten op, opset)
  conformance DIR...         run ONNX backend test cases on tonnx's backend
  cpu                        what the backend chooses on this CPU (TONNX_MAX_ISA caps it)
  batch                      run commands read from stdin in one process (test runners)
  help [COMMAND]             this text, or a command's options

`tonnx COMMAND --help` shows a command's options. `tonnx --version` prints the version.
)";

const char* kBatchUsage =
    R"(usage: tonnx batch < COMMANDS

Runs commands read from stdin in this one process, so LibTorch loads once (test runners:
the torch.onnx suite runner exports a thousand small models this way). Each line is one
command as `tonnx` takes it, its arguments separated by tabs, e.g.
  export<TAB>resnet18<TAB>-o<TAB>r18.onnx
After each command, stdout gets one line: the byte 0x1e, "tonnx-batch exit N " (N is the
command's exit code), then the command's own output (stdout and stderr) with each newline
turned into the byte 0x1f. A crash ends the batch; the caller starts another. Exit code 0
when stdin ends.
)";

// The commands, one file each (commands.h).
const tonnx::cli::Command* find_command(const std::string& name) {
  using namespace tonnx::cli;  // NOLINT
  static const Command* const kCommands[] = {
      &kExportCommand, &kModelsCommand, &kCheckCommand,     &kPrintCommand,       &kConvertCommand,
      &kRunCommand,    &kVerifyCommand, &kSymbolicsCommand, &kConformanceCommand, &kCpuCommand};
  for (const Command* c : kCommands)
    if (name == c->name) return c;
  return nullptr;
}

// Runs one command as `tonnx CMD ARGS...` would: its help, or its arguments parsed and the
// command run, errors turned into exit codes.
int dispatch(const std::string& cmd, const std::vector<std::string>& rest) {
  const tonnx::cli::Command* command = find_command(cmd);
  if (!command) {
    std::cerr << "tonnx: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  }
  if (tonnx::cli::wants_help(rest)) {
    std::cout << command->help;
    return 0;
  }
  try {
    return command->run(tonnx::cli::parse_args(rest, command->spec));
  } catch (const tonnx::cli::UsageError& e) {
    std::cerr << "tonnx " << cmd << ": " << e.what() << " (see `tonnx " << cmd << " --help`)\n";
    return 2;
  } catch (const c10::Error& e) {
    std::cerr << "tonnx " << cmd << ": error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tonnx " << cmd << ": error: " << e.what() << "\n";
    return 1;
  }
}

// `tonnx batch`: one command per stdin line, its arguments separated by tabs, run in this
// process (LibTorch loads once: the torch.onnx suite runner exports a thousand small models).
// After each command, stdout gets "\x1etonnx-batch exit N" and its stderr text with newlines
// as "\x1f", on one line. A crash ends the batch; the caller starts another.
int run_batch() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> argv;
    std::stringstream fields(line);
    for (std::string field; std::getline(fields, field, '\t');) argv.push_back(field);
    if (argv.empty()) continue;
    std::ostringstream err;
    std::streambuf* saved_err = std::cerr.rdbuf(err.rdbuf());
    std::streambuf* saved_out = std::cout.rdbuf(err.rdbuf());
    int rc = dispatch(argv[0], std::vector<std::string>(argv.begin() + 1, argv.end()));
    std::cerr.rdbuf(saved_err);
    std::cout.rdbuf(saved_out);
    std::string text = err.str();
    for (char& c : text)
      if (c == '\n') c = '\x1f';
    std::cout << "\x1etonnx-batch exit " << rc << " " << text << std::endl;
  }
  return 0;
}

// `rc`, unless standard output could not be written (`tonnx print m.onnx > /dev/full`: the
// command's output is lost, so the exit code must say so).
int stdout_written(int rc) {
  errno = 0;
  std::cout.flush();
  if (std::cout.good() && std::fflush(stdout) == 0) return rc;
  std::cerr << "tonnx: error: writing standard output failed"
            << (errno ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
  return rc ? rc : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--version" || cmd == "version") {
    std::cout << "tonnx " << TONNX_VERSION << "\n";
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    if (rest.empty()) {
      std::cout << kUsage;
      return 0;
    }
    cmd = rest[0];
    rest = {"--help"};
  }
  // TONNX_RECORD_EMITTED=FILE: record which ONNX ops each symbolic emits (scripts/gen_docs.sh).
  const char* record = std::getenv("TONNX_RECORD_EMITTED");
  if (record) tonnx::set_emitted_recording(true);
  struct WriteRecords {
    const char* path;
    ~WriteRecords() {
      if (path) tonnx::append_emitted_records(path, tonnx::emitted_records());
    }
  } write_records{record};
  if (cmd == "batch") {
    if (rest.size() == 1 && (rest[0] == "--help" || rest[0] == "-h")) {
      std::cout << kBatchUsage;
      return 0;
    }
    if (!rest.empty()) {
      std::cerr << "tonnx batch: takes no arguments, got '" << rest[0]
                << "' (see `tonnx batch --help`)\n";
      return 2;
    }
    return stdout_written(run_batch());
  }
  return stdout_written(dispatch(cmd, rest));
}
