// IR <-> onnx::ModelProto through libonnx's protobuf classes.
#include "tonnx/proto.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "ir/cpu_allocator.h"

namespace tonnx {
namespace fs = std::filesystem;

namespace {

// The IR spells the default domain "" only; files may spell it "ai.onnx".
std::string ir_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

size_t element_size(ir::DType t) { return c10::elementSize(ir::scalar_type_from_dtype(t)); }

int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what) {
  for (int64_t d : dims)
    if (d < 0)
      throw std::runtime_error(what + ": dimension " + std::to_string(d) +
                               " is negative; tensor dims must be >= 0");
  std::optional<int64_t> n = ir::product_of(dims);
  if (!n) throw std::runtime_error(what + ": the product of its dims overflows int64");
  return *n;
}

std::string tensor_label(const onnx::TensorProto& p) { return "tensor '" + p.name() + "'"; }

// Copies a repeated proto field into a fresh tensor of the given type.
template <typename Src>
at::Tensor from_repeated(const google::protobuf::RepeatedField<Src>& f, int64_t numel,
                         at::ScalarType st, const std::vector<int64_t>& dims,
                         const std::string& label) {
  if (f.size() != numel)
    throw std::runtime_error(label + " holds " + std::to_string(f.size()) +
                             " values but its dims need " + std::to_string(numel));
  at::Tensor t = at::empty(dims, at::TensorOptions().dtype(st));
  switch (st) {
    case at::kHalf:
    case at::kBFloat16: {
      auto* out = reinterpret_cast<uint16_t*>(t.data_ptr());
      for (int64_t i = 0; i < numel; ++i) out[i] = static_cast<uint16_t>(f.Get(i));
      break;
    }
    default:
      AT_DISPATCH_ALL_TYPES_AND(at::kBool, st, "from_repeated", [&] {
        auto* out = t.data_ptr<scalar_t>();
        for (int64_t i = 0; i < numel; ++i) out[i] = static_cast<scalar_t>(f.Get(i));
      });
  }
  return t;
}

struct MappedFile {
  void* addr = nullptr;
  size_t size = 0;
  ~MappedFile() {
    if (addr && addr != MAP_FAILED) munmap(addr, size);
  }
};

// A decimal integer >= 0 that fits int64: "offset" and "length" of external data.
int64_t parse_size(const std::string& v, const std::string& what) {
  bool digits =
      !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || (v.size() == 19 && v > "9223372036854775807"))
    throw std::runtime_error(what + " '" + v + "' is not a non-negative integer");
  int64_t n = 0;
  for (char c : v) n = n * 10 + (c - '0');
  return n;
}

// Opens `location` under `base_dir` for reading: a relative path whose every component is a
// real directory (no symlinks, no "..") ending in a regular file that is not a hard link, opened
// without following links and without blocking (a FIFO cannot hang the load).
int open_contained(const std::string& base_dir, const std::string& location,
                   const std::string& label) {
  auto refuse = [&](const std::string& why) {
    return std::runtime_error(label + ": external data location '" + location + "' " + why);
  };
  fs::path rel(location);
  if (location.empty()) throw std::runtime_error(label + ": external data has no location");
  if (rel.is_absolute()) throw refuse("is absolute; it must be relative to the model's folder");
  std::vector<std::string> parts;
  for (const auto& c : rel) {
    std::string part = c.string();
    if (part == "..") throw refuse("leaves the model's folder (\"..\")");
    if (part.empty() || part == ".") continue;
    parts.push_back(part);
  }
  if (parts.empty()) throw refuse("names no file");
  // No folder, no guess: the working directory is not the model's folder.
  if (base_dir.empty())
    throw refuse(
        "cannot be opened: no model folder was given to read it from (pass the model's folder "
        "as base_dir)");
  int dir = ::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    throw std::runtime_error(label + ": cannot open the model's folder '" + base_dir +
                             "': " + std::strerror(errno));
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    ::close(dir);
    if (next < 0)
      throw refuse(err == ELOOP || err == ENOTDIR
                       ? "goes through '" + parts[i] + "', which is a link or not a folder"
                       : "cannot be opened at '" + parts[i] + "': " + std::strerror(err));
    dir = next;
  }
  int fd = ::openat(dir, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  int err = errno;
  ::close(dir);
  if (fd < 0)
    throw refuse(err == ELOOP ? "is a symbolic link; links could lead outside the model's folder"
                              : "cannot be opened in the model's folder '" + base_dir +
                                    "': " + std::strerror(err));
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    err = errno;
    ::close(fd);
    throw refuse(std::string("cannot be read: ") + std::strerror(err));
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    throw refuse("is not a regular file");
  }
  if (sb.st_nlink > 1) {
    ::close(fd);
    throw refuse("is a hard link (" + std::to_string(sb.st_nlink) +
                 " names); it could be a file outside the model's folder, so copy the data in");
  }
  return fd;
}

