// Writing external data: one aligned file beside the model, atomic with the model, read by
// the checker, tonnx's backend and ONNX Runtime; tonnx convert; a model over 2 GB.
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/check.h"
#include "tonnx/models.h"
#include "tonnx/proto.h"

namespace tonnx::test {
namespace {
namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A small MLP whose weights are of several sizes (2 KB to 32 KB, biases under 1 KB).
Traceable mlp(uint64_t seed) {
  torch::manual_seed(static_cast<int64_t>(seed));
  torch::nn::Sequential s(torch::nn::Linear(64, 128), torch::nn::ReLU(),
                          torch::nn::Linear(128, 10));
  s->eval();
  return make_traceable(s);
}

struct ExternalTensor {
  std::string location;
  int64_t offset = -1, length = -1;
};
std::map<std::string, ExternalTensor> externals(const std::string& path) {
  onnx::ModelProto m = read_model_proto(path);
  std::map<std::string, ExternalTensor> out;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    ExternalTensor e;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") e.location = kv.value();
      if (kv.key() == "offset") e.offset = std::stoll(kv.value());
      if (kv.key() == "length") e.length = std::stoll(kv.value());
    }
    out[t.name()] = e;
  }
  return out;
}

TEST(ExternalDataWrite, ThresholdForcedLowEveryRuntimeAgrees) {
  torch::Tensor x = torch::randn({3, 64});
  ExportOptions opt;
  opt.external_data = ExternalData::ON;
  opt.external_data_threshold = 0;
  std::string path = expect_export_matches(mlp(1), {x}, opt, "external_all");
  auto ext = externals(path);
  ASSERT_EQ(ext.size(), 4u);  // two weights, two biases
  for (const auto& [name, e] : ext) {
    EXPECT_EQ(e.location, "model.onnx.data") << name;
    EXPECT_EQ(e.offset % 4096, 0) << name << " at " << e.offset;
    EXPECT_GT(e.length, 0) << name;
  }
  check_model_file(path);

  // The default threshold (1 KB): the 40-byte bias of the last layer stays inline.
  opt.external_data_threshold = 1024;
  path = expect_export_matches(mlp(1), {x}, opt, "external_threshold");
  ext = externals(path);
  EXPECT_EQ(ext.size(), 2u);
  onnx::ModelProto m = read_model_proto(path);
  EXPECT_EQ(m.graph().initializer_size(), 4);
}

TEST(ExternalDataWrite, SummaryNamesTheFileAndAutoStaysInline) {
  torch::Tensor x = torch::randn({2, 64});
  std::string dir = temp_dir("external_summary");
  ExportOptions opt;
  opt.external_data = ExternalData::ON;
  opt.external_data_location = "weights.bin";
  ExportSummary s = export_traceable(mlp(2), {x}, dir + "/m.onnx", opt);
  EXPECT_EQ(s.external_data_path, dir + "/weights.bin");
  EXPECT_EQ(s.external_data_bytes, static_cast<int64_t>(fs::file_size(dir + "/weights.bin")));
  EXPECT_EQ(s.file_bytes, static_cast<int64_t>(fs::file_size(dir + "/m.onnx")));
  EXPECT_NE(s.str().find("external data " + dir + "/weights.bin"), std::string::npos) << s.str();
  EXPECT_EQ(files_in(dir), (std::set<std::string>{"m.onnx", "weights.bin"}));

  // AUTO (the default) below 2 GB: everything inline, no data file.
  std::string dir2 = temp_dir("external_auto");
  s = export_traceable(mlp(2), {x}, dir2 + "/m.onnx", {});
  EXPECT_TRUE(s.external_data_path.empty());
  EXPECT_TRUE(externals(dir2 + "/m.onnx").empty());
  EXPECT_EQ(files_in(dir2), (std::set<std::string>{"m.onnx"}));
}

