// tonnx::verify (tonnx/verify.h): LibTorch's values of an export's intermediate results, and
// the comparison of every runtime with them.
#include "tonnx/proto.h"
#include "tonnx/verify.h"

#include <dlfcn.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <unordered_set>

#include "export/pipeline.h"
#include "tonnx/backend.h"
#include "tonnx/torchscript.h"

namespace tonnx {
namespace fs = std::filesystem;
namespace jit = torch::jit;

namespace detail {

struct Recording {
  std::vector<std::pair<const ir::Value*, ReferenceValue>> pending;  // before the passes
  std::vector<ReferenceValue> values;
  std::string note;
};

namespace {
thread_local Recording* g_recording = nullptr;
}

Recording* active_recording() { return g_recording; }

void record_references(Recording& r, const TraceResult& tr,
                       const std::unordered_map<const jit::Value*, ir::Value*>& mapped) {
  r.pending.clear();
  r.values.clear();
  r.note.clear();
  const jit::Graph& g = *tr.graph;
  if (g.inputs().size() != tr.example_inputs.size() + tr.params.size()) {
    r.note = "the traced graph takes " + std::to_string(g.inputs().size()) + " inputs, not the " +
             std::to_string(tr.example_inputs.size()) + " example tensors and " +
             std::to_string(tr.params.size()) +
             " parameters, so LibTorch's intermediate values were not computed";
    return;
  }
  // A copy of the graph that also returns every top-level tensor value the export kept.
  std::shared_ptr<jit::Graph> copy = tr.graph->copy();
  std::unordered_map<const jit::Value*, jit::Value*> to_copy;
  auto a = g.nodes().begin();
  auto b = copy->nodes().begin();
  for (; a != g.nodes().end() && b != copy->nodes().end(); ++a, ++b)
    for (size_t k = 0; k < a->outputs().size() && k < b->outputs().size(); ++k)
      to_copy[a->outputs()[k]] = b->outputs()[k];
  std::vector<std::pair<const jit::Value*, ir::Value*>> wanted;
  for (const jit::Node* n : g.nodes())
    for (const jit::Value* v : n->outputs()) {
      auto it = mapped.find(v);
      if (it == mapped.end() || !v->type()->cast<c10::TensorType>() || !to_copy.count(v)) continue;
      wanted.emplace_back(v, it->second);
    }
  size_t first = copy->outputs().size();
  // Copied where they are made: a later in-place op (relu_) would change them.
  for (const auto& w : wanted) {
    jit::Value* v = to_copy.at(w.first);
    jit::WithInsertPoint here(v->node()->next());
    copy->registerOutput(copy->insert(c10::aten::clone, {v}));
  }

  // Parameters the graph writes in place (a buffer updated in forward) run on copies: the
  // export's weights and the caller's module stay as they were.
  jit::AliasDb alias(copy);
  std::vector<c10::IValue> stack;
  for (const at::Tensor& t : tr.example_inputs) stack.emplace_back(t.clone());
  for (size_t k = 0; k < tr.params.size(); ++k) {
    const jit::Value* in = copy->inputs()[tr.example_inputs.size() + k];
    const at::Tensor& t = tr.params[k].tensor;
    stack.emplace_back(alias.hasWriters(in) ? t.clone() : t);
  }
  try {
    torch::NoGradGuard no_grad;
    jit::Code code(copy, "tonnx_reference");
    jit::InterpreterState state(code);
    state.run(stack);
  } catch (const std::exception& e) {
    std::string what = e.what();
    r.note = "LibTorch could not run the converted graph alone (" +
             what.substr(0, what.find('\n')) + "), so its intermediate values are unknown";
    return;
  }
  if (stack.size() != first + wanted.size()) {
    r.note = "the converted graph returned " + std::to_string(stack.size()) + " values, not " +
             std::to_string(first + wanted.size());
    return;
  }
  for (size_t k = 0; k < wanted.size(); ++k) {
    const c10::IValue& v = stack[first + k];
    if (!v.isTensor()) continue;
    const jit::Value* tv = wanted[k].first;
    ReferenceValue ref;
    ref.aten_op = tv->node()->kind().toQualString();
    ref.value = v.toTensor();
    r.pending.emplace_back(wanted[k].second, std::move(ref));
  }
}

void name_references(Recording& r, const ir::Graph& g) {
  std::unordered_map<const ir::Value*, const ir::Node*> live;  // value -> its node, still there
  for (const auto& n : g.nodes())
    for (const ir::Value* o : n->outputs()) live[o] = n.get();
  std::unordered_set<std::string> seen;
  for (auto& [v, ref] : r.pending) {
    auto it = live.find(v);
    if (it == live.end() || v->name().empty() || !seen.insert(v->name()).second) continue;
    ref.onnx_name = v->name();
    ref.scope = it->second->scope();
    r.values.push_back(std::move(ref));
  }
  r.pending.clear();
}

}  // namespace detail

struct ReferenceRecorder::State {
  detail::Recording recording;
  detail::Recording* previous = nullptr;
};

ReferenceRecorder::ReferenceRecorder() : state_(std::make_unique<State>()) {
  state_->previous = detail::g_recording;
  detail::g_recording = &state_->recording;
}
ReferenceRecorder::~ReferenceRecorder() {
  if (detail::g_recording == &state_->recording) detail::g_recording = state_->previous;
}
const std::vector<ReferenceValue>& ReferenceRecorder::values() const {
  return state_->recording.values;
}
const std::string& ReferenceRecorder::note() const { return state_->recording.note; }

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// tools/ort_run.js, where ONNX Runtime's Node package sits beside it; empty when not found.
std::string ort_runner() {
  std::vector<fs::path> candidates;
  if (const char* e = std::getenv("TONNX_ORT_RUNNER")) return e;
  if (const char* e = std::getenv("TONNX_SOURCE_DIR")) candidates.push_back(fs::path(e) / "tools");
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ort_runner), &info) && info.dli_fname)
    candidates.push_back(fs::path(info.dli_fname).parent_path().parent_path() / "tools");
  // Node itself, on PATH.
  bool node = false;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':') && !node;)
      node = !d.empty() && ::access((fs::path(d) / "node").c_str(), X_OK) == 0;
  }
  if (!node) return {};
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "ort_run.js", ec) &&
        fs::exists(dir / "node_modules" / "onnxruntime-node", ec))
      return (dir / "ort_run.js").string();
  }
  return {};
}

