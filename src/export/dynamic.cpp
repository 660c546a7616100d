// Dynamic axes for C++ traces. LibTorch's C++ Tensor::size() does not go through the
// dispatcher, so a trace records the sizes it saw as constants (Python's tracer records
// aten::size instead). tonnx traces twice more with the dynamic axes grown by different
// amounts, compares the three graphs node by node, and replaces every integer constant that
// changed by the arithmetic on the inputs' sizes that explains all three values (d, c*d,
// c*d1*d2, c*d + e); the third trace rules out explanations that fit two by chance. The rewritten
// graph uses aten::size/mul/add, which convert to Shape, Gather, Mul and Add: the ONNX graph then
// computes those sizes at run time.
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "export/converter.h"
#include "export/trace.h"

namespace tonnx::detail {
namespace jit = torch::jit;

namespace {

// value = coef * prod(dims[syms]) + offset
struct Expr {
  std::vector<size_t> syms;
  int64_t coef = 1, offset = 0;
};

int64_t value_at(const Expr& e, const std::vector<DynamicDim>& dims, int64_t DynamicDim::*size) {
  int64_t v = e.coef;
  for (size_t s : e.syms) v *= dims[s].*size;
  return v + e.offset;
}

// The first simple expression (d, c*d, c*d1*d2, c*d + e) that gives va, vb and vc at the
// sizes of traces a, b and c.
std::optional<Expr> explain(int64_t va, int64_t vb, int64_t vc,
                            const std::vector<DynamicDim>& dims) {
  const size_t n = dims.size();
  std::vector<Expr> candidates;
  for (size_t k = 0; k < n; ++k) candidates.push_back(Expr{{k}, 1, 0});
  for (size_t k = 0; k < n; ++k) {
    int64_t a = dims[k].size_a;
    if (a != 0 && va % a == 0) candidates.push_back(Expr{{k}, va / a, 0});
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i; j < n; ++j) {
      int64_t pa = dims[i].size_a * dims[j].size_a;
      if (pa != 0 && va % pa == 0) candidates.push_back(Expr{{i, j}, va / pa, 0});
    }
  for (size_t k = 0; k < n; ++k) {
    int64_t a = dims[k].size_a, b = dims[k].size_b;
    if ((vb - va) % (b - a) == 0) {
      int64_t c = (vb - va) / (b - a);
      if (c != 0) candidates.push_back(Expr{{k}, c, va - c * a});
    }
  }
  for (const Expr& e : candidates)
    if (value_at(e, dims, &DynamicDim::size_a) == va &&
        value_at(e, dims, &DynamicDim::size_b) == vb &&
        value_at(e, dims, &DynamicDim::size_c) == vc)
      return e;
  return std::nullopt;
}

std::string describe_use(const jit::Value* v) {
  std::ostringstream os;
  for (const jit::Use& u : v->uses()) {
    os << u.user->kind().toQualString();
    auto* n = const_cast<jit::Node*>(u.user);
    if (n->scope() && !n->scope()->isBlank())
      os << " (scope " << n->scope()->namesFromRoot() << ")";
    break;
  }
  return os.str();
}

class Rewriter {
 public:
  Rewriter(TraceResult& a, const std::vector<DynamicDim>& dims) : g_(*a.graph), dims_(dims) {}

  // The jit value computing `e` from the inputs' sizes, inserted at the current point.
  jit::Value* emit(const Expr& e) {
    jit::Value* v = nullptr;
    for (size_t s : e.syms) {
      jit::Value* d = size_of(s);
      v = v ? g_.insert(c10::aten::mul, {v, d}) : d;
    }
    if (e.coef != 1) v = g_.insert(c10::aten::mul, {v, g_.insertConstant(e.coef)});
    if (e.offset != 0) v = g_.insert(c10::aten::add, {v, g_.insertConstant(e.offset)});
    return v;
  }