TEST(ExternalDataWrite, BadOptionsFailBeforeTracing) {
  torch::Tensor x = torch::randn({2, 64});
  std::string dir = temp_dir("external_bad");
  bool traced = false;
  Traceable t = mlp(3);
  auto forward = t.forward;
  t.forward = [&](const std::vector<torch::Tensor>& in) {
    traced = true;
    return forward(in);
  };
  ExportOptions opt;
  opt.external_data = ExternalData::ON;
  for (auto [loc, why] :
       std::vector<std::pair<std::string, std::string>>{{"../up.data", "leaves the model's folder"},
                                                        {"/tmp/abs.data", "is absolute"},
                                                        {"m.onnx", "is the model file itself"},
                                                        {"sub/..", "leaves the model's folder"}}) {
    opt.external_data_location = loc;
    expect_error([&] { export_traceable(t, {x}, dir + "/m.onnx", opt); }, why);
  }
  opt.external_data_location.clear();
  opt.external_data_threshold = -1;
  expect_error([&] { export_traceable(t, {x}, dir + "/m.onnx", opt); }, "must be a byte count");
  EXPECT_FALSE(traced);
  EXPECT_TRUE(files_in(dir).empty());
  // A data file name that is a folder: the export fails and writes nothing.
  fs::create_directory(dir + "/m.onnx.data");
  opt.external_data_threshold = 0;
  expect_error([&] { export_traceable(t, {x}, dir + "/m.onnx", opt); }, "it is a folder");
  EXPECT_EQ(files_in(dir), (std::set<std::string>{"m.onnx.data"}));
}

// A tensor held by two initializers (tied weights) is written once; both read it.
TEST(ExternalDataWrite, SharedTensorsAreWrittenOnce) {
  ir::Model m;
  m.opsets.push_back({"", 17});
  at::Tensor w = torch::randn({1024});
  ir::Value* a = m.graph->add_initializer("a", w);
  ir::Value* b = m.graph->add_initializer("b", w);
  ir::Node* add = m.graph->add_node("Add", {a, b});
  add->output(0)->set_name("y");
  add->output(0)->set_type(ir::TensorType::from_tensor(w));
  m.graph->add_output(add->output(0));
  std::string dir = temp_dir("external_shared");
  onnx::ModelProto skeleton = model_to_proto(m, false);
  ExternalDataOptions ext;
  ext.location = "w.data";
  SavedModel s = save_model(m, skeleton, dir + "/m.onnx", ext);
  EXPECT_EQ(s.data_bytes, 4096u);
  auto e = externals(dir + "/m.onnx");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e["a"].offset, e["b"].offset);
  auto rep = backend::prepare(dir + "/m.onnx");
  expect_close(rep.run(std::vector<at::Tensor>{})[0], w * 2, {}, "shared");
}

// A write that fails (the file size limit: "disk full") leaves the previous model and data
// file byte for byte, and nothing else: for a failure in the data file and in the model.
TEST(ExternalDataWrite, FailedWritesLeaveThePreviousPair) {
  torch::Tensor x = torch::randn({2, 64});
  std::string dir = temp_dir("external_fail");
  std::string path = dir + "/m.onnx";
  ExportOptions opt;
  opt.external_data = ExternalData::ON;
  opt.external_data_threshold = 16 * 1024;  // the 32 KB weight out, the rest (about 6 KB) in
  export_traceable(mlp(4), {x}, path, opt);
  const std::string model0 = slurp(path), data0 = slurp(path + ".data");
  ASSERT_GT(data0.size(), 32000u);
  ASSERT_LT(model0.size(), 16000u);

  struct rlimit saved {};
  getrlimit(RLIMIT_FSIZE, &saved);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  auto limit = [&](rlim_t bytes) {
    struct rlimit r = saved;
    r.rlim_cur = bytes;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &r), 0);
  };
  // The data file fails (over 20 KB), then the model (the data fits in 64 KB, a model with
  // every weight inline does not fit in 20 KB... so the limit sits between the two files).
  limit(20 * 1024);
  std::string e1, e2;
  try {
    export_traceable(mlp(5), {x}, path, opt);
  } catch (const std::exception& e) {
    e1 = e.what();
  }
  opt.external_data_threshold = 1 << 20;  // nothing qualifies: all inline, 40 KB of model
  try {
    export_traceable(mlp(5), {x}, path, opt);
  } catch (const std::exception& e) {
    e2 = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(e1.find("m.onnx.data' failed: File too large"), std::string::npos) << e1;
  EXPECT_NE(e2.find("m.onnx' failed: File too large"), std::string::npos) << e2;
  EXPECT_EQ(slurp(path), model0);
  EXPECT_EQ(slurp(path + ".data"), data0);
  EXPECT_EQ(files_in(dir), (std::set<std::string>{"m.onnx", "m.onnx.data"}));
}