std::string run_capture(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("cannot run: " + cmd);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  *rc =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return out;
}

Comparison failed(const std::string& why) {
  Comparison c;
  c.ok = false;
  c.mismatch = why;
  return c;
}

void check_outputs(VerifyReport& r, const std::string& runtime, const TestDataSet& data,
                   const std::vector<at::Tensor>& got, Tolerance tol) {
  for (size_t k = 0; k < data.outputs.size(); ++k) {
    const std::string& name = k < data.output_names.size() ? data.output_names[k] : "";
    Comparison c = k < got.size() ? compare(got[k], data.outputs[k], tol)
                                  : failed("the runtime returned no value for it");
    r.outputs.push_back({name.empty() ? "output_" + std::to_string(k) : name, runtime, c});
  }
}

// tonnx's backend with LibTorch's kernels (PrepareOptions::exact): what differs is the export.
std::vector<at::Tensor> run_tonnx(const std::string& path, const TestDataSet& data) {
  backend::PrepareOptions po;
  po.exact = true;
  backend::Rep rep = backend::prepare(path, "CPU", po);
  return rep.run(data.inputs);
}

// ONNX Runtime through tools/ort_run.js: the outputs it wrote, or an error with what it said.
std::vector<at::Tensor> run_ort(const std::string& runner, const std::string& path,
                                const TestDataSet& data) {
  ScratchDir dir("verify");
  write_test_data(dir.path(), data);
  fs::path out = fs::path(dir.path()) / "ort_outputs";
  int rc = 0;
  std::string said =
      run_capture("node " + shell_quote(runner) + " " + shell_quote(path) + " --test-data " +
                      shell_quote(dir.path()) + " --output-dir " + shell_quote(out.string()),
                  &rc);
  std::vector<at::Tensor> got;
  for (size_t k = 0; k < data.outputs.size(); ++k) {
    fs::path f = out / ("output_" + std::to_string(k) + ".pb");
    std::error_code ec;
    if (!fs::exists(f, ec)) {
      std::string last = said.size() > 600 ? "..." + said.substr(said.size() - 600) : said;
      throw std::runtime_error("ONNX Runtime failed (exit " + std::to_string(rc) + "): " + last);
    }
    got.push_back(tensor_from_proto(read_tensor_proto(f.string()), out.string()));
  }
  return got;
}

