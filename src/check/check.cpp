// libonnx's checker and shape inference, and tonnx's one graph printer (printable_graph),
// used by `tonnx print`, `tonnx check` and verbose export alike.
#include "tonnx/check.h"

#include "check/check_work.h"
#include "check/checker_process.h"
#include "check/format.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <mutex>
#include <system_error>
#include <sstream>
#include <unordered_map>

#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace tonnx {

namespace {

namespace cw = check_work;

// libonnx's checker and shape inference trust the model: Debian's libonnx reads past the
// dims of a malformed node (ConvTranspose, found by fuzz_load) and crashes. They run in
// another process; a crash, a sanitizer report or a hang there is an error here, never a crash
// of the caller. That process is tonnx's checker process (checker_process.h), or, for a model
// it cannot take, a forked child. Either sends back the model without tensor data (so only
// types travel) and the caller copies the inferred types into its own model.

// What inference adds: value_info and the outputs' types, in every graph.
void copy_inferred(const onnx::GraphProto& from, onnx::GraphProto& to) {
  *to.mutable_value_info() = from.value_info();
  for (int i = 0; i < to.output_size() && i < from.output_size(); ++i)
    *to.mutable_output(i)->mutable_type() = from.output(i).type();
  for (int i = 0; i < to.node_size() && i < from.node_size(); ++i)
    for (int j = 0; j < to.node(i).attribute_size() && j < from.node(i).attribute_size(); ++j) {
      const auto& fa = from.node(i).attribute(j);
      auto* ta = to.mutable_node(i)->mutable_attribute(j);
      if (fa.has_g() && ta->has_g()) copy_inferred(fa.g(), *ta->mutable_g());
      for (int k = 0; k < ta->graphs_size() && k < fa.graphs_size(); ++k)
        copy_inferred(fa.graphs(k), *ta->mutable_graphs(k));
    }
}

// libonnx's schema registry, built on another thread (OnnxSchemasLoading) where there is no
// checker process; the future is valid once that thread has started.
std::mutex g_schemas_mu;
std::shared_future<void> g_schemas;
// A fork while that thread builds would leave the child waiting forever on the registry's
// guard, held by a thread the child does not have; an exit would destroy libonnx's statics
// under it: wait for it first.
void wait_for_schemas() {
  std::shared_future<void> f;
  {
    std::lock_guard<std::mutex> lock(g_schemas_mu);
    f = g_schemas;
  }
  if (f.valid()) f.wait();
}

// Runs `work` on m in a forked child, which answers as check_work::run does.
std::string forked(onnx::ModelProto& m, const std::string& what,
                   const std::function<std::string(onnx::ModelProto&)>& work) {
  wait_for_schemas();
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw CheckError("cannot run " + what + ": socketpair failed");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw CheckError("cannot run " + what + ": fork failed");
  }
  if (pid == 0) {
    // The child: a crash must end it quietly (no handler of the caller's, such as a fuzzer's).
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    ::close(fds[0]);
    std::string answer;
    try {
      answer = work(m);
    } catch (const std::exception& e) {
      answer = std::string("E") + e.what();
    }
    _exit(cw::send_frame(fds[1], cw::kAnswerKind, answer) ? 0 : 3);
  }
  ::close(fds[1]);
  // The same frames and deadline as the checker process's (checker_process.cpp).
  char kind = 0;
  std::string answer;
  cw::ReadStatus got =
      cw::read_frame(fds[0], std::chrono::steady_clock::now() + std::chrono::seconds(600),
                     cw::kMaxFrameBytes, kind, answer);
  ::close(fds[0]);
  bool timed_out = got == cw::ReadStatus::kTimedOut;
  if (got != cw::ReadStatus::kOk) {
    ::kill(pid, SIGKILL);  // gone already, or stopped here
    answer.clear();
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) throw CheckError(what + " did not finish in 600 s; it was stopped");
  if (got == cw::ReadStatus::kTooLong)
    throw CheckError(what + " answered with more than 2 GiB; no model's types are that large");
  if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0) || answer.empty())
    throw CheckError(cw::crash_message(what, status));
  return answer;
}

// Copies the types an answer carries into m, or throws the CheckError it carries.
void apply(const std::string& answer, onnx::ModelProto& m, const std::string& what) {
  if (!answer.empty() && answer[0] == 'E') throw CheckError(answer.substr(1));
  onnx::ModelProto result;
  if (answer.empty() || answer[0] != 'M' ||
      !result.ParseFromArray(answer.data() + 1, static_cast<int>(answer.size() - 1)))
    throw CheckError(what + " returned an unreadable answer");
  copy_inferred(result.graph(), *m.mutable_graph());
}