// Data files of 64 MB and more are written past the page cache (O_DIRECT, in whole blocks, the
// file cut to its length at the end): the bytes are right, and a failure part way leaves the
// previous pair too.
TEST(ExternalDataWrite, LargeDataFilesWrittenDirectly) {
  torch::manual_seed(0);
  torch::nn::Linear lin(4096, 4100);  // 67 MB of weights: a direct write, not block-aligned
  lin->eval();
  torch::Tensor x = torch::randn({2, 4096});
  std::string dir = temp_dir("external_direct");
  ExportOptions opt;
  opt.external_data = ExternalData::ON;
  ExportSummary s = export_traceable(make_traceable(lin), {x}, dir + "/m.onnx", opt);
  auto ext = externals(dir + "/m.onnx");
  ASSERT_EQ(ext.size(), 2u);
  const int64_t end = std::max(ext["weight"].offset + ext["weight"].length,
                               ext["bias"].offset + ext["bias"].length);
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(dir + "/m.onnx.data")), end);
  auto rep = backend::prepare(dir + "/m.onnx");
  expect_close(rep.run({x})[0], s.eager_outputs[0], {}, "direct");
  const std::string model0 = slurp(dir + "/m.onnx"), data0 = slurp(dir + "/m.onnx.data");

  struct rlimit saved {};
  getrlimit(RLIMIT_FSIZE, &saved);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit r = saved;
  r.rlim_cur = 32 << 20;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &r), 0);
  std::string e;
  try {
    torch::NoGradGuard ng;
    lin->weight.mul_(2);
    export_traceable(make_traceable(lin), {x}, dir + "/m.onnx", opt);
  } catch (const std::exception& ex) {
    e = ex.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(e.find("m.onnx.data' failed: File too large"), std::string::npos) << e;
  EXPECT_EQ(slurp(dir + "/m.onnx"), model0);
  EXPECT_EQ(slurp(dir + "/m.onnx.data"), data0);
  EXPECT_EQ(files_in(dir), (std::set<std::string>{"m.onnx", "m.onnx.data"}));
}

// tonnx convert's library form: out to external data, back inline, in place; the tensors stay
// the same bytes and every runtime agrees.
TEST(ExternalDataWrite, ConvertRoundTrips) {
  torch::Tensor x = torch::randn({2, 64});
  std::string dir = temp_dir("external_convert");
  ExportSummary s = export_traceable(mlp(6), {x}, dir + "/a.onnx", {});
  ExternalDataOptions ext;
  ext.location = "b.bin";
  ext.threshold = 0;
  SavedModel c = convert_model_file(dir + "/a.onnx", dir + "/b.onnx", ext);
  EXPECT_EQ(c.data_path, dir + "/b.bin");
  EXPECT_EQ(externals(dir + "/b.onnx").size(), 4u);
  check_model_file(dir + "/b.onnx");
  expect_outputs_match(dir + "/b.onnx", {x}, s.eager_outputs, "convert_external");
  // Back inline, into another folder: the same model as the original export's.
  fs::create_directory(dir + "/sub");
  convert_model_file(dir + "/b.onnx", dir + "/sub/c.onnx", {});
  EXPECT_TRUE(externals(dir + "/sub/c.onnx").empty());
  onnx::ModelProto orig = read_model_proto(dir + "/a.onnx");
  onnx::ModelProto back = read_model_proto(dir + "/sub/c.onnx");
  ASSERT_EQ(orig.graph().initializer_size(), back.graph().initializer_size());
  for (int i = 0; i < orig.graph().initializer_size(); ++i)
    EXPECT_EQ(orig.graph().initializer(i).raw_data(), back.graph().initializer(i).raw_data());
  // In place, with the data file it reads being the one it replaces.
  ext.threshold = 1024;
  convert_model_file(dir + "/b.onnx", dir + "/b.onnx", ext);
  EXPECT_EQ(externals(dir + "/b.onnx").size(), 2u);
  expect_outputs_match(dir + "/b.onnx", {x}, s.eager_outputs, "convert_in_place");
  EXPECT_EQ(files_in(dir), (std::set<std::string>{"a.onnx", "b.onnx", "b.bin", "data", "sub"}));
  // The input's external data is read with the backend's rules.
  onnx::ModelProto evil = read_model_proto(dir + "/b.onnx");
  for (auto& t : *evil.mutable_graph()->mutable_initializer())
    for (auto& kv : *t.mutable_external_data())
      if (kv.key() == "location") kv.set_value("../b.bin");
  save_model_proto(evil, dir + "/sub/evil.onnx");
  expect_error([&] { convert_model_file(dir + "/sub/evil.onnx", dir + "/sub/d.onnx", {}); },
               "leaves the model's folder");
  EXPECT_FALSE(fs::exists(dir + "/sub/d.onnx"));
}

