// The export pipeline that both frontends share (pipeline.h): convert, passes, check, print,
// atomic write, summary.
#include "export/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <chrono>
#include <fstream>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

#include "export/converter.h"
#include "export/functionalize.h"
#include "ir/cpu_allocator.h"
#include "passes/fuse.h"
#include "passes/passes.h"
#include "tonnx/backend.h"
#include "tonnx/check.h"
#include "tonnx/opset.h"
#include "tonnx/progress.h"
#include "tonnx/proto.h"
#include "tonnx/symbolic.h"

namespace tonnx {
namespace fs = std::filesystem;

void add_dynamic_axes(ExportOptions& opt, const std::string& name,
                      const std::vector<int64_t>& axes) {
  for (int64_t a : axes)
    opt.dynamic_axes[name][a] = name + "_dynamic_axes_" + std::to_string(a + 1);
}

std::vector<torch::Tensor> ExportSummary::graph_inputs(
    const std::vector<torch::Tensor>& example) const {
  std::vector<torch::Tensor> out;
  // A quantized example is three graph inputs in a row: values, scale (double), zero point.
  for (size_t i = 0; i < input_positions.size(); ++i) {
    int64_t k = input_positions[i];
    if (k < 0 || k >= static_cast<int64_t>(example.size()))
      throw std::invalid_argument("graph_inputs: the export had more example inputs (input " +
                                  std::to_string(k) + ") than the " +
                                  std::to_string(example.size()) + " given");
    const at::Tensor& t = example[static_cast<size_t>(k)];
    if (t.defined() && t.is_quantized() && i + 2 < input_positions.size() &&
        input_positions[i + 1] == k && input_positions[i + 2] == k) {
      out.push_back(t.int_repr());
      out.push_back(at::scalar_tensor(t.q_scale(), at::kDouble));
      out.push_back(at::scalar_tensor(t.q_zero_point(), at::kLong));
      i += 2;
      continue;
    }
    out.push_back(t);
  }
  return out;
}

std::string ExportSummary::str() const {
  std::ostringstream os;
  os << "exported " << path << " (opset " << opset << ", " << num_nodes << " nodes, "
     << num_initializers << " initializers, " << file_bytes << " bytes, " << seconds << " s)\n";
  if (!external_data_path.empty())
    os << "  external data " << external_data_path << " (" << external_data_bytes << " bytes)\n";
  // Which example input feeds each graph input, where that is not simply the k-th: an example
  // the model does not read is not a graph input (see input_positions).
  bool identity = true;
  for (size_t k = 0; k < input_positions.size(); ++k)
    identity = identity && input_positions[k] == static_cast<int64_t>(k);
  for (size_t k = 0; k < inputs.size(); ++k) {
    os << "  input  " << inputs[k].name << " : " << inputs[k].type.str();
    if (!identity && k < input_positions.size())
      os << "  (example input " << input_positions[k] << ")";
    os << "\n";
  }
  for (const auto& o : outputs)
    os << "  output " << o.name << " : "
       << (o.sequence ? "sequence of " + o.type.str() : o.type.str()) << "\n";
  os << "  ops:";
  for (const auto& [op, n] : op_counts) os << " " << op << "=" << n;
  os << "\n";
  return os.str();
}

namespace detail {

StageTimer::StageTimer() : on(std::getenv("TONNX_TIMING") != nullptr) {}

void StageTimer::lap(const char* stage) {
  if (!on && !progress_wanted()) return;
  auto now = std::chrono::steady_clock::now();
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  ProgressEvent e;
  e.stage = stage;
  e.done = true;
  e.seconds = std::chrono::duration<double>(now - t).count();
  e.rss_mb = resident * (::sysconf(_SC_PAGESIZE) / 1024) / 1024;
  t = now;
  if (on) timing_progress(std::cerr)(e);  // TONNX_TIMING: the same lines as --timing
  if (e.stage != "start") report_progress(e);
}

void validate_options(const ExportOptions& o) {
  if (!is_supported_opset(o.opset_version))
    throw ExportError("opset_version " + std::to_string(o.opset_version) +
                      " is not supported: use " + std::to_string(kMinOpset) + " to " +
                      std::to_string(kMaxExportOpset));
  std::set<std::string> seen;
  for (const auto& n : o.input_names) {
    if (n.empty()) throw ExportError("input_names contains an empty name");
    if (!seen.insert(n).second) throw ExportError("input_names names '" + n + "' twice");
  }
  for (const auto& n : o.output_names) {
    if (n.empty()) throw ExportError("output_names contains an empty name");
    if (!seen.insert(n).second)
      throw ExportError("the name '" + n + "' appears twice in input_names/output_names");
  }
  for (const auto& [domain, version] : o.custom_opsets)
    if (domain.empty() || domain == "ai.onnx")
      throw ExportError("custom_opsets cannot set the default domain; use opset_version");
}

namespace {
// The node a checker message names ("Node (Elu_3)", "node name: Elu_3"), searched through
// subgraphs too.
const ir::Node* named_in(const ir::Graph& g, const std::string& msg) {
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const auto& n : g.nodes()) {
    const std::string& name = n->name();
    for (size_t at = name.empty() ? std::string::npos : msg.find(name); at != std::string::npos;
         at = msg.find(name, at + 1)) {
      size_t end = at + name.size();
      if ((at == 0 || !is_ident(msg[at - 1])) && (end >= msg.size() || !is_ident(msg[end])))
        return n.get();
    }
    for (const auto& a : n->attrs())
      if (a.value.kind() == ir::AttrValue::Kind::Graph)
        if (const ir::Node* in = named_in(*a.value.g(), msg)) return in;
  }
  return nullptr;
}

// ONNX's shape inference fills the outputs' dims that the export left open under dynamic axes
// (ViT's 1000 classes) in the file; the model (and the summary) learn them too.
void learn_output_dims(ir::Graph& g, const onnx::GraphProto& inferred) {
  for (int i = 0; i < inferred.output_size() && i < static_cast<int>(g.outputs().size()); ++i) {
    ir::Value* v = g.outputs()[i];
    const auto& tt = inferred.output(i).type().tensor_type();
    if (!v->type() || !v->type()->shape || !tt.has_shape() ||
        tt.shape().dim_size() != static_cast<int>(v->type()->shape->size()))
      continue;
    ir::TensorType t = *v->type();
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      ir::Dim& dim = (*t.shape)[d];
      if (dim.value || !dim.symbol.empty()) continue;
      const auto& p = tt.shape().dim(d);
      if (p.has_dim_value())
        dim = ir::Dim::known(p.dim_value());
      else if (p.has_dim_param())
        dim = ir::Dim::named(p.dim_param());
    }
    v->set_type(t);
  }
}

// As torch.onnx does, the graph keeps only the inputs it reads: one read for its static
// shape alone (folded into a constant) or not at all is dropped. Returns, for each user input
// kept, its position among the example inputs.
// `examples` holds, for each user graph input, the example input it comes from.
std::vector<int64_t> remove_unused_inputs(ir::Graph& g, const std::vector<int64_t>& examples) {
  std::unordered_set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());
  std::vector<ir::Value*> user(g.inputs().begin(),
                               g.inputs().begin() + std::min(examples.size(), g.inputs().size()));
  std::vector<int64_t> kept;
  for (size_t i = 0; i < user.size(); ++i) {
    if (g.is_initializer(user[i])) continue;
    if (user[i]->uses().empty() && !outputs.count(user[i]))
      g.remove_input(user[i]);
    else
      kept.push_back(examples[i]);
  }
  return kept;
}

