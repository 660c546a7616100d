// tonnx export: a zoo model traced with LibTorch (here) or a TorchScript file
// (export_script.cpp) to ONNX, with the options both forms share.
#include <malloc.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/export_script.h"
#include "cli/limits.h"
#include "tonnx/models.h"
#include "tonnx/progress.h"
#include "tonnx/proto.h"
#include "tonnx/verify.h"

namespace tonnx::cli {

namespace {

// --dynamic-axes "input:0,2;output:0"
void parse_dynamic_axes(const std::string& s, ExportOptions& opt) {
  for (const auto& entry : split(s, ';')) {
    auto colon = entry.find(':');
    if (colon == std::string::npos)
      throw UsageError("--dynamic-axes entry '" + entry + "' is not NAME:AXIS[,AXIS...]");
    std::vector<int64_t> axes;
    for (const auto& a : split(entry.substr(colon + 1), ',')) axes.push_back(parse_int(a, "axis"));
    add_dynamic_axes(opt, entry.substr(0, colon), axes);
  }
}

const char kExportHelp[] = R"(usage: tonnx export MODEL -o OUT.onnx [options]
       tonnx export MODEL.pt -o OUT.onnx (--inputs in0.pb,... | --input-shape S) [options]

Exports a zoo model (see `tonnx models`) to ONNX by tracing it with LibTorch, or a
TorchScript file (torch.jit.trace / torch.jit.script, MODEL ending in .pt or an existing
file) with its control flow (opset 11+ for If/Loop).

options:
  -o, --output PATH            the .onnx file to write (atomically; never left partial)
  --input-shape SHAPES         example input shapes, e.g. 10x3x224x224 (several: a,b)
  --inputs a.pb,b.pb           TorchScript: example inputs as ONNX TensorProto files
                               (dtypes and shapes kept: int64 tokens, bool masks...);
                               forward's other arguments as none, true/false, 3, 0.5 or
                               [1,2] (constants of the export); lists of tensors as
                               [a.pb,b.pb], tuples of anything, nested, as
                               (3,(a.pb,b.pb)) (one graph input per tensor); a
                               quantized tensor as quantized(values.pb,SCALE,ZERO_POINT)
                               (three graph inputs);
                               quote the brackets for the shell
  --input-names a,b,...        names of the graph inputs, then of the parameters
  --output-names y,...         names of the graph outputs
  --opset N                    ONNX opset, 9 to 23 (default 17; from 18 written at 17 and
                               converted, as tonnx convert --opset does)
  --verbose                    print the exported graph with module scopes
  --seed N                     seed for the random weights and inputs (default 0)
  --test-data DIR              write DIR/test_data_set_0/{input,output}_K.pb: the example
                               inputs and LibTorch's outputs as ONNX TensorProto files
  --float64-reference          zoo models, with --test-data: also DIR/float64_reference/
                               output_K.pb, the model run in double by LibTorch (the
                               reference of the accuracy rule: docs/backend.md)
  --dynamic-axes SPEC          NAME:AXIS[,AXIS];NAME:AXIS ... symbolic dims
  --ignore-unknown-dynamic-axes  a --dynamic-axes NAME that is neither an input nor an
                               output is a warning and ignored, as in torch.onnx (default:
                               an error, since a misspelt name would export static sizes)
  --no-constant-folding        keep constant subgraphs as ops
  --no-export-params           parameters become graph inputs instead of initializers
  --keep-initializers-as-inputs  list initializers as graph inputs too (IR v3 style)
  --aten-fallback              ops without a symbolic become ATen nodes
  --training                   export in training mode (default: eval)
  --preserve-training-mode     export in the module's own mode (train() or eval())
  --external-data[=NAME]       weights of 1 KB or more in one file NAME beside the model
                               (default OUT.onnx.data), each 4096-byte aligned; without
                               this, only a model over protobuf's 2 GB limit gets one
  --external-data-threshold N  the smallest weight (bytes) written there (default 1024)
  --no-external-data           never: a model over 2 GB is an error
  --load-library PATH[,PATH]   TorchScript: load custom-op libraries first, as
                               torch.ops.load_library (torchvision's _C*.so for
                               torchvision::nms, roi_align)
  --strict-trace               always trace again with other input values and fail when that
                               records other ops or constants (control flow on values); by
                               default only a forward that reads values (item(), nonzero, ...)
                               is traced again, and a difference is a warning
  --no-trace-check             trace once only, even when forward reads values
  --trace-on-values            trace on the example values from the start (default: on meta
                               tensors, sizes and dtypes only, so that forward computes
                               nothing; on values when the model needs them)
  --timing                     print each stage's time and the resident memory (stderr)
  --timeout SECONDS            end the export with an error (exit 1) past this time, naming the
                               op that was running (a forward that loops for ever, a file
                               that compiles for ever); nothing is written
  --memory-limit MB            heap and anonymous memory of the process at most MB MiB: a
                               larger allocation fails as an error instead of exhausting the
                               machine
  --quiet                      no progress line (shown on a terminal: the stage, and the
                               bytes written with their rate)
  --default-dtype float32|float64  the dtype of floating results with no dtype of their
                               own (int / int, torch.ones(n)), as torch.set_default_dtype
                               before torch.onnx.export (default float32)
)";

// --timing: how the trace ran (ExportOptions::shapes_only_trace).
void print_trace_kind(const ExportSummary& s) {
  if (s.traced_shapes_only)
    std::cerr << "tonnx timing: traced on meta tensors (shapes only)\n";
  else if (!s.traced_on_values_because.empty())
    std::cerr << "tonnx timing: traced on values, not shapes only: " << s.traced_on_values_because
              << "\n";
}

// glibc's heap for an export of a model of `bytes`. Up to 1 GB, blocks below 4 MB come from
// the heap and are reused (ResNet-18's trace: 195 ms; with every block of 64 KB and more
// mapped and unmapped, page faults made it 310 ms). Past 1 GB, memory is the bound that
// matters: blocks of 64 KB and more go back to the system when freed. Building a large model
// frees as much as it keeps, and a traced forward allocates and frees an activation per op;
// with a 4 MB threshold (or glibc's adaptive one, which grows to 32 MB) the heap kept what
// both freed: the 3.2 GB transformer peaked 0.3 GB higher, growing with every layer traced.
void set_export_heap(int64_t bytes) {
  mallopt(M_MMAP_THRESHOLD, bytes > (int64_t{1} << 30) ? 64 << 10 : 4 << 20);
}

// Progress on stderr while the export runs. The sink: stage times with --timing (unless
// TONNX_TIMING prints them already), else a status line on a terminal, else none.
ProgressSink export_sink(const Args& a) {
  if (a.has("--timing"))
    return std::getenv("TONNX_TIMING") ? ProgressSink() : timing_progress(std::cerr);
  if (!a.has("--quiet") && isatty(STDERR_FILENO)) return terminal_progress(std::cerr);
  return ProgressSink();
}

class ExportProgress {
 public:
  explicit ExportProgress(const Args& a)
      : sink_(export_sink(a)), scope_(sink_), clear_(sink_ && !a.has("--timing")) {}
  ~ExportProgress() {
    if (clear_) clear_progress_line(std::cerr);
  }