 private:
  jit::Value* size_of(size_t sym) {
    const auto& [input, axis] = dims_[sym].uses.front();
    return g_.insert(c10::aten::size, {g_.inputs()[input], g_.insertConstant(axis)});
  }
  jit::Graph& g_;
  const std::vector<DynamicDim>& dims_;
};

[[noreturn]] void cannot(const jit::Value* v, const std::string& what) {
  throw ExportError("dynamic_axes: " + what + " (used by " + describe_use(v) +
                    "). Compute such values from tensor ops, or export with static shapes");
}

}  // namespace

void generalize_sizes(TraceResult& a, const TraceResult& b, const TraceResult& c,
                      const std::vector<DynamicDim>& dims) {
  std::vector<jit::Node*> na(a.graph->nodes().begin(), a.graph->nodes().end());
  std::vector<jit::Node*> nb(b.graph->nodes().begin(), b.graph->nodes().end());
  std::vector<jit::Node*> nc(c.graph->nodes().begin(), c.graph->nodes().end());
  auto structure_error = [&](size_t i) {
    std::string where =
        i < na.size() ? na[i]->kind().toQualString() : std::string("the end of the graph");
    throw ExportError(
        "dynamic_axes: the model records different ops when the dynamic axes change size (first "
        "at " +
        where + ", node " + std::to_string(i) +
        "): its control flow depends on them, so one trace cannot represent it");
  };
  if (na.size() != nb.size() || na.size() != nc.size())
    structure_error(std::min({na.size(), nb.size(), nc.size()}));
  Rewriter rw(a, dims);
  auto not_explained = [&](const jit::Value* v, int64_t value) {
    cannot(v, "the size " + std::to_string(value) +
                  " changes with the dynamic axes but is not a simple function of them "
                  "(d, c*d, c*d1*d2, c*d + e)");
  };
  for (size_t i = 0; i < na.size(); ++i) {
    jit::Node* x = na[i];
    for (const std::vector<jit::Node*>* other : {&nb, &nc})
      if (x->kind() != (*other)[i]->kind() || x->inputs().size() != (*other)[i]->inputs().size())
        structure_error(i);
    if (x->kind() != c10::prim::Constant || !x->hasUses()) continue;
    auto va = jit::toIValue(x->output()), vb = jit::toIValue(nb[i]->output()),
         vc = jit::toIValue(nc[i]->output());
    if (!va || !vb || !vc) continue;
    if (va->isInt() && vb->isInt() && vc->isInt()) {
      if (va->toInt() == vb->toInt() && va->toInt() == vc->toInt()) continue;
      auto e = explain(va->toInt(), vb->toInt(), vc->toInt(), dims);
      if (!e) not_explained(x->output(), va->toInt());
      jit::WithInsertPoint guard(x->next());
      x->output()->replaceAllUsesWith(rw.emit(*e));
      continue;
    }
    if (va->isIntList() && vb->isIntList() && vc->isIntList()) {
      auto la = va->toIntVector(), lb = vb->toIntVector(), lc = vc->toIntVector();
      if (la == lb && la == lc) continue;
      if (la.size() != lb.size() || la.size() != lc.size())
        cannot(x->output(), "a list of sizes changes length with the dynamic axes");
      jit::WithInsertPoint guard(x->next());
      std::vector<jit::Value*> elems;
      for (size_t k = 0; k < la.size(); ++k) {
        if (la[k] == lb[k] && la[k] == lc[k]) {
          elems.push_back(a.graph->insertConstant(la[k]));
          continue;
        }
        auto e = explain(la[k], lb[k], lc[k], dims);
        if (!e) not_explained(x->output(), la[k]);
        elems.push_back(rw.emit(*e));
      }
      jit::Node* list = a.graph->insertNode(a.graph->createList(c10::IntType::get(), elems));
      x->output()->replaceAllUsesWith(list->output());
      continue;
    }
    if (va->isTensor() && vb->isTensor() && vc->isTensor()) {
      const at::Tensor &ta = va->toTensor(), &tb = vb->toTensor(), &tc = vc->toTensor();
      auto same = [](const at::Tensor& p, const at::Tensor& q) {
        return p.sizes() == q.sizes() && p.scalar_type() == q.scalar_type() && at::equal(p, q);
      };
      if (same(ta, tb) && same(ta, tc)) continue;
      if (ta.dim() == 0 && tb.dim() == 0 && tc.dim() == 0 &&
          !at::isFloatingType(ta.scalar_type())) {
        auto e = explain(ta.item<int64_t>(), tb.item<int64_t>(), tc.item<int64_t>(), dims);
        if (e) {
          jit::WithInsertPoint guard(x->next());
          jit::Value* v = rw.emit(*e);
          x->output()->replaceAllUsesWith(a.graph->insert(c10::prim::NumToTensor, {v}));
          continue;
        }
      }
      cannot(x->output(), "a constant tensor of shape " + c10::str(ta.sizes()) +
                              " changes with the dynamic axes");
    }
    if (va->isDouble() && vb->isDouble() && vc->isDouble() &&
        (va->toDouble() != vb->toDouble() || va->toDouble() != vc->toDouble()))
      cannot(x->output(),
             "the number " + std::to_string(va->toDouble()) + " changes with the dynamic axes");
  }
}

std::vector<std::string> drop_unknown_dynamic_axes(
    std::map<std::string, std::map<int64_t, std::string>>& axes,
    const std::set<std::string>& inputs, const std::vector<std::string>& outputs, bool ignore) {
  std::vector<std::string> warnings;
  for (auto it = axes.begin(); it != axes.end();) {
    const std::string& name = it->first;
    if (inputs.count(name) || std::count(outputs.begin(), outputs.end(), name)) {
      ++it;
      continue;
    }
    std::string what = "dynamic_axes names '" + name +
                       "', which is neither an input name nor an output name (outputs without "
                       "output_names are named output_0, output_1, ...)";
    if (!ignore)
      throw ExportError(what +
                        "; to ignore it with a warning, as torch.onnx does, set "
                        "ignore_unknown_dynamic_axes (--ignore-unknown-dynamic-axes)");
    warnings.push_back(what + ": ignored, so its axes stay static");
    std::cerr << "tonnx: warning: " << warnings.back() << "\n";
    it = axes.erase(it);
  }
  return warnings;
}

namespace {

// Grows `t` along `axis` to `size` by repeating its leading slices: values stay in the
// input's own domain (token ids stay valid ids).
torch::Tensor grow(const torch::Tensor& t, int64_t axis, int64_t size) {
  int64_t have = t.size(axis);
  if (have == 0) {
    std::vector<int64_t> shape = t.sizes().vec();
    shape[axis] = size;
    return torch::zeros(shape, t.options());
  }
  std::vector<torch::Tensor> parts{t};
  int64_t total = have;
  while (total < size) {
    int64_t take = std::min(have, size - total);
    parts.push_back(t.narrow(axis, 0, take));
    total += take;
  }
  return torch::cat(parts, axis);
}

}  // namespace

std::vector<DynamicDim> dynamic_dims(
    const std::vector<torch::Tensor>& args,
    const std::map<std::string, std::map<int64_t, std::string>>& dynamic_axes,
    const std::vector<std::string>& input_names) {
  std::vector<DynamicDim> dims;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = i < input_names.size() ? input_names[i] : default_input_name(i, args.size());
    auto it = dynamic_axes.find(name);
    if (it == dynamic_axes.end()) continue;
    for (const auto& [axis0, sym] : it->second) {
      int64_t rank = args[i].dim();
      std::optional<int64_t> axis = ir::normalize_axis(axis0, rank);
      if (!axis)
        throw ExportError("dynamic_axes for '" + name + "': axis " + std::to_string(axis0) +
                          " is out of range for an input of rank " + std::to_string(rank));
      auto d = std::find_if(dims.begin(), dims.end(),
                            [&sym = sym](const DynamicDim& x) { return x.symbol == sym; });
      if (d == dims.end()) {
        dims.push_back({sym, {}, args[i].size(*axis), 0});
        d = dims.end() - 1;
      } else if (d->size_a != args[i].size(*axis)) {
        throw ExportError("dynamic axis '" + sym + "' has size " + std::to_string(d->size_a) +
                          " in one input and " + std::to_string(args[i].size(*axis)) + " in '" +
                          name + "'; the example inputs must agree");
      }
      d->uses.push_back({i, *axis});
    }
  }
  const int64_t n = static_cast<int64_t>(dims.size());
  for (int64_t k = 0; k < n; ++k) {
    dims[k].size_b = dims[k].size_a + k + 1;
    dims[k].size_c = dims[k].size_a + n - k + 2;
  }
  return dims;
}

std::vector<torch::Tensor> grown_inputs(const std::vector<torch::Tensor>& args,
                                        const std::vector<DynamicDim>& dims,
                                        int64_t DynamicDim::*size) {
  std::vector<torch::Tensor> grown = args;
  for (const auto& d : dims)
    for (const auto& [i, axis] : d.uses) grown[i] = grow(grown[i], axis, d.*size);
  return grown;
}

}  // namespace tonnx::detail