// A quantized tensor as the graph carries it: integer values, scale (float), zero point.
void add_flat(const at::Tensor& t, std::vector<torch::Tensor>& out) {
  if (!t.defined() || !t.is_quantized() || t.qscheme() != at::kPerTensorAffine) {
    out.push_back(t);
    return;
  }
  at::Tensor ints = t.int_repr();
  out.push_back(ints);
  out.push_back(at::scalar_tensor(t.q_scale(), at::kFloat));
  out.push_back(at::scalar_tensor(t.q_zero_point(), ints.scalar_type()));
}

// Whether a user's registered symbolic function (not tonnx's) emitted `n`.
bool by_user(const ir::Node* n) {
  for (const auto& s : registered_symbolics())
    if (s.name == n->source() && s.user) return true;
  return false;
}

// Which symbolic function made the node the checker rejected, and whose it is.
std::string blame(const ir::Graph& g, const std::string& msg) {
  const ir::Node* n = named_in(g, msg);
  if (!n || n->source().empty())
    return "This is a bug in a symbolic function; please report it with the model.";
  std::string where = n->scope().empty() ? "" : " at scope " + n->scope();
  if (by_user(n))
    return "The node was emitted by your symbolic function for " + n->source() + where +
           " (registered with tonnx::register_symbolic): fix the node it emits (" + n->op_type() +
           ").";
  return "The node was emitted by tonnx's symbolic function for " + n->source() + where +
         ": this is a bug in tonnx; please report it with the model.";
}