 private:
  ProgressSink sink_;
  ProgressScope scope_;
  bool clear_;  // a status line is on the terminal: clear it at the end
};

// The example input shapes of a zoo model: its own, or --input-shape's of the same ranks.
std::vector<std::vector<int64_t>> zoo_shapes(const Args& a, const models::ZooEntry& entry) {
  auto shapes = entry.input_shapes;
  if (auto v = a.get("--input-shape")) shapes = parse_shapes(*v);
  if (shapes.size() != entry.input_shapes.size())
    throw UsageError("model " + entry.name + " takes " + std::to_string(entry.input_shapes.size()) +
                     " input(s) but --input-shape gives " + std::to_string(shapes.size()));
  for (size_t i = 0; i < shapes.size(); ++i)
    if (shapes[i].size() != entry.input_shapes[i].size())
      throw UsageError("input " + std::to_string(i) + " of " + entry.name + " must have rank " +
                       std::to_string(entry.input_shapes[i].size()) + " (like " +
                       models::shape_string(entry.input_shapes[i]) + "), got " +
                       models::shape_string(shapes[i]));
  return shapes;
}

// A zoo model, built with its seed's weights and traced on its example inputs.
int export_zoo_model(const Args& a) {
  auto out = a.output();
  if (!out) throw UsageError("missing -o OUT.onnx");
  const models::ZooEntry& entry = models::find_model(a.positional[0]);
  ExportOptions opt = export_options(a);
  uint64_t seed = static_cast<uint64_t>(a.integer("--seed").value_or(0));
  auto shapes = zoo_shapes(a, entry);
  set_export_heap(entry.parameters * 4);  // the model is built next: size it by its entry
  Traceable model = entry.make(seed);
  malloc_trim(0);
  std::vector<torch::Tensor> inputs = entry.inputs(shapes, seed);
  ExportSummary s = export_traceable(model, inputs, *out, opt);
  if (a.has("--timing")) print_trace_kind(s);
  if (auto dir = a.get("--test-data")) {
    write_export_test_data(*dir, inputs, s);
    if (a.has("--float64-reference")) write_float64_reference(*dir, model, inputs);
  } else if (a.has("--float64-reference")) {
    throw UsageError("--float64-reference goes with --test-data DIR");
  }
  std::cout << s.str();
  return 0;
}

}  // namespace

