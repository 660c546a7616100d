// tonnx run: a model on tonnx's CPU backend, with test data, named input files or random
// inputs; outputs printed or written, repeated runs timed and profiled.
#include <onnx/onnx-data.pb.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/backend.h"
#include "tonnx/compare.h"
#include "tonnx/models.h"
#include "tonnx/proto.h"

namespace tonnx::cli {
namespace fs = std::filesystem;

namespace {

// A run's value for the terminal: type and first values; a sequence's first items.
std::string shown(const backend::RunValue& v) {
  if (v.is_sequence()) {
    const auto& items = v.sequence().items;
    std::string s = "sequence of " + std::to_string(items.size()) + " [";
    for (size_t i = 0; i < items.size() && i < 8; ++i) s += (i ? ", " : "") + shown(items[i]);
    return s + (items.size() > 8 ? ", ...]" : "]");
  }
  if (v.kind() != backend::RunValue::Kind::Tensor || !v.tensor().defined()) return v.describe();
  return ir::TensorType::from_tensor(v.tensor()).str() + " " + ir::values_str(v.tensor());
}

// An output as ONNX test data: a TensorProto, or a SequenceProto of tensors.
void save_value_proto(const backend::RunValue& v, const std::string& name,
                      const std::string& path) {
  if (v.kind() == backend::RunValue::Kind::Tensor) {
    save_tensor_proto(tensor_to_proto(v.tensor(), name), path);
    return;
  }
  if (!v.is_sequence())
    throw std::runtime_error("output '" + name + "' is " + v.describe() +
                             "; --output-dir writes tensors and sequences of tensors");
  onnx::SequenceProto seq;
  seq.set_name(name);
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  for (const backend::RunValue& e : v.sequence().items) {
    if (e.kind() != backend::RunValue::Kind::Tensor)
      throw std::runtime_error("output '" + name + "' holds " + e.describe() +
                               "; --output-dir writes sequences of tensors");
    *seq.add_tensor_values() = tensor_to_proto(e.tensor(), "");
  }
  std::string bytes;
  seq.SerializeToString(&bytes);
  write_file_atomic(path, bytes);
}

// Random values for the model's inputs, from their declared types: floats from a normal
// distribution, integers in [0, 10) (safe as indices into most tables), bools half true.
// Symbolic dims take their sizes from `dims` (--dim NAME=SIZE).
std::map<std::string, at::Tensor> random_inputs(const std::string& path,
                                                const std::map<std::string, int64_t>& dims,
                                                uint64_t seed,
                                                const std::map<std::string, at::Tensor>& given) {
  onnx::ModelProto m = read_model_proto(path);
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::map<std::string, at::Tensor> out;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name()) || given.count(in.name())) continue;
    const std::string what = "input '" + in.name() + "'";
    if (!in.type().has_tensor_type())
      throw UsageError("--random-inputs: " + what +
                       " is not a tensor (a sequence or an optional); give it with --input");
    const auto& tt = in.type().tensor_type();
    ir::DType dt = static_cast<ir::DType>(tt.elem_type());
    at::ScalarType st;
    try {
      st = ir::scalar_type_from_dtype(dt);
    } catch (const std::exception&) {
      throw UsageError("--random-inputs: " + what + " has element type " +
                       std::to_string(tt.elem_type()) + ", which has no random values here");
    }
    if (!tt.has_shape())
      throw UsageError("--random-inputs: " + what +
                       " has no declared shape; give it with --input NAME=FILE.pb");
    std::vector<int64_t> shape;
    for (int k = 0; k < tt.shape().dim_size(); ++k) {
      const auto& d = tt.shape().dim(k);
      if (d.has_dim_value() && d.dim_value() < 0)
        throw UsageError("--random-inputs: axis " + std::to_string(k) + " of " + what +
                         " has the invalid size " + std::to_string(d.dim_value()));
      if (d.has_dim_value()) {
        shape.push_back(d.dim_value());
        continue;
      }
      auto it = dims.find(d.dim_param());
      if (d.has_dim_param() && it != dims.end()) {
        shape.push_back(it->second);
        continue;
      }
      throw UsageError("--random-inputs: axis " + std::to_string(k) + " of " + what +
                       (d.has_dim_param()
                            ? " is the symbolic dim '" + d.dim_param() +
                                  "': give its size with --dim " + d.dim_param() + "=N"
                            : " has no size; give the input with --input"));
    }
    // A mistyped --dim must not ask for terabytes: at most 2^31 elements per input.
    auto n = ir::product_of(shape);
    if (!n || *n > (int64_t{1} << 31))
      throw UsageError("--random-inputs: " + what + " would have shape " +
                       models::shape_string(shape) +
                       ", over 2^31 elements; give smaller sizes with --dim");
    at::TensorOptions o = at::TensorOptions().dtype(st);
    at::Tensor t;
    if (st == at::kBool)
      t = at::rand(shape, gen, at::kFloat) < 0.5;
    else if (at::isFloatingType(st))
      t = at::randn(shape, gen, at::kFloat).to(st);
    else
      t = at::randint(0, 10, shape, gen, o);
    out[in.name()] = t;
  }
  return out;
}