at::Tensor read_external(const onnx::TensorProto& p, const std::string& base_dir, at::ScalarType st,
                         const std::vector<int64_t>& dims, int64_t numel) {
  const std::string label = tensor_label(p);
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parse_size(kv.value(), label + ": external data offset");
    else if (kv.key() == "length")
      length = parse_size(kv.value(), label + ": external data length");
  }
  const int64_t item = static_cast<int64_t>(c10::elementSize(st));
  if (numel > std::numeric_limits<int64_t>::max() / item)
    throw std::runtime_error(label + ": its dims need more than 2^63 bytes");
  const int64_t nbytes = numel * item;
  int fd = open_contained(base_dir, location, label);
  struct stat st_buf {};
  ::fstat(fd, &st_buf);
  const int64_t file_size = static_cast<int64_t>(st_buf.st_size);
  if ((length >= 0 && length != nbytes) || offset > file_size || nbytes > file_size - offset) {
    ::close(fd);
    throw std::runtime_error(label + ": external data (offset " + std::to_string(offset) + ", " +
                             (length >= 0 ? "length " + std::to_string(length) + ", " : "") +
                             std::to_string(nbytes) +
                             " bytes for its type and dims) does not "
                             "fit in '" +
                             location + "' (" + std::to_string(file_size) + " bytes)");
  }
  if (nbytes == 0) {
    ::close(fd);
    return at::empty(dims, at::TensorOptions().dtype(st));
  }
  // Only the pages the tensor lies on are mapped: a file of many tensors is not mapped whole
  // once per tensor.
  const int64_t page = static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
  const int64_t start = offset / page * page;
  auto map = std::make_shared<MappedFile>();
  map->size = static_cast<size_t>(offset + nbytes - start);
  map->addr = mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
  ::close(fd);
  if (map->addr == MAP_FAILED)
    throw std::runtime_error(label + ": mmap of '" + location +
                             "' failed: " + std::strerror(errno));
  char* data = static_cast<char*>(map->addr) + (offset - start);
  at::TensorOptions to = at::TensorOptions().dtype(st);
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(item) != 0) {
    // An offset that is not a multiple of the element size: kernels read aligned elements.
    at::Tensor t = at::empty(dims, to);
    std::memcpy(t.data_ptr(), data, static_cast<size_t>(nbytes));
    return t;
  }
  // The mapping is read-only; the tensor keeps it alive and never writes to it.
  return at::from_blob(
      data, dims, [map](void*) {}, to);
}

}  // namespace

onnx::TensorProto tensor_to_proto(const at::Tensor& t_in, const std::string& name) {
  onnx::TensorProto p;
  if (!name.empty()) p.set_name(name);
  at::Tensor t = t_in.contiguous();
  p.set_data_type(static_cast<int>(ir::dtype_from_scalar_type(t.scalar_type())));
  for (int64_t d : t.sizes()) p.add_dims(d);
  p.set_raw_data(t.data_ptr(), t.numel() * t.element_size());
  return p;
}