std::vector<std::vector<int64_t>> parse_shapes(const std::string& s) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& one : split(s, ',')) {
    std::vector<int64_t> dims;
    for (const auto& d : split(one, 'x')) {
      int64_t v = parse_int(d, "dimension");
      if (v < 0) throw UsageError("--input-shape: dimension " + d + " is negative");
      dims.push_back(v);
    }
    if (dims.empty()) throw UsageError("--input-shape: empty shape in '" + s + "'");
    shapes.push_back(dims);
  }
  return shapes;
}

ExportOptions export_options(const Args& a) {
  ExportOptions opt;
  if (auto v =
          a.integer("--opset", kMinOpset, kMaxExportOpset,
                    "use " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxExportOpset)))
    opt.opset_version = static_cast<int>(*v);
  if (auto v = a.get("--input-names")) opt.input_names = split(*v, ',');
  if (auto v = a.get("--output-names")) opt.output_names = split(*v, ',');
  if (auto v = a.get("--dynamic-axes")) parse_dynamic_axes(*v, opt);
  opt.ignore_unknown_dynamic_axes = a.has("--ignore-unknown-dynamic-axes");
  opt.verbose = a.has("--verbose");
  opt.do_constant_folding = !a.has("--no-constant-folding");
  opt.export_params = !a.has("--no-export-params");
  opt.keep_initializers_as_inputs = a.has("--keep-initializers-as-inputs");
  if (a.has("--aten-fallback")) opt.operator_export_type = OperatorExportTypes::ONNX_ATEN_FALLBACK;
  if (a.has("--training") && a.has("--preserve-training-mode"))
    throw UsageError("--training and --preserve-training-mode exclude each other");
  if (a.has("--training")) opt.training = TrainingMode::TRAINING;
  if (a.has("--preserve-training-mode")) opt.training = TrainingMode::PRESERVE;
  if (a.has("--external-data") && a.has("--no-external-data"))
    throw UsageError("--external-data and --no-external-data exclude each other");
  if (a.has("--external-data")) {
    opt.external_data = ExternalData::ON;
    if (auto v = a.get("--external-data")) opt.external_data_location = *v;
  }
  if (a.has("--no-external-data")) opt.external_data = ExternalData::OFF;
  if (a.has("--strict-trace") && a.has("--no-trace-check"))
    throw UsageError("--strict-trace and --no-trace-check exclude each other");
  if (a.has("--strict-trace")) opt.trace_check = TraceCheck::STRICT;
  if (a.has("--no-trace-check")) opt.trace_check = TraceCheck::OFF;
  opt.shapes_only_trace = !a.has("--trace-on-values");
  // LibTorch's outputs only for --test-data: after a shapes-only trace they cost a forward.
  opt.eager_outputs = a.has("--test-data");
  c10::set_default_dtype(caffe2::TypeMeta::Make<float>());  // (one process runs many commands)
  if (auto v = a.get("--default-dtype")) {
    // The process's default dtype, as torch.set_default_dtype in Python: the run that gives
    // the graph its types and the symbolics of factory ops without a dtype both read it.
    static const std::map<std::string, caffe2::TypeMeta> kTypes = {
        {"float32", caffe2::TypeMeta::Make<float>()},
        {"float", caffe2::TypeMeta::Make<float>()},
        {"float64", caffe2::TypeMeta::Make<double>()},
        {"double", caffe2::TypeMeta::Make<double>()},
        {"float16", caffe2::TypeMeta::Make<c10::Half>()},
        {"half", caffe2::TypeMeta::Make<c10::Half>()},
        {"bfloat16", caffe2::TypeMeta::Make<c10::BFloat16>()}};
    auto it = kTypes.find(*v);
    if (it == kTypes.end())
      throw UsageError("--default-dtype " + *v +
                       " is not a floating dtype: use float32, float64, float16 or bfloat16");
    c10::set_default_dtype(it->second);
  }
  if (auto v = a.integer("--external-data-threshold", 0, INT64_MAX, "give a byte count >= 0"))
    opt.external_data_threshold = *v;
  return opt;
}

