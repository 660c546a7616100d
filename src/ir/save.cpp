// Writing models: the weights streamed from the tensors' memory into the model file, or into
// one external data file beside it (ONNX's external data, each tensor 4096-byte aligned).
#include <ATen/ATen.h>
#include <c10/util/StringUtil.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <filesystem>
#include <functional>
#include <limits>
#include <chrono>
#include <map>
#include <ostream>
#include <tuple>
#include <vector>

#include "ir/pending_file.h"
#include "tonnx/progress.h"
#include "tonnx/proto.h"

namespace tonnx {
namespace fs = std::filesystem;

namespace {
constexpr uint64_t kProtobufLimit = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
// Data files from this size on are written past the page cache (PendingFile's direct mode),
// model files from the next.
constexpr uint64_t kDirectWrite = uint64_t{64} << 20;
constexpr uint64_t kDirectModelWrite = uint64_t{32} << 20;

void put_varint(std::ostream& out, uint64_t v) {
  uint8_t buf[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(v, buf);
  out.write(reinterpret_cast<const char*>(buf), end - buf);
}
void put_tag(std::ostream& out, int field) {
  using WFL = google::protobuf::internal::WireFormatLite;
  put_varint(out, WFL::MakeTag(field, WFL::WIRETYPE_LENGTH_DELIMITED));
}
size_t varint_size(uint64_t v) { return google::protobuf::io::CodedOutputStream::VarintSize64(v); }

uint64_t nbytes_of(const at::Tensor& t) {
  return static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(t.element_size());
}

std::string too_big(const std::string& path, uint64_t bytes) {
  return "cannot write '" + path + "': the model would be " + std::to_string(bytes) +
         " bytes, over protobuf's 2 GB limit; write its weights as external data "
         "(ExportOptions::external_data, tonnx export --external-data)";
}
}  // namespace

void check_external_location(const std::string& location, const std::string& model_path) {
  auto refuse = [&](const std::string& why) {
    return std::runtime_error("external data file name '" + location + "' " + why);
  };
  if (location.empty()) throw refuse("is empty");
  fs::path rel(location);
  if (rel.is_absolute()) throw refuse("is absolute; it must be relative to the model's folder");
  for (const auto& c : rel)
    if (c == "..") throw refuse("leaves the model's folder (\"..\")");
  if (!rel.has_filename() || rel.filename() == ".") throw refuse("names no file");
  fs::path model = fs::path(model_path).filename();
  if (rel.lexically_normal() == model) throw refuse("is the model file itself");
  // Beside /dev/null there is no folder of the model's to put data in.
  std::error_code ec;
  auto st = fs::status(model_path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st))
    throw std::runtime_error("external data needs a model file in a folder, and '" + model_path +
                             "' is not a regular file; write the model to a file path");
}

namespace {
// Writes tensors into one data file at aligned offsets; a tensor whose bytes were written
// already (the same memory: tied weights) gets the offset it has.
class DataFile {
 public:
  DataFile(std::ostream& out, int64_t alignment) : out_(out), align_(alignment) {}
  // `key` names the bytes for deduplication (empty: never deduplicated).
  uint64_t put(uint64_t nbytes, const std::string& key,
               const std::function<void(std::ostream&)>& write_bytes) {
    auto it = key.empty() ? seen_.end() : seen_.find(key);
    if (it != seen_.end()) return it->second;
    static const char zeros[4096] = {};
    uint64_t a = static_cast<uint64_t>(align_);
    uint64_t pad = (a - pos_ % a) % a;
    while (pad > 0) {
      uint64_t n = std::min<uint64_t>(pad, sizeof zeros);
      out_.write(zeros, static_cast<std::streamsize>(n));
      pad -= n;
      pos_ += n;
    }
    uint64_t at = pos_;
    write_bytes(out_);
    pos_ += nbytes;
    if (nbytes && !key.empty()) seen_.emplace(key, at);
    return at;
  }
  uint64_t size() const { return pos_; }