std::string folder_of(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

at::Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  const std::string label = tensor_label(p);
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  const int64_t numel = checked_numel(dims, label);
  if (p.data_type() == onnx::TensorProto::STRING)
    throw std::runtime_error(label + " holds strings, which tonnx tensors cannot hold");
  auto dtype = static_cast<ir::DType>(p.data_type());
  at::ScalarType st;
  try {
    st = ir::scalar_type_from_dtype(dtype);
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": " + e.what());
  }
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    return read_external(p, base_dir, st, dims, numel);
  if (p.has_raw_data()) {
    const std::string& raw = p.raw_data();
    const size_t want = static_cast<size_t>(numel) * element_size(dtype);
    if (raw.size() != want)
      throw std::runtime_error(label + " has " + std::to_string(raw.size()) +
                               " bytes of raw_data but its type and dims need " +
                               std::to_string(want));
    // A weight of 2 MiB or more in transparent huge pages: a kernel that streams it whole per
    // run (a batch-1 classifier's GEMV) misses the TLB far less (AlexNet's three GEMV layers
    // at one thread: 9.2-10.4 -> 8.1-8.3 ms, Zen 4; docs/backend.md, "GEMV for one row").
    std::optional<detail::HugePageScope> huge;
    if (want >= (size_t{2} << 20)) huge.emplace();
    at::Tensor t = at::empty(dims, at::TensorOptions().dtype(st));
    huge.reset();
    if (want) std::memcpy(t.data_ptr(), raw.data(), want);
    return t;
  }
  switch (dtype) {
    case ir::DType::Float:
      return from_repeated(p.float_data(), numel, st, dims, label);
    case ir::DType::Double:
      return from_repeated(p.double_data(), numel, st, dims, label);
    case ir::DType::Int64:
      return from_repeated(p.int64_data(), numel, st, dims, label);
    case ir::DType::UInt32:
    case ir::DType::UInt64:
      throw std::runtime_error(label + ": unsigned 32/64-bit tensors are not supported by ATen");
    case ir::DType::Complex64:
    case ir::DType::Complex128:
      throw std::runtime_error(label + ": complex tensors in typed fields are not supported");
    default:
      return from_repeated(p.int32_data(), numel, st, dims, label);
  }
}

namespace {

void type_to_proto(const ir::TensorType& t, onnx::TypeProto* tp) {
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(t.dtype));
  if (!t.shape) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : *t.shape) {
    auto* dim = shape->add_dim();
    if (d.value)
      dim->set_dim_value(*d.value);
    else if (!d.symbol.empty())
      dim->set_dim_param(d.symbol);
  }
}

std::optional<ir::TensorType> type_from_proto(const onnx::TypeProto& tp) {
  if (!tp.has_tensor_type()) return std::nullopt;
  ir::TensorType t;
  t.dtype = static_cast<ir::DType>(tp.tensor_type().elem_type());
  if (tp.tensor_type().has_shape()) {
    std::vector<ir::Dim> dims;
    for (const auto& d : tp.tensor_type().shape().dim()) {
      if (d.has_dim_value())
        dims.push_back(ir::Dim::known(d.dim_value()));
      else
        dims.push_back(ir::Dim::named(d.dim_param()));
    }
    t.shape = std::move(dims);
  }
  return t;
}

void value_info(const ir::Value* v, onnx::ValueInfoProto* vi) {
  vi->set_name(v->name());
  if (v->type()) type_to_proto(*v->type(), vi->mutable_type());
  if (v->sequence_elem())
    type_to_proto(*v->sequence_elem(),
                  vi->mutable_type()->mutable_sequence_type()->mutable_elem_type());
}

void graph_to_proto(const ir::Graph& g, onnx::GraphProto* gp, bool with_data = true);

void attr_to_proto(const ir::Attr& a, onnx::AttributeProto* ap) {
  using K = ir::AttrValue::Kind;
  ap->set_name(a.name);
  const ir::AttrValue& v = a.value;
  switch (v.kind()) {
    case K::Int:
      ap->set_type(onnx::AttributeProto::INT);
      ap->set_i(v.i());
      break;
    case K::Float:
      ap->set_type(onnx::AttributeProto::FLOAT);
      ap->set_f(v.f());
      break;
    case K::String:
      ap->set_type(onnx::AttributeProto::STRING);
      ap->set_s(v.s());
      break;
    case K::Tensor:
      ap->set_type(onnx::AttributeProto::TENSOR);
      *ap->mutable_t() = tensor_to_proto(v.t());
      break;
    case K::Graph:
      ap->set_type(onnx::AttributeProto::GRAPH);
      graph_to_proto(*v.g(), ap->mutable_g());
      break;
    case K::Ints:
      ap->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : v.ints()) ap->add_ints(x);
      break;
    case K::Floats:
      ap->set_type(onnx::AttributeProto::FLOATS);
      for (float x : v.floats()) ap->add_floats(x);
      break;
    case K::Strings:
      ap->set_type(onnx::AttributeProto::STRINGS);
      for (const auto& x : v.strings()) ap->add_strings(x);
      break;
  }
}