int64_t current_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

int64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

// Over protobuf's 2 GB: AUTO switches to external data, the export's peak memory stays within
// 300 MB of the weights (which exist once, in LibTorch), and both runtimes run the result.
TEST(ExternalDataWrite, ModelOver2GBExportsAndRuns) {
  const int64_t rows = 600000, dim = 1024;  // 2.46 GB of float32
  const int64_t bytes = rows * dim * 4;
  std::string dir = temp_dir("external_2gb");
  struct statvfs fsinfo {};
  ASSERT_EQ(statvfs(dir.c_str(), &fsinfo), 0);
  const int64_t free_disk = static_cast<int64_t>(fsinfo.f_bavail) * fsinfo.f_frsize;
  if (free_disk < bytes + (1LL << 30) || available_memory_bytes() < 3 * bytes)
    GTEST_SKIP() << "needs " << (bytes + (1LL << 30)) / (1 << 20) << " MB of disk (has "
                 << free_disk / (1 << 20) << ") and " << 3 * bytes / (1 << 20)
                 << " MB of memory (has " << available_memory_bytes() / (1 << 20) << ")";
  torch::nn::Embedding emb(rows, dim);
  {
    torch::NoGradGuard ng;
    // Distinct rows without a temporary of the table's size: row r is base + r / rows.
    at::Tensor base = torch::randn({1, dim});
    at::Tensor step = torch::arange(rows, torch::kFloat).unsqueeze(1) / rows;
    at::add_out(emb->weight, base, step);
  }
  emb->eval();
  torch::Tensor ids = torch::tensor({0L, 1L, 299999L, 599999L, 12345L}).reshape({1, 5});
  std::string path = dir + "/big.onnx";
  const int64_t rss_before = current_rss_bytes();
  ExportSummary s = export_model(emb, {ids}, path);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const int64_t peak_growth = ru.ru_maxrss * 1024 - rss_before;
  EXPECT_LT(peak_growth, 300LL << 20) << "peak RSS grew by " << peak_growth / (1 << 20) << " MB";
  EXPECT_EQ(s.external_data_path, path + ".data");
  EXPECT_GE(s.external_data_bytes, bytes);
  EXPECT_LT(s.file_bytes, 1 << 20);
  check_model_file(path);
  expect_outputs_match(path, {ids}, s.eager_outputs, "over_2gb");
  // OFF: the same model is refused with the way out, and nothing is written.
  ExportOptions off;
  off.external_data = ExternalData::OFF;
  expect_error([&] { export_model(emb, {ids}, dir + "/inline.onnx", off); },
               "over protobuf's 2 GB limit; write its weights as external data");
  EXPECT_FALSE(fs::exists(dir + "/inline.onnx"));
  fs::remove_all(dir);
}

// Initializers equal byte for byte become one (layers cloned from one, as torch.onnx's
// deduplication by value); -0.0 and 0.0 stay apart; the results are unchanged.
TEST(ExternalDataWrite, EqualInitializersAreMergedBitwise) {
  torch::manual_seed(0);
  torch::nn::Linear a(8, 8), b(8, 8), c(8, 8);
  {
    torch::NoGradGuard ng;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
    c->weight.copy_(a->weight);
    c->bias.zero_();
    a->bias.zero_();
    a->bias[3].fill_(-0.0);  // a's bias differs from c's only in the sign of a zero
  }
  ASSERT_TRUE(std::signbit(a->bias[3].item<float>()));
  torch::nn::Sequential s(a, b, c);
  s->eval();
  torch::Tensor x = torch::randn({2, 8});
  std::string path = expect_export_matches(make_traceable(s), {x}, {}, "dedupe");
  onnx::ModelProto m = read_model_proto(path);
  // a.weight = b.weight = c.weight, a.bias (with -0.0), b.bias, c.bias (zeros): four tensors.
  EXPECT_EQ(m.graph().initializer_size(), 4);
}