void write_export_test_data(const std::string& dir, const std::vector<at::Tensor>& inputs,
                            const ExportSummary& s) {
  TestDataSet set;
  try {
    set = export_test_data(s, inputs);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--test-data: ") + e.what() + ", so none was written");
  }
  write_test_data(dir, set);
}

int run_export(const Args& a) {
  if (a.positional.size() != 1)
    throw UsageError("expected one MODEL name, got " + std::to_string(a.positional.size()));
  double timeout = a.number("--timeout", 0, 1e7, true, "give seconds > 0").value_or(0);
  int64_t memory_mb =
      a.integer("--memory-limit", 64, int64_t{1} << 30, "give MiB from 64").value_or(0);
  ExportLimits limits(timeout, memory_mb);
  ExportProgress progress(a);
  // A .pt file holds its weights: its size tells a large model before it is loaded.
  if (is_torchscript_model(a.positional[0])) {
    std::error_code ec;
    uintmax_t bytes = std::filesystem::file_size(a.positional[0], ec);
    set_export_heap(ec ? 0 : static_cast<int64_t>(bytes));
    return cmd_export_script(a);
  }
  return export_zoo_model(a);
}

Spec export_spec() {
  return Spec{
      {"-o", "--output", "--input-shape", "--input-names", "--output-names", "--opset", "--seed",
       "--test-data", "--dynamic-axes", "--inputs", "--load-library", "--external-data-threshold",
       "--default-dtype", "--timeout", "--memory-limit"},
      {"--verbose", "--no-constant-folding", "--no-export-params", "--keep-initializers-as-inputs",
       "--aten-fallback", "--training", "--preserve-training-mode", "--no-external-data",
       "--timing", "--quiet", "--strict-trace", "--no-trace-check", "--ignore-unknown-dynamic-axes",
       "--trace-on-values", "--float64-reference"},
      {},
      {"--external-data"}};
}

const Command kExportCommand{"export", kExportHelp, export_spec(), run_export};

}  // namespace tonnx::cli