// Who wrote the node that makes `v`, for an error about it.
std::string maker(const ir::Value* v) {
  const ir::Node* n = v->producer();
  if (!n)
    return "It is not made by any node. This is a bug in tonnx; please report it with the model.";
  std::string what = n->op_type() + (n->source().empty() ? "" : " from " + n->source()) +
                     (n->scope().empty() ? "" : " at scope " + n->scope());
  if (by_user(n))
    return "It is made by " + what +
           ", emitted by your symbolic function (registered with tonnx::register_symbolic): fix "
           "the types it declares.";
  return "It is made by " + what + ". This is a bug in tonnx; please report it with the model.";
}

}  // namespace

// The module ran on the example while it was traced. Every output the graph declares must have
// the dtype, rank and known sizes that run gave, or the model would silently differ from the
// module: a wrong dtype in a symbolic (an int64 product declared float64) is caught here.
void check_against_module(const ir::Graph& g, const std::vector<torch::Tensor>& eager) {
  if (g.outputs().size() != eager.size()) return;  // sequences, per-channel quantized outputs
  for (size_t k = 0; k < eager.size(); ++k) {
    const ir::Value* v = g.outputs()[k];
    const at::Tensor& e = eager[k];
    if (!e.defined() || v->is_sequence() || !v->type() || e.is_quantized() || e.is_complex() ||
        v->type()->dtype == ir::DType::Undefined)
      continue;
    const ir::TensorType& t = *v->type();
    bool same = t.dtype == ir::dtype_from_scalar_type(e.scalar_type());
    if (same && t.shape) {
      same = static_cast<int64_t>(t.shape->size()) == e.dim();
      for (size_t d = 0; same && d < t.shape->size(); ++d)
        same = !(*t.shape)[d].value || *(*t.shape)[d].value == e.size(static_cast<int64_t>(d));
    }
    if (same) continue;
    throw ExportError("the exported model declares output " + std::to_string(k) + " ('" +
                      v->name() + "') as " + t.str() + ", but the module gave " +
                      ir::TensorType::from_tensor(e).str() +
                      " for the example inputs: the model would not compute what the module "
                      "does, so nothing was written. " +
                      maker(v));
  }
}