// LibTorch's value against the ONNX value it became. Layouts may differ where the exporter
// represents a value otherwise (a 0-d number as [1]); element counts may not.
std::optional<Comparison> compare_reference(const backend::RunValue& got, const at::Tensor& ref,
                                            Tolerance tol) {
  if (!got.is_tensor() || !ref.defined() || ref.is_complex() || ref.is_quantized() ||
      ref.layout() != at::kStrided || !got.tensor().defined())
    return std::nullopt;
  at::Tensor g = got.tensor();
  if (g.numel() != ref.numel())
    return failed("shape: got " + c10::str(g.sizes()) + ", expected " + c10::str(ref.sizes()));
  if (g.sizes() != ref.sizes()) g = g.reshape(ref.sizes());
  if (g.scalar_type() != ref.scalar_type()) g = g.to(ref.scalar_type());
  return compare(g, ref, tol);
}

std::string type_str(const at::Tensor& t) { return ir::TensorType::from_tensor(t).str(); }

// Writes the node alone as DIR/node.onnx, with its inputs (as tonnx computed them) and
// LibTorch's value of the divergent output as DIR/test_data_set_0.
void write_repro(const std::string& dir, const ir::Model& model, const ir::Node& node,
                 const std::map<std::string, at::Tensor>& values, const std::string& out_name,
                 const at::Tensor& expected) {
  fs::create_directories(dir);
  ir::Model one;
  one.opsets = model.opsets;
  one.ir_version = model.ir_version;
  ir::Graph& g = *one.graph;
  TestDataSet data;
  std::map<std::string, ir::Value*> made;
  std::vector<ir::Value*> ins;
  for (const ir::Value* in : node.inputs()) {
    if (!in || in->name().empty()) {
      ins.push_back(nullptr);
      continue;
    }
    auto m = made.find(in->name());
    if (m == made.end()) {
      auto v = values.find(in->name());
      if (v == values.end()) throw std::runtime_error("no value for input '" + in->name() + "'");
      m = made.emplace(in->name(), g.add_input(in->name(), ir::TensorType::from_tensor(v->second)))
              .first;
      data.inputs.push_back(v->second);
      data.input_names.push_back(in->name());
    }
    ins.push_back(m->second);
  }
  ir::Node* n = g.add_node(node.op_type(), ins, node.attrs(), node.outputs().size(), node.domain());
  n->set_name(node.name());
  for (size_t k = 0; k < node.outputs().size(); ++k) {
    n->output(k)->set_name(node.output(k)->name());
    if (node.output(k)->name() == out_name) {
      n->output(k)->set_type(ir::TensorType::from_tensor(expected));
      g.add_output(n->output(k));
    }
  }
  data.outputs.push_back(expected);
  data.output_names.push_back(out_name);
  save_model_proto(model_to_proto(one), (fs::path(dir) / "node.onnx").string());
  write_test_data(dir, data);
}