// Weights transposed for MatMul are views of the parameters during the export (no copy), and
// export_to_model hands out contiguous tensors.
TEST(ExternalDataWrite, TransposedWeightsAreViewsUntilWritten) {
  torch::manual_seed(0);
  torch::nn::Linear lin(16, 32);
  lin->eval();
  torch::Tensor x = torch::randn({2, 3, 16});
  expect_export_matches(make_traceable(lin), {x}, {}, "transposed_view");
  ir::Model m = export_to_model(make_traceable(lin), {x});
  ASSERT_FALSE(m.graph->initializers().empty());
  for (const auto& [v, t] : m.graph->initializers()) EXPECT_TRUE(t.is_contiguous()) << v->name();
  auto rep = backend::prepare(std::move(m));
  expect_close(rep.run({x})[0], lin(x), {}, "export_to_model");
}

TEST(ExternalDataWrite, ZooParameterCountsAreRight) {
  const auto& e = models::find_model("transformer_encoder_small");
  EXPECT_EQ(e.parameters, models::parameter_count(e.make(0)));
}

// Issue 58: external data is read from the model's folder, never from the working directory.
// A canary in the working directory and none beside the model: every C++ entry point refuses
// it and says so, and the printer names the location without reading it.
TEST(ExternalDataRead, NeverFromTheWorkingDirectory) {
  ScratchDir tmp("canary");
  const fs::path cwd = fs::path(tmp.path()) / "cwd", model_dir = fs::path(tmp.path()) / "model";
  fs::create_directories(cwd);
  fs::create_directories(model_dir);
  const float canary = 12345.5f;
  std::ofstream(cwd / "cwd_canary.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(&canary), sizeof canary);
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_op_type("Constant");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(1);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("cwd_canary.bin");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  const std::string path = (model_dir / "m.onnx").string();
  save_model_proto(m, path);

  const fs::path before = fs::current_path();
  fs::current_path(cwd);
  auto refused = [&](const std::function<void()>& f, const std::string& expect) {
    std::string msg = "no error";
    try {
      f();
    } catch (const std::exception& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("'cwd_canary.bin'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(expect), std::string::npos) << msg;
  };
  const std::string in_folder = "cannot be opened in the model's folder";
  const std::string no_folder = "no model folder was given";
  refused([&] { tensor_from_proto(*t); }, no_folder);
  refused([&] { model_from_proto(m); }, no_folder);
  refused([&] { backend::prepare(m, "CPU"); }, no_folder);
  refused([&] { backend::prepare(path, "CPU"); }, in_folder);
  refused([&] { load_model(path); }, in_folder);
  refused([&] { check_model_file(path); }, in_folder);
  refused([&] { convert_model_file(path, (cwd / "out.onnx").string(), {}); }, in_folder);
  EXPECT_FALSE(fs::exists(cwd / "out.onnx"));
  std::string printed = printable_graph(m);
  EXPECT_EQ(printed.find("12345.5"), std::string::npos) << printed;
  EXPECT_NE(printed.find("in external data 'cwd_canary.bin'"), std::string::npos) << printed;
  printed = printable_graph(m, folder_of(path));
  EXPECT_EQ(printed.find("12345.5"), std::string::npos) << printed;
  EXPECT_NE(printed.find(in_folder), std::string::npos) << printed;
  PictureOptions po;
  po.base_dir = folder_of(path);
  EXPECT_EQ(graph_dot(m, po).find("12345.5"), std::string::npos);
  // The same model with the file in its own folder reads it.
  fs::copy_file(cwd / "cwd_canary.bin", model_dir / "cwd_canary.bin");
  EXPECT_NE(printable_graph(m, folder_of(path)).find("12345.5"), std::string::npos);
  fs::current_path(before);
}

}  // namespace
}  // namespace tonnx::test