namespace {

ConvertConfig export_convert_config(const TraceResult& tr, const ExportOptions& o) {
  ConvertConfig cfg;
  cfg.opset = std::min(o.opset_version, kMaxOpset);  // later ones: converted after cleaning up
  cfg.export_type = o.operator_export_type;
  cfg.export_params = o.export_params;
  cfg.keep_initializers_as_inputs = o.keep_initializers_as_inputs;
  cfg.input_names = o.input_names;
  cfg.output_names = o.output_names;
  cfg.dynamic_axes = o.dynamic_axes;
  cfg.custom_opsets = o.custom_opsets;
  cfg.ignore_unknown_dynamic_axes = o.ignore_unknown_dynamic_axes;
  cfg.num_user_inputs = tr.num_user_inputs;
  cfg.params = tr.params;
  return cfg;
}

// Convert: every node through its symbolic (converter.h), the feasibility check first; what
// the frontend knew (eager outputs, warnings) carried over.
void convert_graph(Converter& converter, const TraceResult& tr, Exported& ex) {
  ex.model = converter.convert();
  if (Recording* recording = active_recording())
    record_references(*recording, tr, converter.top_level_values());
  for (const auto& t : tr.eager_outputs) add_flat(t, ex.eager_outputs);
  ex.warnings = tr.warnings;
  ex.traced_shapes_only = tr.shapes_only;
  ex.traced_on_values_because = tr.on_values_because;
  for (const std::string& w : converter.warnings()) ex.warnings.push_back(w);
}

// An output whose rank varies with the input sizes (a squeeze of a dim whose size varies) has
// no rank in the graph, and ONNX's checker wants one on graph outputs: the example's.
void give_outputs_ranks(Exported& ex) {
  if (ex.model.graph->outputs().size() != ex.eager_outputs.size()) return;
  for (size_t k = 0; k < ex.eager_outputs.size(); ++k) {
    ir::Value* v = ex.model.graph->outputs()[k];
    const at::Tensor& e = ex.eager_outputs[k];
    if (!v->is_sequence() && v->type() && !v->type()->shape && e.defined())
      v->set_type(
          ir::TensorType{v->type()->dtype, std::vector<ir::Dim>(static_cast<size_t>(e.dim()))});
  }
}

// Clean up: the Gemm(Transpose) fusion, shared initializers, constant folding on the
// backend's kernels, dead code, unread inputs, names.
void clean_up_exported(Exported& ex, const ExportOptions& o,
                       const std::vector<int64_t>& input_examples) {
  ir::Graph& g = *ex.model.graph;
  passes::fuse_transpose_into_gemm(g);
  passes::deduplicate_initializers(g);
  if (o.do_constant_folding) {
    // Weights transposed for MatMul stay views of the parameters: the export holds the
    // weights once (the writer makes each view contiguous as it writes it).
    passes::fold_initializer_transposes(g);
    backend::fold_constants(g, std::min(o.opset_version, kMaxOpset), o.dynamic_axes.empty(), true);
  }
  passes::eliminate_dead_code(g);
  ex.input_positions = remove_unused_inputs(g, input_examples);
  passes::assign_names(g);
  if (Recording* recording = active_recording()) name_references(*recording, g);
}

// To opset_version from 18: the symbolics wrote opset 17, and tonnx::convert_opset adapts
// the ops that changed (ReduceMean's axes become an input, ...).
void convert_to_requested_opset(Exported& ex, const ExportOptions& o) {
  if (o.opset_version <= kMaxOpset) return;
  try {
    convert_opset(ex.model, o.opset_version);
  } catch (const OpsetConversionError& e) {
    throw ExportError(std::string("the export at opset 17 cannot be converted to opset_version ") +
                      std::to_string(o.opset_version) + ": " + e.what() +
                      " (export at opset 17, where it can be written)");
  }
}

// Check: ONNX's checker and strict shape inference on the skeleton (no weight bytes: checking
// it costs no copies, and save_model streams the weights from the tensors); from opset 18,
// which libonnx does not know, the backend's validation against ONNX's schemas of that opset.
// Then the verbose print.
void check_exported(Exported& ex, const ExportOptions& o, StageTimer& timer) {
  ir::Graph& g = *ex.model.graph;
  ex.proto = model_to_proto(ex.model, /*with_initializer_data=*/false);
  std::string check_error;
  try {
    if (o.opset_version > kLibonnxMaxOpset) {
      backend::validate(ex.model);
    } else {
      check_model(ex.proto, true);
      learn_output_dims(g, ex.proto.graph());
    }
  } catch (const std::exception& e) {
    check_error = e.what();
  }
  timer.lap("check");
  if (o.verbose) {
    std::ostream& out = o.verbose_stream ? *o.verbose_stream : std::cout;
    out << printable_graph(ex.proto);
  }
  if (!check_error.empty() && std::getenv("TONNX_DEBUG_INVALID")) {  // for tonnx's developers
    std::ofstream dump(std::getenv("TONNX_DEBUG_INVALID"), std::ios::binary);
    ex.proto.SerializeToOstream(&dump);
  }
  if (!check_error.empty())
    throw ExportError("the exported model does not pass ONNX's checks, so nothing was written: " +
                      check_error + "\n" + blame(g, check_error));
}

}  // namespace

