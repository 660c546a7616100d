#include "fuzz_util.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tonnx::fuzz {
namespace {

namespace fs = std::filesystem;

// Values that break size and index arithmetic.
const int64_t kInts[] = {0,
                         1,
                         -1,
                         2,
                         3,
                         -2,
                         7,
                         64,
                         255,
                         1 << 16,
                         int64_t{1} << 31,
                         (int64_t{1} << 31) - 1,
                         -(int64_t{1} << 31),
                         int64_t{1} << 32,
                         int64_t{1} << 61,
                         (int64_t{1} << 62) + 1,
                         std::numeric_limits<int64_t>::max(),
                         std::numeric_limits<int64_t>::min()};
const float kFloats[] = {0.0f,
                         -0.0f,
                         1.0f,
                         -1.0f,
                         0.5f,
                         1e-30f,
                         1e30f,
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(),
                         3.0e9f,
                         -3.0e9f};
const char* kOps[] = {"Add",
                      "Gather",
                      "Slice",
                      "Reshape",
                      "Conv",
                      "MaxPool",
                      "Resize",
                      "Loop",
                      "If",
                      "Scan",
                      "Concat",
                      "Split",
                      "Pad",
                      "Expand",
                      "Tile",
                      "TopK",
                      "NonZero",
                      "ScatterND",
                      "GatherND",
                      "OneHot",
                      "RoiAlign",
                      "NonMaxSuppression",
                      "Unique",
                      "CumSum",
                      "Einsum",
                      "Range",
                      "ConstantOfShape",
                      "Transpose",
                      "ReduceSum",
                      "LSTM",
                      "GRU",
                      "RNN",
                      "DepthToSpace",
                      "MaxUnpool",
                      "TfIdfVectorizer",
                      "GridSample",
                      "STFT",
                      "DFT",
                      "Col2Im",
                      "SequenceAt",
                      "SplitToSequence",
                      "ReverseSequence",
                      "QLinearConv",
                      "ConvTranspose",
                      "BatchNormalization",
                      "LayerNormalization",
                      "Trilu",
                      "Mod",
                      "BitShift",
                      "Cast",
                      "Where",
                      "Compress",
                      "ArgMax",
                      "LRN"};

template <typename T, size_t N>
const T& pick(std::mt19937_64& rng, const T (&a)[N]) {
  return a[rng() % N];
}
int64_t some_int(std::mt19937_64& rng) {
  return rng() % 3 ? pick(rng, kInts) : static_cast<int64_t>(rng() % 9) - 4;
}

void mutate_tensor_proto(onnx::TensorProto& t, std::mt19937_64& rng) {
  switch (rng() % 9) {
    case 0:  // a dim
      if (t.dims_size())
        t.set_dims(static_cast<int>(rng() % t.dims_size()), some_int(rng));
      else
        t.add_dims(some_int(rng));
      break;
    case 1:  // one dim more or less
      if (t.dims_size() && rng() % 2)
        t.mutable_dims()->RemoveLast();
      else
        t.add_dims(static_cast<int64_t>(rng() % 5));
      break;
    case 2:  // the element type
      t.set_data_type(static_cast<int32_t>(rng() % 18));
      break;
    case 3: {  // raw data cut or grown
      std::string raw = t.raw_data();
      if (rng() % 2 && !raw.empty())
        raw.resize(rng() % raw.size());
      else
        raw.append(rng() % 17, static_cast<char>(rng()));
      t.set_raw_data(raw);
      break;
    }
    case 4:  // typed data instead of raw
      t.clear_raw_data();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i) {
        t.add_int64_data(some_int(rng));
        t.add_float_data(pick(rng, kFloats));
        t.add_int32_data(static_cast<int32_t>(some_int(rng)));
      }
      break;
    case 5:  // an element of the data
      if (t.raw_data().size() >= 8) {
        std::string raw = t.raw_data();
        int64_t v = some_int(rng);
        std::memcpy(&raw[(rng() % (raw.size() / 8)) * 8], &v, 8);
        t.set_raw_data(raw);
      } else if (t.int64_data_size()) {
        t.set_int64_data(static_cast<int>(rng() % t.int64_data_size()), some_int(rng));
      } else if (t.float_data_size()) {
        t.set_float_data(static_cast<int>(rng() % t.float_data_size()), pick(rng, kFloats));
      }
      break;
    case 6: {  // external data: names, offsets and lengths in and out of bounds
      static const char* kLocations[] = {
          "data.bin",       "../secret.bin", "/etc/passwd", "missing.bin",     "data.bin/..",
          "/proc/self/mem", "/dev/zero",     ".",           "sub/../data.bin", "w..bin"};
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      t.clear_external_data();
      auto* loc = t.add_external_data();
      loc->set_key("location");
      loc->set_value(pick(rng, kLocations));
      if (rng() % 2) {
        auto* off = t.add_external_data();
        off->set_key("offset");
        off->set_value(std::to_string(some_int(rng)));
      }
      if (rng() % 2) {
        auto* len = t.add_external_data();
        len->set_key("length");
        len->set_value(rng() % 4 ? std::to_string(some_int(rng)) : std::string("12x"));
      }
      break;
    }
    case 7:  // strings
      t.set_data_type(onnx::TensorProto::STRING);
      t.clear_raw_data();
      t.add_string_data(std::string(rng() % 5, 'a'));
      break;
    default:  // segment, doc: fields nothing should read
      t.mutable_segment()->set_begin(some_int(rng));
      t.mutable_segment()->set_end(some_int(rng));
      break;
  }
}