void find_divergence(VerifyReport& r, const std::string& path, const TestDataSet& data,
                     const VerifyOptions& o, const std::vector<ReferenceValue>& refs) {
  ir::Model model = load_model(path);
  // Every value of the top-level graph becomes an output, so one run computes them all.
  std::unordered_set<std::string> outs;
  for (const ir::Value* v : model.graph->outputs()) outs.insert(v->name());
  for (const auto& n : model.graph->nodes())
    for (ir::Value* v : n->outputs())
      if (!v->name().empty() && outs.insert(v->name()).second) model.graph->add_output(v);
  // Unoptimized, prepare leaves the graph as it is: the plan and this walk share it (one copy
  // of the weights).
  backend::PrepareOptions po;
  po.optimize = false;
  po.exact = true;  // LibTorch's kernels: a difference is the export's, not rounding
  backend::Rep rep = backend::prepare(model, "CPU", po);
  backend::RunValues feed(data.inputs.begin(), data.inputs.end());
  backend::RunValues got = rep.run_values(feed);
  std::map<std::string, at::Tensor> values;
  for (size_t k = 0; k < got.size() && k < rep.output_names().size(); ++k)
    if (got[k].is_tensor()) values[rep.output_names()[k]] = got[k].tensor();
  const ir::Graph& g = *model.graph;
  size_t fed = 0;
  for (const ir::Value* in : g.inputs())
    if (!g.is_initializer(in) && fed < data.inputs.size()) values[in->name()] = data.inputs[fed++];
  for (const auto& [v, t] : g.initializers()) values[v->name()] = t;

  std::map<std::string, const ReferenceValue*> by_name;
  for (const ReferenceValue& ref : refs) by_name.emplace(ref.onnx_name, &ref);
  size_t compared = 0;
  for (const auto& n : g.nodes())
    for (const ir::Value* out : n->outputs()) {
      auto ref = by_name.find(out->name());
      auto val = values.find(out->name());
      if (ref == by_name.end() || val == values.end()) continue;
      std::optional<Comparison> c = compare_reference(val->second, ref->second->value, o.tolerance);
      if (!c) continue;
      ++compared;
      if (c->ok) continue;
      Divergence d;
      d.op_type = n->op_type();
      d.node_name = n->name();
      d.aten_op = ref->second->aten_op;
      d.scope = ref->second->scope.empty() ? n->scope() : ref->second->scope;
      d.value = out->name();
      d.got = type_str(val->second);
      d.expected = type_str(ref->second->value);
      d.comparison = *c;
      if (!o.repro_dir.empty()) {
        if (n->has_subgraphs()) {
          r.notes.push_back(
              "the divergent node has subgraphs (If, Loop, Scan) that read outer "
              "values, so no one-node reproduction was written");
        } else {
          write_repro(o.repro_dir, model, *n, values, out->name(), ref->second->value);
          d.repro_dir = o.repro_dir;
        }
      }
      r.divergence = d;
      return;
    }
  r.notes.push_back(
      "no node differs from LibTorch beyond the tolerance on tonnx's backend "
      "without optimizations (" +
      std::to_string(compared) +
      " values compared): a mismatch above comes from that runtime's own "
      "computation (its fusions, or ONNX Runtime's kernels)");
}

}  // namespace

TestDataSet export_test_data(const ExportSummary& s, const std::vector<at::Tensor>& examples) {
  if (s.eager_outputs.size() != s.outputs.size())
    throw std::runtime_error(
        "the model has " + std::to_string(s.outputs.size()) + " outputs but LibTorch returned " +
        std::to_string(s.eager_outputs.size()) +
        " tensors (a list of tensors is one output, an ONNX sequence); a test data set holds one "
        "tensor per output");
  TestDataSet data;
  data.inputs = s.graph_inputs(examples);
  data.outputs = s.eager_outputs;
  for (const auto& i : s.inputs) data.input_names.push_back(i.name);
  for (const auto& out : s.outputs) data.output_names.push_back(out.name);
  return data;
}