const char kRunHelp[] = R"(usage: tonnx run M.onnx [options]

Runs a model on tonnx's CPU backend.

options:
  --test-data DIR        run each DIR/test_data_set_N and compare with its output_K.pb
  --input NAME=FILE.pb   an input as a TensorProto file (repeatable)
  --random-inputs        random values for the inputs not given with --input, from their
                         declared types (floats normal, integers in [0, 10), bools)
  --seed N               the random inputs' seed (default 0)
  --dim NAME=SIZE        the size of a symbolic dim for --random-inputs (repeatable)
  --output-dir DIR       write the outputs as output_K.pb (TensorProto; a sequence as
                         SequenceProto); without --test-data the outputs are printed
  --threads N            intra-op threads
  --repeat N             run N times after a warm-up and print median_ms
  --rtol X --atol Y      tolerances for --test-data (default 1e-3, 1e-5; integer outputs
                         are exact unless atol allows whole steps: --atol 1)
  --profile              time every node; print the time per op type, per op type and
                         output plane, and the slowest nodes (a convolution with the
                         path it took and why: backend/kernels/conv/choose.h)
                         (with --repeat: over the timed runs, not the warm-up)
  --fold-batchnorm       fold BatchNormalization into convolution weights (faster; rounds
                         differently from LibTorch)
  --onednn-conv          run Conv on oneDNN in channels-last layout (faster on conv nets;
                         rounds differently from LibTorch)
  --exact-gemm           MatMul/Gemm by a constant on LibTorch's BLAS, bit for bit as
                         LibTorch computes them (default: oneDNN, about 2x faster here,
                         results within ~1e-6 relative)
  --exact                LibTorch's kernels wherever the default takes a faster one that
                         rounds differently (--exact-gemm, a GEMM for a single row, ATen's
                         native path for small batch-1 convolutions, --no-winograd), as
                         tonnx verify runs
  --no-winograd          3x3 convolutions on oneDNN's direct algorithm, not Winograd's
                         (off with --exact)
  --plain-layout         every activation in NCHW (default: oneDNN's blocked layout kept
                         between the convolutions of a chain; the same results)
  --no-optimize          no constant folding or fusions at prepare time
  --timeout SECONDS      stop a run that takes longer (a Loop with a huge trip count)
)";

// What `tonnx run`'s options ask, checked before the model is prepared.
struct RunSettings {
  backend::PrepareOptions prepare;
  backend::RunOptions run;
  Tolerance tol;
  std::optional<int64_t> repeat;
  std::map<std::string, int64_t> dims;  // --dim NAME=SIZE
  uint64_t seed = 0;
};

RunSettings run_settings(const Args& a) {
  RunSettings s;
  backend::PrepareOptions& popt = s.prepare;
  if (auto n = a.integer("--threads", 1, 4096, "use 1 to 4096"))
    popt.num_threads = static_cast<int>(*n);
  s.repeat = a.integer("--repeat", 1, INT64_MAX, "give a count >= 1");
  if (auto dir = a.get("--output-dir"))
    if (fs::exists(*dir) && !fs::is_directory(*dir))
      throw UsageError("--output-dir '" + *dir + "' is a file; it must be a folder (or not exist)");
  popt.profile = a.has("--profile");
  popt.fold_batchnorm = a.has("--fold-batchnorm");
  popt.onednn_conv = a.has("--onednn-conv");
  popt.onednn_gemm = !a.has("--exact-gemm");
  popt.exact = a.has("--exact");
  popt.winograd = !a.has("--no-winograd");
  popt.blocked_layout = !a.has("--plain-layout");
  popt.optimize = !a.has("--no-optimize");
  const double inf = std::numeric_limits<double>::infinity();
  s.tol.rtol = a.number("--rtol", 0, inf, false, "give a number >= 0").value_or(s.tol.rtol);
  s.tol.atol = a.number("--atol", 0, inf, false, "give a number >= 0").value_or(s.tol.atol);
  if (a.has("--test-data") && a.has("--random-inputs"))
    throw UsageError("--test-data and --random-inputs exclude each other");
  if ((a.has("--seed") || a.has("--dim")) && !a.has("--random-inputs"))
    throw UsageError("--seed and --dim are for --random-inputs");
  for (const auto& kv : a.all("--dim")) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--dim '" + kv + "' is not NAME=SIZE");
    int64_t size = parse_int(kv.substr(eq + 1), "--dim " + kv.substr(0, eq));
    if (size < 0) throw UsageError("--dim " + kv + " is out of range: give a size >= 0");
    s.dims[kv.substr(0, eq)] = size;
  }
  s.seed = static_cast<uint64_t>(a.integer("--seed").value_or(0));
  s.run.timeout_seconds =
      a.number("--timeout", 0, inf, true, "give seconds > 0").value_or(s.run.timeout_seconds);
  return s;
}

// The values a run read and wrote: the last set's, for --output-dir and --repeat.
struct LastRun {
  std::vector<at::Tensor> inputs;
  backend::RunValues outputs;
};