void mutate_attribute(onnx::AttributeProto& a, std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      a.set_i(some_int(rng));
      break;
    case 1:
      a.set_f(pick(rng, kFloats));
      break;
    case 2:
      if (a.ints_size())
        a.set_ints(static_cast<int>(rng() % a.ints_size()), some_int(rng));
      else
        a.add_ints(some_int(rng));
      break;
    case 3:
      if (a.ints_size() && rng() % 2)
        a.mutable_ints()->RemoveLast();
      else
        a.add_ints(some_int(rng));
      break;
    case 4:
      if (a.floats_size())
        a.set_floats(static_cast<int>(rng() % a.floats_size()), pick(rng, kFloats));
      else
        a.add_floats(pick(rng, kFloats));
      break;
    case 5:  // the declared type
      a.set_type(static_cast<onnx::AttributeProto::AttributeType>(rng() % 15));
      break;
    case 6:
      if (a.has_t())
        mutate_tensor_proto(*a.mutable_t(), rng);
      else
        a.set_s(rng() % 2 ? "" : "nesterov");
      break;
    default:
      a.set_s(std::string(1, static_cast<char>('A' + rng() % 26)));
      break;
  }
}

// Every graph of the model (subgraphs in attributes too).
void graphs_of(onnx::GraphProto* g, std::vector<onnx::GraphProto*>& out, int depth = 0) {
  out.push_back(g);
  if (depth > 4) return;
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) graphs_of(a.mutable_g(), out, depth + 1);
      for (auto& sg : *a.mutable_graphs()) graphs_of(&sg, out, depth + 1);
    }
}