 private:
  std::ostream& out_;
  int64_t align_;
  uint64_t pos_ = 0;
  std::map<std::string, uint64_t> seen_;
};

// Writes a tensor's bytes in row-major order: a contiguous tensor straight from its memory, a
// view (a lazily transposed weight) through `buffer`, reused from tensor to tensor, whole or in
// 16 MB slices along dim 0, so that no copy of the weights is ever made.
void write_tensor(std::ostream& out, const at::Tensor& t, at::Tensor& buffer) {
  if (t.is_contiguous() || t.dim() == 0) {
    at::Tensor c = t.contiguous();
    out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(nbytes_of(c)));
    return;
  }
  const int64_t n0 = t.size(0);
  if (n0 == 0 || t.numel() == 0) return;
  // Whole up to 256 MB: a transposed matrix then takes ATen's blocked transpose (slices of it
  // would be strided copies, several times slower).
  const int64_t row = t.numel() / n0;  // elements per slice along dim 0
  const int64_t rows = nbytes_of(t) <= (uint64_t{256} << 20)
                           ? n0
                           : std::max<int64_t>(1, (int64_t{16} << 20) / (row * t.element_size()));
  if (!buffer.defined() || buffer.scalar_type() != t.scalar_type() || buffer.numel() < rows * row)
    buffer = at::empty({rows * row}, t.options());
  for (int64_t r = 0; r < n0; r += rows) {
    at::Tensor part = t.narrow(0, r, std::min(rows, n0 - r));
    at::Tensor dst = buffer.narrow(0, 0, part.numel()).view(part.sizes());
    dst.copy_(part);
    out.write(static_cast<const char*>(dst.data_ptr()),
              static_cast<std::streamsize>(nbytes_of(dst)));
  }
}

void set_external(onnx::TensorProto& p, const std::string& location, uint64_t offset,
                  uint64_t length) {
  p.set_data_location(onnx::TensorProto::EXTERNAL);
  p.clear_external_data();
  auto add = [&](const char* k, const std::string& v) {
    auto* e = p.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

}  // namespace

namespace {
// Reports the bytes written so far (tonnx/progress.h) as each tensor is written.
struct WriteProgress {
  int64_t total = 0, done = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  void add(uint64_t n) {
    done += static_cast<int64_t>(n);
    if (!progress_wanted()) return;
    ProgressEvent e;
    e.stage = "write";
    e.bytes = done;
    e.total = total;
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report_progress(e);
  }
};
}  // namespace

uint64_t inline_model_bytes(const ir::Model& m, const onnx::ModelProto& skeleton) {
  uint64_t total = skeleton.ByteSizeLong();
  for (const auto& [v, t] : m.graph->initializers()) total += nbytes_of(t) + 16;
  return total;
}

SavedModel save_model(const ir::Model& m, onnx::ModelProto& skeleton, const std::string& path,
                      const ExternalDataOptions& ext) {
  const auto& inits = m.graph->initializers();
  const bool external = !ext.location.empty();
  if (external) check_external_location(ext.location, path);
  if (ext.alignment < 1 || ext.alignment > (1 << 24))
    throw std::runtime_error("external data alignment " + std::to_string(ext.alignment) +
                             " is not in [1, 16777216]");
  // The weights as held (a strided view, a folded transpose, is made contiguous by
  // write_tensor while it is written).
  auto tensor = [&](size_t i) -> const at::Tensor& { return inits[i].second; };
  std::vector<bool> out_of_line(inits.size(), false);
  bool any_external = false;
  if (external)
    for (size_t i = 0; i < inits.size(); ++i)
      if (tensor(i).numel() > 0 &&
          nbytes_of(tensor(i)) >= static_cast<uint64_t>(std::max<int64_t>(ext.threshold, 0)))
        any_external = out_of_line[i] = true;

  SavedModel saved;
  WriteProgress progress;
  for (size_t i = 0; i < inits.size(); ++i)
    progress.total += static_cast<int64_t>(nbytes_of(tensor(i)));
  std::unique_ptr<PendingFile> data;
  std::vector<uint64_t> offsets(inits.size(), 0);
  if (any_external) {
    saved.data_path = (fs::path(path).parent_path() / ext.location).string();
    uint64_t total = 0;
    for (size_t i = 0; i < inits.size(); ++i)
      if (out_of_line[i]) total += nbytes_of(tensor(i));
    data = std::make_unique<PendingFile>(saved.data_path, total >= kDirectWrite);
    data->write([&](std::ostream& out) {
      DataFile file(out, ext.alignment);
      at::Tensor buffer;
      for (size_t i = 0; i < inits.size(); ++i)
        if (out_of_line[i]) {
          // The tensors live until the end: their address, dtype, sizes and strides name their
          // bytes (tied weights).
          const at::Tensor& t = tensor(i);
          std::string key = std::to_string(reinterpret_cast<uintptr_t>(t.data_ptr())) + ":" +
                            std::string(t.dtype().name()) + ":" + c10::str(t.sizes()) + ":" +
                            c10::str(t.strides());
          offsets[i] =
              file.put(nbytes_of(t), key, [&](std::ostream& os) { write_tensor(os, t, buffer); });
          progress.add(nbytes_of(t));
        }
      saved.data_bytes = file.size();
    });
  }

  // Protobuf merges repeated occurrences of an embedded message field: the file is the
  // skeleton without initializers, then one `graph { initializer { ... } }` chunk per
  // tensor whose raw_data bytes come straight from the tensor's memory (or, held
  // externally, whose header says where they are).
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  kept.Swap(skeleton.mutable_graph()->mutable_initializer());
  struct Restore {
    google::protobuf::RepeatedPtrField<onnx::TensorProto>& a;
    onnx::ModelProto& m;
    ~Restore() { a.Swap(m.mutable_graph()->mutable_initializer()); }
  } restore{kept, skeleton};
  std::string head;
  if (!skeleton.SerializeToString(&head))
    throw std::runtime_error("serializing the model for '" + path + "' failed");
  std::vector<std::string> headers;
  uint64_t total = head.size();
  size_t i = 0;
  for (const auto& [v, t] : inits) {
    onnx::TensorProto header;
    header.set_name(v->name());
    header.set_data_type(static_cast<int>(ir::dtype_from_scalar_type(t.scalar_type())));
    for (int64_t d : t.sizes()) header.add_dims(d);
    if (out_of_line[i]) set_external(header, ext.location, offsets[i], nbytes_of(t));
    headers.push_back(header.SerializeAsString());
    total += headers.back().size() + (out_of_line[i] ? 0 : nbytes_of(t) + 16) + 16;
    ++i;
  }
  if (total > kProtobufLimit) throw std::runtime_error(too_big(path, total));
  // A model file of 32 MB or more past the page cache too: buffered, AlexNet's 233 MB took
  // 0.09 s or 0.7 s, word_language_model's 53 MB 0.04 s or 0.21 s, by how many dirty pages
  // earlier writes had left (docs/export_speed.md). Direct writes are slower than an
  // unthrottled buffered one below that (DCGAN's 14 MB: 16-22 ms against 13-15).
  PendingFile model(path, total >= kDirectModelWrite);
  model.write([&](std::ostream& out) {
    at::Tensor buffer;
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    constexpr int kGraph = 7, kInitializer = 5, kRawData = 9;
    for (size_t k = 0; k < inits.size(); ++k) {
      const std::string& hb = headers[k];
      uint64_t nbytes = out_of_line[k] ? 0 : nbytes_of(tensor(k));
      uint64_t tensor_len =
          hb.size() +
          (out_of_line[k] ? 0 : varint_size(kRawData << 3) + varint_size(nbytes) + nbytes);
      uint64_t graph_len = varint_size(kInitializer << 3) + varint_size(tensor_len) + tensor_len;
      put_tag(out, kGraph);
      put_varint(out, graph_len);
      put_tag(out, kInitializer);
      put_varint(out, tensor_len);
      out.write(hb.data(), static_cast<std::streamsize>(hb.size()));
      if (out_of_line[k]) continue;
      put_tag(out, kRawData);
      put_varint(out, nbytes);
      write_tensor(out, tensor(k), buffer);
      progress.add(nbytes);
    }
  });
  // The data first, the model last: until the model is renamed, the old model is in place.
  if (data) data->commit();
  model.commit();
  saved.model_bytes = model.bytes();
  return saved;
}

void save_model(const ir::Model& m, onnx::ModelProto& skeleton, const std::string& path) {
  save_model(m, skeleton, path, ExternalDataOptions{});
}

void save_model_proto(const onnx::ModelProto& m, const std::string& path) {
  std::string bytes;
  if (m.ByteSizeLong() > kProtobufLimit) throw std::runtime_error(too_big(path, m.ByteSizeLong()));
  if (!m.SerializeToString(&bytes))
    throw std::runtime_error("serializing the model for '" + path + "' failed");
  write_file_atomic(path, bytes);
}

namespace {
// Bytes per element of an ONNX type that can be held as raw bytes (0: strings or unknown).
uint64_t onnx_element_size(int t) {
  using P = onnx::TensorProto;
  switch (t) {
    case P::UINT8:
    case P::INT8:
    case P::BOOL:
      return 1;
    case P::UINT16:
    case P::INT16:
    case P::FLOAT16:
    case P::BFLOAT16:
      return 2;
    case P::FLOAT:
    case P::INT32:
    case P::UINT32:
      return 4;
    case P::INT64:
    case P::DOUBLE:
    case P::UINT64:
    case P::COMPLEX64:
      return 8;
    case P::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

std::string label_of(const onnx::TensorProto& p) {
  return "tensor '" + (p.name().empty() ? std::string("(unnamed)") : p.name()) + "'";
}

// The byte size a tensor's type and dims give it; throws on negative dims or overflow.
uint64_t proto_nbytes(const onnx::TensorProto& p) {
  uint64_t item = onnx_element_size(p.data_type());
  if (item == 0)
    throw std::runtime_error(label_of(p) + ": element type " + std::to_string(p.data_type()) +
                             " cannot be held as raw bytes");
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0) throw std::runtime_error(label_of(p) + " has a negative dim " + std::to_string(d));
  std::optional<int64_t> numel = ir::product_of(dims);
  if (!numel || static_cast<uint64_t>(*numel) > (uint64_t{1} << 62) / item)
    throw std::runtime_error(label_of(p) + ": its dims need more than 2^62 bytes");
  return static_cast<uint64_t>(*numel) * item;
}

// A tensor's bytes: the proto's raw_data in place, external data mapped (read with the
// backend's rules), or typed fields converted (`keep` holds the memory).
struct Bytes {
  const void* data = nullptr;
  uint64_t size = 0;
  at::Tensor keep;
};
Bytes bytes_of(const onnx::TensorProto& p, const std::string& dir) {
  const uint64_t n = proto_nbytes(p);
  Bytes b;
  b.size = n;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    // Read as bytes: any element type, the location and size checks of every external read.
    onnx::TensorProto view;
    view.set_name(p.name());
    view.set_data_type(onnx::TensorProto::UINT8);
    view.add_dims(static_cast<int64_t>(n));
    view.set_data_location(onnx::TensorProto::EXTERNAL);
    *view.mutable_external_data() = p.external_data();
    b.keep = tensor_from_proto(view, dir);
    b.data = b.keep.data_ptr();
  } else if (p.has_raw_data()) {
    if (p.raw_data().size() != n)
      throw std::runtime_error(label_of(p) + " has " + std::to_string(p.raw_data().size()) +
                               " bytes of raw_data but its type and dims need " +
                               std::to_string(n));
    b.data = p.raw_data().data();
  } else {
    b.keep = tensor_from_proto(p).contiguous();
    if (nbytes_of(b.keep) != n)
      throw std::runtime_error(label_of(p) + ": its typed data does not match its dims");
    b.data = b.keep.data_ptr();
  }
  return b;
}

std::string external_key(const onnx::TensorProto& p) {
  std::string k;
  for (const auto& e : p.external_data()) k += e.key() + "=" + e.value() + ";";
  return k;
}

// Every tensor of a graph and its subgraphs: initializers, then tensor attributes.
void collect(onnx::GraphProto& g, std::vector<onnx::TensorProto*>& inits,
             std::vector<onnx::TensorProto*>& attrs) {
  for (auto& t : *g.mutable_initializer()) inits.push_back(&t);
  for (const auto& s : g.sparse_initializer())
    if (s.values().data_location() == onnx::TensorProto::EXTERNAL ||
        s.indices().data_location() == onnx::TensorProto::EXTERNAL)
      throw std::runtime_error("sparse initializer '" + s.values().name() +
                               "' holds external data, which tonnx convert does not move");
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) attrs.push_back(a.mutable_t());
      for (auto& t : *a.mutable_tensors()) attrs.push_back(&t);
      if (a.has_g()) collect(*a.mutable_g(), inits, attrs);
      for (auto& sub : *a.mutable_graphs()) collect(sub, inits, attrs);
    }
}

void clear_data(onnx::TensorProto& p) {
  p.clear_raw_data();
  p.clear_float_data();
  p.clear_int32_data();
  p.clear_int64_data();
  p.clear_double_data();
  p.clear_uint64_data();
}
}  // namespace