onnx::TensorProto tensor_header(const at::Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int>(ir::dtype_from_scalar_type(t.scalar_type())));
  for (int64_t d : t.sizes()) p.add_dims(d);
  // One placeholder byte: the checker wants a value field, and does not size-check raw_data.
  p.set_raw_data(std::string(1, '\0'));
  return p;
}

void graph_to_proto(const ir::Graph& g, onnx::GraphProto* gp, bool with_data) {
  gp->set_name(g.name);
  if (!g.doc.empty()) gp->set_doc_string(g.doc);
  for (const ir::Value* v : g.inputs()) value_info(v, gp->add_input());
  for (const auto& [v, t] : g.initializers()) {
    // Shape inference reads the data of shape-like inputs (Reshape's shape, Resize's
    // scales...) without checking its size: those small or integer tensors keep theirs.
    bool keep = with_data || t.numel() <= 4096 || !at::isFloatingType(t.scalar_type());
    *gp->add_initializer() = keep ? tensor_to_proto(t, v->name()) : tensor_header(t, v->name());
  }
  for (const auto& n : g.nodes()) {
    auto* np = gp->add_node();
    np->set_op_type(n->op_type());
    if (!n->domain().empty()) np->set_domain(n->domain());
    if (!n->name().empty()) np->set_name(n->name());
    std::string doc = n->doc();
    if (!n->scope().empty()) doc = "scope: " + n->scope() + (doc.empty() ? "" : "\n" + doc);
    if (!doc.empty()) np->set_doc_string(doc);
    for (const ir::Value* in : n->inputs()) np->add_input(in ? in->name() : "");
    for (const ir::Value* out : n->outputs()) np->add_output(out->name());
    for (const ir::Attr& a : n->attrs()) attr_to_proto(a, np->add_attribute());
  }
  for (const ir::Value* v : g.outputs()) value_info(v, gp->add_output());
}

ir::AttrValue attr_from_proto(const onnx::AttributeProto& ap, const std::string& base_dir,
                              std::shared_ptr<ir::Graph> (*read_graph)(const onnx::GraphProto&,
                                                                       const std::string&)) {
  switch (ap.type()) {
    case onnx::AttributeProto::INT:
      return ir::AttrValue(static_cast<int64_t>(ap.i()));
    case onnx::AttributeProto::FLOAT:
      return ir::AttrValue(ap.f());
    case onnx::AttributeProto::STRING:
      return ir::AttrValue(ap.s());
    case onnx::AttributeProto::TENSOR:
      return ir::AttrValue(tensor_from_proto(ap.t(), base_dir));
    case onnx::AttributeProto::GRAPH:
      return ir::AttrValue(read_graph(ap.g(), base_dir));
    case onnx::AttributeProto::INTS:
      return ir::AttrValue(ir::Ints(ap.ints().begin(), ap.ints().end()));
    case onnx::AttributeProto::FLOATS:
      return ir::AttrValue(ir::Floats(ap.floats().begin(), ap.floats().end()));
    case onnx::AttributeProto::STRINGS:
      return ir::AttrValue(ir::Strings(ap.strings().begin(), ap.strings().end()));
    default:
      break;
  }
  throw std::runtime_error("attribute '" + ap.name() + "' has type " +
                           std::to_string(static_cast<int>(ap.type())) +
                           ", which tonnx does not read");
}