// A value name the graph has (an input, an initializer, a node output), or a made-up one.
std::string some_name(const onnx::GraphProto& g, std::mt19937_64& rng) {
  std::vector<std::string> names;
  for (const auto& i : g.input()) names.push_back(i.name());
  for (const auto& i : g.initializer()) names.push_back(i.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.push_back(o);
  if (names.empty() || rng() % 8 == 0) return rng() % 2 ? "" : "nowhere";
  return names[rng() % names.size()];
}

void mutate_graph(onnx::ModelProto& m, std::mt19937_64& rng) {
  std::vector<onnx::GraphProto*> graphs;
  graphs_of(m.mutable_graph(), graphs);
  onnx::GraphProto& g = *graphs[rng() % graphs.size()];
  onnx::NodeProto* n =
      g.node_size() ? g.mutable_node(static_cast<int>(rng() % g.node_size())) : nullptr;
  switch (rng() % 12) {
    case 0:
    case 1:
    case 2:
      if (n && n->attribute_size())
        mutate_attribute(*n->mutable_attribute(static_cast<int>(rng() % n->attribute_size())), rng);
      else if (n) {
        static const char* kAttrs[] = {"axis",    "axes", "perm",      "kernel_shape",
                                       "strides", "pads", "dilations", "group",
                                       "to",      "mode", "k",         "blocksize"};
        auto* a = n->add_attribute();
        a->set_name(pick(rng, kAttrs));
        a->set_type(rng() % 2 ? onnx::AttributeProto::INT : onnx::AttributeProto::INTS);
        if (a->type() == onnx::AttributeProto::INT)
          a->set_i(some_int(rng));
        else
          a->add_ints(some_int(rng));
      }
      break;
    case 3:
    case 4:
      if (g.initializer_size())
        mutate_tensor_proto(*g.mutable_initializer(static_cast<int>(rng() % g.initializer_size())),
                            rng);
      break;
    case 5:  // rewire an input
      if (n && n->input_size())
        n->set_input(static_cast<int>(rng() % n->input_size()), some_name(g, rng));
      break;
    case 6:  // one input or output more or less
      if (!n) break;
      if (rng() % 2) {
        if (rng() % 2)
          n->add_input(some_name(g, rng));
        else if (n->input_size())
          n->mutable_input()->RemoveLast();
      } else {
        if (rng() % 2)
          n->add_output("extra" + std::to_string(rng() % 4));
        else if (n->output_size())
          n->mutable_output()->RemoveLast();
      }
      break;
    case 7:  // another op on the same wiring
      if (n) n->set_op_type(pick(rng, kOps));
      break;
    case 8: {  // a declared input dim or type
      if (!g.input_size()) break;
      auto* t = g.mutable_input(static_cast<int>(rng() % g.input_size()))
                    ->mutable_type()
                    ->mutable_tensor_type();
      if (rng() % 3 == 0) {
        t->set_elem_type(static_cast<int32_t>(1 + rng() % 16));
      } else {
        auto* d = t->mutable_shape()->add_dim();
        if (rng() % 2)
          d->set_dim_value(static_cast<int64_t>(rng() % 6));
        else
          d->set_dim_param("N");
      }
      break;
    }
    case 9:  // an opset
      if (m.opset_import_size())
        m.mutable_opset_import(static_cast<int>(rng() % m.opset_import_size()))
            ->set_version(rng() % 3 ? static_cast<int64_t>(1 + rng() % 19) : some_int(rng));
      break;
    case 10:  // a node copied (duplicate outputs) or removed
      if (n && rng() % 2)
        *g.add_node() = *n;
      else if (n)
        g.mutable_node()->DeleteSubrange(static_cast<int>(rng() % g.node_size()), 1);
      break;
    default:  // a graph output renamed or duplicated
      if (g.output_size()) {
        if (rng() % 2)
          *g.add_output() = g.output(static_cast<int>(rng() % g.output_size()));
        else
          g.mutable_output(static_cast<int>(rng() % g.output_size()))->set_name(some_name(g, rng));
      }
      break;
  }
}

size_t store(const google::protobuf::MessageLite& m, uint8_t* data, size_t max_size,
             size_t old_size) {
  std::string bytes;
  if (!m.SerializeToString(&bytes) || bytes.size() > max_size) return old_size;
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace

const std::string& model_dir() {
  static const std::string dir = [] {
    fs::path root = fs::temp_directory_path() / ("tonnx_fuzz_" + std::to_string(getpid()));
    fs::create_directories(root / "model");
    std::vector<float> floats(1024);
    for (size_t i = 0; i < floats.size(); ++i) floats[i] = static_cast<float>(i % 13) - 6.0f;
    std::ofstream(root / "model" / "data.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(floats.data()), floats.size() * sizeof(float));
    std::ofstream(root / "secret.bin") << "outside the model's folder";
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("tonnx_fuzz_" + std::to_string(getpid())), ec);
    });
    return (root / "model").string();
  }();
  return dir;
}

size_t mutate_model(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto m;
  if (rng() % 5 == 0 || !m.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, max_size);
  for (int i = static_cast<int>(1 + rng() % 3); i > 0; --i) mutate_graph(m, rng);
  return store(m, data, max_size, size);
}

size_t mutate_tensor(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  std::mt19937_64 rng(seed);
  onnx::TensorProto t;
  if (rng() % 5 == 0 || !t.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, max_size);
  mutate_tensor_proto(t, rng);
  return store(t, data, max_size, size);
}

bool make_inputs(const onnx::ModelProto& m, backend::RunValues& out) {
  std::set<std::string> inits;
  for (const auto& i : m.graph().initializer()) inits.insert(i.name());
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    const auto& type = in.type();
    if (type.has_sequence_type()) {
      out.push_back(backend::Sequence{});
      continue;
    }
    if (type.has_optional_type()) {
      out.push_back(backend::RunValue::none());
      continue;
    }
    if (!type.has_tensor_type()) return false;
    std::vector<int64_t> shape;
    int64_t numel = 1;
    for (const auto& d : type.tensor_type().shape().dim()) {
      int64_t s = d.has_dim_value() ? std::min<int64_t>(std::max<int64_t>(d.dim_value(), 0), 4) : 2;
      shape.push_back(s);
      numel *= s;
      if (shape.size() > 8 || numel > 4096) return false;
    }
    auto dtype = static_cast<ir::DType>(type.tensor_type().elem_type());
    if (dtype == ir::DType::String) {
      out.push_back(backend::StringTensor{shape, std::vector<std::string>(numel, "ab")});
      continue;
    }
    at::ScalarType st;
    try {
      st = ir::scalar_type_from_dtype(dtype);
    } catch (const std::exception&) {
      return false;
    }
    at::Tensor t = (at::arange(numel, at::kDouble).remainder(7) - 3).mul(0.5);
    if (at::isFloatingType(st) && numel > 2) {
      t[0] = std::numeric_limits<double>::quiet_NaN();
      t[1] = std::numeric_limits<double>::infinity();
    }
    out.push_back(t.to(st).reshape(shape));
  }
  return true;
}

}  // namespace tonnx::fuzz
