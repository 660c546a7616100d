// The feasibility check, before any conversion: every op of the graph has a symbolic at the
// opset (or the export falls back to ATen), else one ExportError names them all, where they
// are and which opset has one (Converter::check_feasible).
#include <algorithm>
#include <sstream>

#include "export/converter.h"
#include "symbolic/complex.h"

namespace tonnx::detail {
namespace jit = torch::jit;

// Every op without a symbolic, grouped by op: how often, where first, and which opset has one.
struct Missing {
  std::string kind, first;  // first: the first node's description
  int count = 0;
  std::vector<std::string> scopes;
};

void Converter::check_feasible() {
  if (cfg_.export_type != OperatorExportTypes::ONNX) return;
  std::vector<Missing> missing;
  collect_missing(jg_->block(), missing);
  if (missing.empty()) return;
  std::ostringstream os;
  os << "ONNX export failed (opset " << cfg_.opset << "): ";
  auto line = [&](const Missing& m) {
    std::string s = "no symbolic function for " + m.first;
    if (m.count > 1) {
      s += "; " + std::to_string(m.count) + " nodes";
      if (!m.scopes.empty()) {
        s += ", in ";
        for (size_t i = 0; i < m.scopes.size(); ++i) s += (i ? ", " : "") + m.scopes[i];
        if (m.count > static_cast<int>(m.scopes.size())) s += ", ...";
      }
    }
    int next = next_opset_with_symbolic(m.kind, cfg_.opset);
    if (next > 0 && next <= kMaxOpset)
      s += "; it can be exported with opset_version=" + std::to_string(next);
    return s;
  };
  if (missing.size() == 1) {
    os << line(missing[0]);
  } else {
    os << missing.size() << " ops have no symbolic function:";
    for (const auto& m : missing) os << "\n  - " << line(m);
  }
  os << (missing.size() == 1 ? "; " : "\n")
     << "register one with tonnx::register_symbolic or export with "
        "operator_export_type=ONNX_ATEN_FALLBACK";
  throw ExportError(os.str());
}

void Converter::collect_missing(const jit::Block* b, std::vector<Missing>& missing) const {
  for (const jit::Node* n : b->nodes()) {
    for (const jit::Block* sub : n->blocks()) collect_missing(sub, missing);
    if (structural(n) || lookup(n)) continue;
    std::string kind = n->kind().toQualString();
    if (sym::complex_rule(kind)) {  // an op that only complex tensors reach (aten::_conj)
      bool complex = false;
      for (const auto& values : {n->inputs(), n->outputs()})
        for (const jit::Value* v : values) complex = complex || is_complex_type(v);
      if (complex) continue;
    }
    auto it = std::find_if(missing.begin(), missing.end(),
                           [&](const Missing& m) { return m.kind == kind; });
    if (it == missing.end()) {
      missing.push_back({kind, describe(n), 0, {}});
      it = missing.end() - 1;
    }
    ++it->count;
    std::string scope = scope_of(n);
    if (!scope.empty() && it->scopes.size() < 3 &&
        std::find(it->scopes.begin(), it->scopes.end(), scope) == it->scopes.end())
      it->scopes.push_back(scope);
  }
}

}  // namespace tonnx::detail