std::shared_ptr<ir::Graph> graph_from_proto(const onnx::GraphProto& gp,
                                            const std::string& base_dir) {
  auto g = std::make_shared<ir::Graph>();
  g->name = gp.name();
  g->doc = gp.doc_string();
  std::unordered_map<std::string, ir::Value*> by_name;
  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) throw std::runtime_error("an initializer has no name");
    by_name[init.name()] = g->add_initializer(init.name(), tensor_from_proto(init, base_dir));
  }
  for (const auto& in : gp.input()) {
    auto it = by_name.find(in.name());
    if (it != by_name.end()) continue;  // legacy: initializers listed as inputs
    by_name[in.name()] = g->add_input(in.name(), type_from_proto(in.type()));
  }
  std::unordered_map<std::string, std::optional<ir::TensorType>> infos;
  for (const auto& vi : gp.value_info()) infos[vi.name()] = type_from_proto(vi.type());
  for (const auto& np : gp.node()) {
    std::vector<ir::Value*> inputs;
    for (const std::string& name : np.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        // Outer-scope values of subgraphs are resolved when the graph runs.
        ir::Value* outer = g->add_value(name);
        by_name[name] = outer;
        inputs.push_back(outer);
      } else {
        inputs.push_back(it->second);
      }
    }
    std::vector<ir::Attr> attrs;
    for (const auto& ap : np.attribute()) {
      // Type attributes (Optional's `type`) only describe what the value already carries.
      if (ap.type() == onnx::AttributeProto::TYPE_PROTO ||
          ap.type() == onnx::AttributeProto::TYPE_PROTOS)
        continue;
      attrs.push_back({ap.name(), attr_from_proto(ap, base_dir, &graph_from_proto)});
    }
    std::string domain = ir_domain(np.domain());
    ir::Node* n = g->add_node(np.op_type(), inputs, std::move(attrs), np.output_size(), domain);
    n->set_name(np.name());
    n->set_doc(np.doc_string());
    for (int i = 0; i < np.output_size(); ++i) {
      ir::Value* out = n->output(i);
      out->set_name(np.output(i));
      if (np.output(i).empty()) continue;
      auto info = infos.find(np.output(i));
      if (info != infos.end()) out->set_type(info->second);
      by_name[np.output(i)] = out;
    }
  }
  for (const auto& out : gp.output()) {
    auto it = by_name.find(out.name());
    if (it == by_name.end()) {
      // A subgraph may output an outer-scope value; the backend resolves it by name and
      // reports a top-level output that nothing computes.
      if (out.name().empty()) throw std::runtime_error("a graph output has no name");
      it = by_name.emplace(out.name(), g->add_value(out.name())).first;
    }
    if (!it->second->type()) it->second->set_type(type_from_proto(out.type()));
    g->add_output(it->second);
  }
  return g;
}

}  // namespace

onnx::ModelProto model_to_proto(const ir::Model& m, bool with_initializer_data) {
  onnx::ModelProto p;
  p.set_ir_version(m.ir_version);
  p.set_producer_name(m.producer_name);
  p.set_producer_version(m.producer_version);
  if (!m.doc.empty()) p.set_doc_string(m.doc);
  for (const auto& o : m.opsets) {
    auto* op = p.add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  for (const auto& [k, v] : m.metadata) {
    auto* e = p.add_metadata_props();
    e->set_key(k);
    e->set_value(v);
  }
  graph_to_proto(*m.graph, p.mutable_graph(), with_initializer_data);
  return p;
}

ir::Model model_from_proto(const onnx::ModelProto& p, const std::string& base_dir) {
  ir::Model m;
  m.ir_version = p.ir_version();
  m.producer_name = p.producer_name();
  m.producer_version = p.producer_version();
  m.doc = p.doc_string();
  for (const auto& o : p.opset_import()) m.opsets.push_back({ir_domain(o.domain()), o.version()});
  for (const auto& e : p.metadata_props()) m.metadata[e.key()] = e.value();
  m.graph = graph_from_proto(p.graph(), base_dir);
  return m;
}

void save_tensor_proto(const onnx::TensorProto& t, const std::string& path) {
  std::string bytes;
  t.SerializeToString(&bytes);
  write_file_atomic(path, bytes);
}

}  // namespace tonnx