// check_work::run(kind, m) away from this process, its types copied into m.
void isolated(onnx::ModelProto& m, const std::string& what, char kind) {
  std::optional<std::string> answer = detail::ask_checker_process(kind, m, what);
  if (!answer)
    answer = forked(m, what, [kind](onnx::ModelProto& model) { return cw::run(kind, model); });
  apply(*answer, m, what);
}

}  // namespace

void infer_shapes_strict(onnx::ModelProto& m) {
  isolated(m, "ONNX shape inference", cw::kInferOnly);
}

OnnxSchemasLoading::OnnxSchemasLoading() {
  // The checker process builds them in its own time; a forked check needs them here.
  if (detail::start_checker_process()) return;
  std::lock_guard<std::mutex> lock(g_schemas_mu);
  if (g_schemas.valid()) return;
  try {
    g_schemas = std::async(std::launch::async, cw::load_schemas).share();
  } catch (const std::system_error&) {
    // No thread to spare: the first check builds them, as it would have.
  }
}
OnnxSchemasLoading::~OnnxSchemasLoading() { wait_for_schemas(); }

void check_model(onnx::ModelProto& m, bool infer_shapes) {
  isolated(m, "ONNX's checker and shape inference",
           infer_shapes ? cw::kCheckAndInfer : cw::kCheckOnly);
}

namespace {
// tonnx's reading of every tensor held as external data (initializers, sparse tensors and tensor
// attributes, subgraphs included): a regular file inside the model's folder, of the size the tensor
// needs. Inline tensors are not copied.
void check_external_data(const onnx::GraphProto& g, const std::string& dir) {
  auto one = [&](const onnx::TensorProto& t) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) tensor_from_proto(t, dir);
  };
  auto sparse = [&](const onnx::SparseTensorProto& s) {
    one(s.values());
    one(s.indices());
  };
  for (const auto& t : g.initializer()) one(t);
  for (const auto& s : g.sparse_initializer()) sparse(s);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_t()) one(a.t());
      for (const auto& t : a.tensors()) one(t);
      if (a.has_sparse_tensor()) sparse(a.sparse_tensor());
      for (const auto& s : a.sparse_tensors()) sparse(s);
      if (a.has_g()) check_external_data(a.g(), dir);
      for (const auto& sub : a.graphs()) check_external_data(sub, dir);
    }
}
}  // namespace

void check_model_file(const std::string& path) {
  onnx::ModelProto m = read_model_proto(path);
  for (const auto& o : m.opset_import())
    if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() > kLibonnxMaxOpset)
      throw CheckError("the model imports ai.onnx opset " + std::to_string(o.version()) +
                       "; libonnx's checker and shape inference know opsets up to " +
                       std::to_string(kLibonnxMaxOpset) +
                       " (tonnx::backend::validate judges later ones; tonnx check does)");
  // tonnx's own rules first (libonnx 1.13's checker follows links).
  try {
    check_external_data(m.graph(), folder_of(path));
  } catch (const std::exception& e) {
    throw CheckError(e.what());
  }
  // In a forked child, which shares the model's bytes: the path form of libonnx's checker
  // resolves external data relative to the model's folder.
  const std::string what = "ONNX's checker and shape inference";
  std::string answer = forked(m, what, [&path](onnx::ModelProto& model) {
    try {
      onnx::checker::check_model(path);
    } catch (const std::exception& e) {
      return std::string("EONNX checker: ") + e.what();
    }
    return cw::run(cw::kInferOnly, model);
  });
  apply(answer, m, what);
}

namespace {
// Element type names as the seed prints them (Float, Long, ...): the IR's one table.
const char* elem_name(int t) { return ir::dtype_name(static_cast<ir::DType>(t)); }
}  // namespace

namespace detail {

std::string type_str(const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) return "Dynamic";
  std::ostringstream os;
  os << elem_name(t.tensor_type().elem_type());
  if (t.tensor_type().has_shape()) {
    os << "(";
    const auto& dims = t.tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) {
      if (i) os << ", ";
      if (dims[i].has_dim_value())
        os << dims[i].dim_value();
      else if (!dims[i].dim_param().empty())
        os << dims[i].dim_param();
      else
        os << "?";
    }
    os << ")";
  }
  return os.str();
}

std::string tensor_type_str(const onnx::TensorProto& t) {
  std::ostringstream os;
  os << elem_name(t.data_type()) << "(";
  for (int i = 0; i < t.dims_size(); ++i) os << (i ? ", " : "") << t.dims(i);
  os << ")";
  return os.str();
}