// --test-data DIR: every set run and compared; counts those that passed and failed.
void run_test_data(const backend::Rep& rep, const std::string& dir, const RunSettings& s,
                   LastRun& last, int& passed, int& failed) {
  auto sets = read_test_data(dir);
  for (size_t si = 0; si < sets.size(); ++si) {
    const auto& set = sets[si];
    auto outs = rep.run(set_inputs(set, rep.input_names(), si), s.run);
    bool ok = outs.size() == set.outputs.size();
    std::cout << "test_data_set_" << si << ":";
    for (size_t k = 0; k < std::min(outs.size(), set.outputs.size()); ++k) {
      Comparison d = compare(outs[k], set.outputs[k], s.tol);
      ok = ok && d.ok;
      std::cout << " " << rep.output_names()[k] << " max_abs=" << d.max_abs
                << " max_rel=" << d.max_rel;
      if (!d.ok) std::cout << " (" << d.mismatch << ")";
    }
    std::cout << (ok ? " pass" : " FAIL") << "\n";
    ok ? ++passed : ++failed;
    last.inputs = set.inputs;
    last.outputs.assign(outs.begin(), outs.end());
  }
}

// The inputs given with --input, and random ones for the rest with --random-inputs.
std::map<std::string, at::Tensor> given_inputs(const Args& a, const RunSettings& s) {
  std::map<std::string, at::Tensor> named;
  for (const auto& kv : a.all("--input")) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw UsageError("--input '" + kv + "' is not NAME=FILE.pb");
    // A tensor file's external data lies in its own folder.
    std::string file = kv.substr(eq + 1);
    named[kv.substr(0, eq)] = tensor_from_proto(read_tensor_proto(file), folder_of(file));
  }
  if (a.has("--random-inputs")) {
    for (auto& [name, t] : random_inputs(a.positional[0], s.dims, s.seed, named)) {
      std::cout << name << ": " << shown(t) << " (random)\n";
      named[name] = t;
    }
  }
  return named;
}

// One run on the given inputs, its outputs printed.
void run_given(const backend::Rep& rep, const std::map<std::string, at::Tensor>& named,
               const RunSettings& s, LastRun& last) {
  last.inputs.clear();
  for (const auto& [name, t] : named)
    if (std::find(rep.input_names().begin(), rep.input_names().end(), name) ==
        rep.input_names().end())
      rep.run(named);  // the by-name API's error names the unknown input and lists them all
  for (const auto& n : rep.input_names()) {
    if (!named.count(n))
      throw std::invalid_argument(
          "input '" + n + "' is not given: give it with --input " + n +
          "=FILE.pb, every input with --test-data DIR, or let --random-inputs "
          "make them from the model's declared types");
    last.inputs.push_back(named.at(n));
  }
  last.outputs = rep.run_values(backend::RunValues(last.inputs.begin(), last.inputs.end()), s.run);
  for (size_t k = 0; k < last.outputs.size(); ++k)
    std::cout << rep.output_names()[k] << ": " << shown(last.outputs[k]) << "\n";
}

// --repeat N: N timed runs after a warm-up; prints the median.
void time_runs(const backend::Rep& rep, const std::vector<at::Tensor>& inputs, int64_t n,
               const backend::RunOptions& ropt) {
  rep.run(inputs, ropt);  // warm-up
  rep.reset_profile();    // the profile times the timed runs only
  std::vector<double> ms;
  for (int64_t i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    rep.run(inputs, ropt);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::cout << "median_ms=" << ms[ms.size() / 2] << "\n";
}

int run_run(const Args& a) {
  if (a.positional.size() != 1) throw UsageError("expected one .onnx file");
  RunSettings s = run_settings(a);
  backend::Rep rep = backend::prepare(a.positional[0], "CPU", s.prepare);
  std::cout << "prepare_ms=" << rep.prepare_seconds() * 1000 << "\n";
  torch::NoGradGuard no_grad;
  LastRun last;
  int passed = 0, failed = 0;
  if (auto dir = a.get("--test-data"))
    run_test_data(rep, *dir, s, last, passed, failed);
  else
    run_given(rep, given_inputs(a, s), s, last);
  if (auto dir = a.get("--output-dir")) {
    fs::create_directories(*dir);
    for (size_t k = 0; k < last.outputs.size(); ++k)
      save_value_proto(last.outputs[k], rep.output_names()[k],
                       (fs::path(*dir) / ("output_" + std::to_string(k) + ".pb")).string());
  }
  if (s.repeat) time_runs(rep, last.inputs, *s.repeat, s.run);
  if (s.prepare.profile) std::cout << backend::profile_report(rep.profile());
  if (a.get("--test-data")) std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

}  // namespace

const Command kRunCommand{
    "run", kRunHelp,
    Spec{{"--test-data", "--output-dir", "--threads", "--repeat", "--rtol", "--atol", "--timeout",
          "--seed"},
         {"--profile", "--fold-batchnorm", "--onednn-conv", "--exact-gemm", "--exact",
          "--no-winograd", "--no-optimize", "--random-inputs", "--plain-layout"},
         {"--input", "--dim"},
         {}},
    run_run};

}  // namespace tonnx::cli