// The pipeline both frontends share, its passes in order.
Exported finish_export(TraceResult tr, const ExportOptions& o) {
  StageTimer timer;
  Exported ex;
  functionalize_inplace(tr.graph);  // functionalize.h: in-place writes made functional
  Converter converter(tr.graph, export_convert_config(tr, o));
  convert_graph(converter, tr, ex);
  timer.lap("convert");
  give_outputs_ranks(ex);
  clean_up_exported(ex, o, converter.input_examples());
  convert_to_requested_opset(ex, o);
  timer.lap("passes");
  check_exported(ex, o, timer);
  check_against_module(*ex.model.graph, ex.eager_outputs);
  return ex;
}

ExportSummary export_to_path(const std::string& path, const ExportOptions& o,
                             const std::function<Exported()>& produce) {
  auto t0 = std::chrono::steady_clock::now();
  if (path.empty()) throw ExportError("the output path is empty");
  // Forward's activations in huge pages: page faults were most of a trace's time.
  HugePageScope huge_pages;
  fs::path dir = fs::path(path).parent_path();
  if (!dir.empty() && !fs::is_directory(dir))
    throw ExportError("cannot write '" + path + "': folder '" + dir.string() + "' does not exist");
  if (!o.external_data_location.empty()) {
    try {
      check_external_location(o.external_data_location, path);
    } catch (const std::exception& e) {
      throw ExportError(e.what());
    }
  }
  if (o.external_data_threshold < 0)
    throw ExportError("external_data_threshold is " + std::to_string(o.external_data_threshold) +
                      "; it must be a byte count >= 0");
  Exported ex = produce();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return write_exported(std::move(ex), path, o, seconds);
}

ExportSummary write_exported(Exported ex, const std::string& path, const ExportOptions& options,
                             double seconds_so_far) {
  auto t0 = std::chrono::steady_clock::now();
  StageTimer timer;
  SavedModel saved;
  try {
    // AUTO: external data exactly when the model would not fit in protobuf's 2 GB.
    ExternalDataOptions ext;
    ext.threshold = options.external_data_threshold;
    if (options.external_data == ExternalData::ON ||
        (options.external_data == ExternalData::AUTO &&
         inline_model_bytes(ex.model, ex.proto) > static_cast<uint64_t>(INT32_MAX)))
      ext.location = options.external_data_location.empty()
                         ? fs::path(path).filename().string() + ".data"
                         : options.external_data_location;
    saved = save_model(ex.model, ex.proto, path, ext);
  } catch (const std::exception& e) {
    throw ExportError(e.what());
  }
  timer.lap("write");

  ExportSummary s;
  s.path = path;
  s.opset = options.opset_version;
  const ir::Graph& g = *ex.model.graph;
  for (const ir::Value* v : g.inputs())
    if (!g.is_initializer(v)) s.inputs.push_back({v->name(), v->type().value_or(ir::TensorType{})});
  for (const ir::Value* v : g.outputs())
    s.outputs.push_back(
        {v->name(), (v->is_sequence() ? v->sequence_elem() : v->type()).value_or(ir::TensorType{}),
         v->is_sequence()});
  for (const auto& n : g.nodes()) {
    ++s.op_counts[n->op_type()];
    ++s.num_nodes;
  }
  s.num_initializers = static_cast<int64_t>(g.initializers().size());
  for (const auto& [v, t] : g.initializers()) s.parameter_bytes += t.numel() * t.element_size();
  s.file_bytes = static_cast<int64_t>(saved.model_bytes);
  s.external_data_path = saved.data_path;
  s.external_data_bytes = static_cast<int64_t>(saved.data_bytes);
  // A shapes-only trace's outputs are meta tensors, kept for their ranks: no values to give.
  bool values = std::all_of(ex.eager_outputs.begin(), ex.eager_outputs.end(),
                            [](const at::Tensor& t) { return !t.defined() || !t.is_meta(); });
  if (values) s.eager_outputs = std::move(ex.eager_outputs);
  s.input_positions = std::move(ex.input_positions);
  s.warnings = std::move(ex.warnings);
  s.traced_shapes_only = ex.traced_shapes_only;
  s.traced_on_values_because = std::move(ex.traced_on_values_because);
  s.seconds =
      seconds_so_far + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace detail
}  // namespace tonnx
