// Loading TorchScript files and custom-op libraries (tonnx/torchscript.h), with errors that
// say what to do.
#include <dlfcn.h>
#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "export/script_graph.h"
#include "export/script_storages.h"
#include "tonnx/torchscript.h"

namespace tonnx {
namespace fs = std::filesystem;
using detail::first_line;

namespace {
// LibTorch's whole message, without the surrounding blank lines (its load errors start with a
// newline) and capped for a terminal.
std::string whole_message(const std::string& s) {
  size_t b = s.find_first_not_of(" \n\t");
  if (b == std::string::npos) return "(LibTorch gave no message)";
  size_t e = s.find_last_not_of(" \n\t");
  std::string m = s.substr(b, e + 1 - b);
  return m.size() > 4000 ? m.substr(0, 4000) + "..." : m;
}

std::string load_hint(const std::string& msg) {
  const std::string key = "Unknown builtin op: ";
  size_t at = msg.find(key);
  if (at == std::string::npos) return "";
  std::string op = msg.substr(at + key.size());
  op = op.substr(0, op.find_first_of(".\n "));
  return "\nThe file calls " + op +
         ", a custom op that LibTorch does not know until the library that registers it is "
         "loaded: load it first (tonnx export --load-library PATH, tonnx::load_library; "
         "torchvision's is its _C*.so)";
}
}  // namespace

void load_library(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw ExportError("cannot load library '" + path +
                      "': " + (fs::exists(path, ec) ? "it is not a regular file" : "no such file"));
  // RTLD_GLOBAL: the ops it registers stay registered for the life of the process.
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    throw ExportError("cannot load library '" + path + "': " + (why ? why : "unknown error"));
  }
}

torch::jit::Module load_torchscript(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw ExportError("cannot load TorchScript file '" + path + "': no such file");
  if (!fs::is_regular_file(path, ec))
    throw ExportError("cannot load TorchScript file '" + path + "': it is not a regular file");
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw ExportError("cannot load TorchScript file '" + path + "': it cannot be read");
  detail::AllocationLog log;  // the blocks the archive's records are read into
  std::optional<torch::jit::Module> m;
  try {
    m = torch::jit::load(path);
  } catch (const c10::Error& e) {
    std::string msg = whole_message(e.what_without_backtrace());
    if (msg.find("PytorchStreamReader") != std::string::npos ||
        msg.find("archive") != std::string::npos || msg.find("zip") != std::string::npos)
      throw ExportError("cannot load TorchScript file '" + path +
                        "': it is not a complete TorchScript archive (" + first_line(msg) +
                        "); save it again with torch.jit.save or module.save");
    throw ExportError("cannot load TorchScript file '" + path + "': " + msg + load_hint(msg));
  } catch (const std::exception& e) {
    std::string msg = whole_message(e.what());
    throw ExportError("cannot load TorchScript file '" + path + "': " + msg + load_hint(msg));
  }
  check_loaded_storages(*m, log, path);
  return std::move(*m);
}

}  // namespace tonnx