std::string attr_str(const onnx::AttributeProto& a, const std::string& base_dir) {
  std::ostringstream os;
  auto list = [&](const auto& v, bool quote) {
    os << "[";
    for (int i = 0; i < v.size(); ++i) {
      if (i) os << ", ";
      if (quote)
        os << '"' << v[i] << '"';
      else
        os << v[i];
    }
    os << "]";
  };
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      os << a.i();
      break;
    case onnx::AttributeProto::FLOAT:
      os << a.f();
      break;
    case onnx::AttributeProto::STRING:
      os << '"' << a.s() << '"';
      break;
    case onnx::AttributeProto::INTS:
      list(a.ints(), false);
      break;
    case onnx::AttributeProto::FLOATS:
      list(a.floats(), false);
      break;
    case onnx::AttributeProto::STRINGS:
      list(a.strings(), true);
      break;
    case onnx::AttributeProto::TENSOR: {
      const auto& t = a.t();
      // One element: printed as its value; more: the type and the first values.
      // Values of tensors up to 64K elements (a larger one would be decoded whole to show 8).
      std::string values, unread;
      auto n = ir::product_of({t.dims().begin(), t.dims().end()});
      const bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
      try {
        if (n && *n <= (1 << 16) && (!external || !base_dir.empty()))
          values = ir::values_str(tensor_from_proto(t, base_dir));
      } catch (const std::exception& e) {  // (strings, or external data that cannot be read)
        unread = e.what();
      }
      if (external && values.empty()) {
        std::string location;
        for (const auto& kv : t.external_data())
          if (kv.key() == "location") location = kv.value();
        os << "<Tensor " << tensor_type_str(t) << " in external data '" << location << "'"
           << (unread.empty() ? "" : ", not read: " + unread) << ">";
        break;
      }
      if (!values.empty() && ir::product_of({t.dims().begin(), t.dims().end()}) == 1) {
        os << values;
        break;
      }
      os << "<Tensor " << tensor_type_str(t) << (values.empty() ? "" : " " + values) << ">";
      break;
    }
    case onnx::AttributeProto::GRAPH:
      os << "<Graph " << a.g().name() << ">";
      break;
    default:
      os << "<?>";
      break;
  }
  return os.str();
}

}  // namespace detail

std::string printable_graph(const onnx::ModelProto& m, const std::string& base_dir) {
  using namespace detail;
  const auto& g = m.graph();
  std::unordered_map<std::string, std::string> types;
  for (const auto& v : g.input()) types[v.name()] = type_str(v.type());
  for (const auto& v : g.value_info()) types[v.name()] = type_str(v.type());
  for (const auto& v : g.output()) types[v.name()] = type_str(v.type());
  for (const auto& t : g.initializer()) types[t.name()] = tensor_type_str(t);
  auto type_of = [&](const std::string& n) {
    auto it = types.find(n);
    return it == types.end() ? std::string("Dynamic") : it->second;
  };
  std::ostringstream os;
  std::vector<std::string> params;
  std::unordered_map<std::string, bool> listed;
  for (const auto& v : g.input()) {
    params.push_back("%" + v.name() + " : " + type_of(v.name()));
    listed[v.name()] = true;
  }
  for (const auto& t : g.initializer())
    if (!listed.count(t.name())) params.push_back("%" + t.name() + " : " + type_of(t.name()));
  os << "graph(";
  for (size_t i = 0; i < params.size(); ++i) os << (i ? ",\n      " : "") << params[i];
  os << ") {\n";
  for (const auto& n : g.node()) {
    os << "  ";
    for (int i = 0; i < n.output_size(); ++i)
      os << (i ? ", " : "") << "%" << n.output(i) << " : " << type_of(n.output(i));
    os << " = " << (n.domain().empty() ? "onnx" : n.domain()) << "::" << n.op_type();
    if (n.attribute_size()) {
      std::vector<const onnx::AttributeProto*> attrs;
      for (const auto& a : n.attribute()) attrs.push_back(&a);
      std::sort(attrs.begin(), attrs.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
      os << "[";
      for (size_t i = 0; i < attrs.size(); ++i)
        os << (i ? ", " : "") << attrs[i]->name() << "=" << attr_str(*attrs[i], base_dir);
      os << "]";
    }
    os << "(";
    for (int i = 0; i < n.input_size(); ++i)
      os << (i ? ", " : "") << (n.input(i).empty() ? "None" : "%" + n.input(i));
    os << ")";
    const std::string& doc = n.doc_string();
    if (doc.rfind("scope: ", 0) == 0) os << ", " << doc.substr(0, doc.find('\n'));
    os << "\n";
  }
  os << "  return (";
  for (int i = 0; i < g.output_size(); ++i) os << (i ? ", " : "") << "%" << g.output(i).name();
  os << ");\n}\n";
  return os.str();
}

}  // namespace tonnx