VerifyReport verify_file(const std::string& path, const TestDataSet& data, const VerifyOptions& o,
                         const std::vector<ReferenceValue>& refs) {
  VerifyReport r;
  r.model_path = path;
  bool ran = false;
  for (const std::string& rt : o.runtimes) {
    if (rt != "tonnx" && rt != "ort")
      throw std::invalid_argument("unknown runtime '" + rt + "': use tonnx or ort");
    std::string runner;
    if (rt == "ort") {
      runner = ort_runner();
      if (runner.empty()) {
        std::string why =
            "ONNX Runtime was not run: node on PATH, or tools/ort_run.js with onnxruntime-node "
            "beside it, was not found (install Node.js; set TONNX_ORT_RUNNER to ort_run.js, or "
            "run scripts/setup.sh)";
        if (o.require_runtimes) throw std::runtime_error(why);
        r.notes.push_back(why);
        continue;
      }
    }
    ran = true;
    try {
      std::vector<at::Tensor> got =
          rt == "tonnx" ? run_tonnx(path, data) : run_ort(runner, path, data);
      check_outputs(r, rt, data, got, o.tolerance);
    } catch (const std::exception& e) {
      for (size_t k = 0; k < data.outputs.size(); ++k)
        r.outputs.push_back({k < data.output_names.size() ? data.output_names[k] : "", rt,
                             failed(rt + " failed: " + e.what())});
    }
  }
  r.ok = ran;
  for (const OutputCheck& c : r.outputs) r.ok = r.ok && c.comparison.ok;
  if (!ran) r.notes.push_back("no runtime ran");
  if ((!r.ok || o.always_search) && ran) {
    if (refs.empty())
      r.notes.push_back(
          "LibTorch's intermediate values are not known, so the first divergent "
          "node was not searched for");
    else
      try {
        find_divergence(r, path, data, o, refs);
      } catch (const std::exception& e) {
        r.notes.push_back(std::string("the first divergent node was not searched for: running "
                                      "the graph with every value exposed on tonnx's backend "
                                      "failed: ") +
                          e.what());
      }
  }
  return r;
}

namespace {

template <typename Export>
VerifyReport verify_export(const std::vector<torch::Tensor>& args, const VerifyOptions& o,
                           const Export& do_export) {
  std::optional<ScratchDir> tmp;
  std::string path = o.onnx_path;
  if (path.empty()) {
    tmp.emplace("verify");
    path = (fs::path(tmp->path()) / "model.onnx").string();
  }
  std::vector<torch::Tensor> examples;
  for (const auto& a : args) examples.push_back(a.clone());
  ReferenceRecorder rec;
  ExportSummary s = do_export(path);
  TestDataSet data = export_test_data(s, examples);
  VerifyReport r = verify_file(path, data, o, rec.values());
  if (!rec.note().empty()) r.notes.push_back(rec.note());
  for (const std::string& w : s.warnings) r.notes.push_back("export warning: " + w);
  if (tmp) r.model_path.clear();
  return r;
}

}  // namespace

VerifyReport verify(const Traceable& model, const std::vector<torch::Tensor>& args,
                    const VerifyOptions& o) {
  return verify_export(args, o, [&](const std::string& path) {
    return export_traceable(model, args, path, o.export_options);
  });
}

VerifyReport verify(torch::jit::Module& module, const std::vector<torch::Tensor>& inputs,
                    const VerifyOptions& o) {
  return verify_export(inputs, o, [&](const std::string& path) {
    return export_model(module, inputs, path, o.export_options);
  });
}

std::string VerifyReport::str() const {
  std::ostringstream os;
  os << std::setprecision(3);
  for (const OutputCheck& c : outputs) {
    os << "  " << std::left << std::setw(16) << c.output << " " << std::setw(6) << c.runtime
       << " max_abs " << std::setw(10) << c.comparison.max_abs << " max_rel " << std::setw(10)
       << c.comparison.max_rel << (c.comparison.ok ? " pass" : " FAIL");
    if (!c.comparison.ok) os << ": " << c.comparison.mismatch;
    os << "\n";
  }
  for (const std::string& n : notes) os << "note: " << n << "\n";
  if (divergence) {
    const Divergence& d = *divergence;
    os << "first divergent node: " << d.op_type << " '" << d.node_name << "' from " << d.aten_op;
    if (!d.scope.empty()) os << " at scope " << d.scope;
    os << "\n  output '" << d.value << "': got " << d.got << ", LibTorch " << d.expected
       << ": max_abs " << d.comparison.max_abs << ", max_rel " << d.comparison.max_rel << ": "
       << d.comparison.mismatch << "\n";
    if (!d.repro_dir.empty())
      os << "  reproduce it alone: tonnx run " << (fs::path(d.repro_dir) / "node.onnx").string()
         << " --test-data " << d.repro_dir << "\n";
  }
  os << (ok ? "verify: PASS" : "verify: FAIL") << "\n";
  return os.str();
}

}  // namespace tonnx