SavedModel convert_model_file(const std::string& in, const std::string& out,
                              const ExternalDataOptions& ext) {
  onnx::ModelProto m = read_model_proto(in);
  const std::string in_dir = folder_of(in);
  const bool to_external = !ext.location.empty();
  if (to_external) check_external_location(ext.location, out);
  std::vector<onnx::TensorProto*> inits, attrs;
  collect(*m.mutable_graph(), inits, attrs);
  std::vector<onnx::TensorProto*> all = inits;
  all.insert(all.end(), attrs.begin(), attrs.end());

  // What moves: out, every initializer and every externally held tensor of at least the
  // threshold; in, every other externally held tensor (its old file may not be beside `out`).
  const uint64_t threshold = static_cast<uint64_t>(std::max<int64_t>(ext.threshold, 1));
  std::vector<onnx::TensorProto*> move_out, bring_in;
  int64_t growth = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    onnx::TensorProto* p = all[i];
    const bool is_ext = p->data_location() == onnx::TensorProto::EXTERNAL;
    if (p->data_type() == onnx::TensorProto::STRING) {
      if (is_ext)
        throw std::runtime_error(label_of(*p) +
                                 " holds strings as external data, which ONNX "
                                 "does not allow");
      continue;
    }
    if (!is_ext && i >= inits.size()) continue;  // inline attributes stay inline
    const uint64_t n = proto_nbytes(*p);
    if (to_external && n >= threshold) {
      move_out.push_back(p);
      if (!is_ext) growth -= static_cast<int64_t>(p->ByteSizeLong());
    } else if (is_ext) {
      bring_in.push_back(p);
      growth += static_cast<int64_t>(n) + 16;
    }
  }
  const int64_t estimate = static_cast<int64_t>(m.ByteSizeLong()) + growth;
  if (estimate > static_cast<int64_t>(kProtobufLimit))
    throw std::runtime_error(too_big(out, static_cast<uint64_t>(estimate)));

  SavedModel saved;
  std::unique_ptr<PendingFile> data;
  std::vector<std::pair<uint64_t, uint64_t>> placed(move_out.size());
  if (!move_out.empty()) {
    saved.data_path = (fs::path(out).parent_path() / ext.location).string();
    uint64_t total = 0;
    for (const onnx::TensorProto* p : move_out) total += proto_nbytes(*p);
    data = std::make_unique<PendingFile>(saved.data_path, total >= kDirectWrite);
    data->write([&](std::ostream& os) {
      DataFile file(os, ext.alignment);
      for (size_t i = 0; i < move_out.size(); ++i) {
        const onnx::TensorProto& p = *move_out[i];
        Bytes b = bytes_of(p, in_dir);
        // External bytes are named by where they are (shared weights are written once);
        // raw_data strings by their address, alive until the protos change below.
        std::string key =
            p.data_location() == onnx::TensorProto::EXTERNAL
                ? "ext:" + external_key(p)
                : (p.has_raw_data() ? "raw:" + std::to_string(reinterpret_cast<uintptr_t>(b.data))
                                    : std::string());
        placed[i] = {file.put(b.size, key,
                              [&](std::ostream& o) {
                                o.write(static_cast<const char*>(b.data),
                                        static_cast<std::streamsize>(b.size));
                              }),
                     b.size};
      }
      saved.data_bytes = file.size();
    });
  }
  // Bring in before moving out: both may read the input's external files.
  for (onnx::TensorProto* p : bring_in) {
    Bytes b = bytes_of(*p, in_dir);
    std::string raw(static_cast<const char*>(b.data), b.size);
    clear_data(*p);
    p->clear_external_data();
    p->clear_data_location();
    p->set_raw_data(std::move(raw));
  }
  for (size_t i = 0; i < move_out.size(); ++i) {
    clear_data(*move_out[i]);
    set_external(*move_out[i], ext.location, placed[i].first, placed[i].second);
  }
  const uint64_t size = m.ByteSizeLong();
  if (size > kProtobufLimit) throw std::runtime_error(too_big(out, size));
  PendingFile model(out);
  model.write([&](std::ostream& os) {
    if (!m.SerializeToOstream(&os))
      throw std::runtime_error("serializing the model for '" + out + "' failed");
  });
  if (data) data->commit();
  model.commit();
  saved.model_bytes = model.bytes();
  return saved;
}

}  // namespace tonnx
