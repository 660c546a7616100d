// The opset converter: steps one opset at a time, each node through its adapter
// (adapters.cpp), then checks it against the schema of the opset it arrives at.
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "ir/schemas.h"
#include "passes/opset/adapters.h"

namespace tonnx::passes::opset {

void Step::fail(const std::string& why) const {
  std::string name = n->name().empty() ? std::string() : " '" + n->name() + "'";
  throw OpsetConversionError("node" + name + " (" + n->op_type() +
                             ") cannot be converted from opset " +
                             std::to_string(up ? version - 1 : version) + " to " +
                             std::to_string(up ? version : version - 1) + ": " + why);
}

const at::Tensor* Step::constant(const ir::Value* v) const {
  if (!v) return nullptr;
  if (const at::Tensor* t = g.initializer(v)) return t;
  const ir::Node* p = v->producer();
  if (!p || p->op_type() != "Constant" || !p->domain().empty()) return nullptr;
  const ir::AttrValue* a = p->attr("value");
  return a && a->kind() == ir::AttrValue::Kind::Tensor ? &a->t() : nullptr;
}

namespace {
// A name not yet in the model (root graph, or this graph for a subgraph).
std::string fresh_name(const ir::Graph& root, const ir::Graph& g, const std::string& base,
                       int& counter) {
  for (;;) {
    std::string name = base + "_" + std::to_string(counter++);
    if (!root.find_value(name) && !g.find_value(name)) return name;
  }
}
}  // namespace

ir::Value* Step::add_constant(const at::Tensor& t, const std::string& what) {
  std::string base = (n->name().empty() ? n->op_type() : n->name()) + "_" + what + "_opset" +
                     std::to_string(up ? version : version - 1);
  return g.add_initializer(fresh_name(root, g, base, counter), t.contiguous());
}

void Step::name_new(ir::Node* m) {
  std::string base = (n->name().empty() ? n->op_type() : n->name()) + "_" + m->op_type();
  m->set_name(fresh_name(root, g, base, counter));
  for (ir::Value* o : m->outputs())
    if (o->name().empty()) o->set_name(fresh_name(root, g, m->name() + "_out", counter));
}

void Step::ints_attr_to_input(const std::string& attr, size_t index) {
  if (!n->has_attr(attr)) return;
  ir::Ints v = n->attr_ints(attr);
  n->remove_attr(attr);
  set_input(index, add_constant(at::tensor(v, at::kLong), attr));
}

void Step::input_to_ints_attr(size_t index, const std::string& attr) {
  if (!n->input(index)) return;
  const at::Tensor* t = constant(n->input(index));
  if (!t || !at::isIntegralType(t->scalar_type(), false) || t->dim() > 1)
    fail(attr + " is computed at run time (input " + std::to_string(index) +
         " is not a constant); opset " + std::to_string(up ? version : version - 1) +
         " needs it as an attribute");
  at::Tensor c = t->to(at::kLong).contiguous().reshape({-1});
  n->set_attr(attr,
              ir::AttrValue(ir::Ints(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel())));
  n->replace_input(index, nullptr);
}

void Step::refuse_attr_unless(const std::string& attr, int64_t ok, const std::string& why) {
  if (n->has_attr(attr) && n->attr_i(attr, ok) != ok) fail(why);
  n->remove_attr(attr);
}

void Step::refuse_attr_unless(const std::string& attr, const std::string& ok,
                              const std::string& why) {
  if (n->has_attr(attr) && n->attr_s(attr, ok) != ok) fail(why);
  n->remove_attr(attr);
}

void Step::refuse_input(size_t index, const std::string& why) {
  if (n->input(index)) fail(why);
}

void Step::drop_trailing_empty_inputs() { n->drop_trailing_empty_inputs(); }

void Step::set_input(size_t index, ir::Value* v) {
  while (n->inputs().size() <= index) n->add_input(nullptr);
  n->replace_input(index, v);
}

at::ScalarType Step::input_type() const {
  const ir::Value* x = n->input(0);
  if (!x || !x->type() || x->type()->dtype == ir::DType::Undefined) return at::kFloat;
  try {
    return ir::scalar_type_from_dtype(x->type()->dtype);
  } catch (const std::exception&) {
    return at::kFloat;
  }
}

at::Tensor Step::scalar_of_input_type(double v, const std::string& what) const {
  at::ScalarType t = input_type();
  if (at::isFloatingType(t)) return at::scalar_tensor(v, at::kDouble).to(t);
  at::Tensor r = at::scalar_tensor(v, at::kDouble);
  if (std::isfinite(v) && std::nearbyint(v) == v && std::abs(v) < 9.0e15) {
    at::Tensor i = r.to(t);
    if (i.to(at::kDouble).item<double>() == v) return i;
  }
  fail(what + " " + std::to_string(v) + " does not fit the input's " +
       std::string(c10::toString(t)));
}

int64_t Step::rank_of(const ir::Value* v) {
  if (!v || !v->type() || !v->type()->shape) return -1;
  return static_cast<int64_t>(v->type()->shape->size());
}

void Step::replace_with(const std::string& op, std::vector<ir::Value*> inputs,
                        std::vector<ir::Attr> attrs) {
  ir::Node* m = g.add_node(op, std::move(inputs), std::move(attrs), n->outputs().size(), "", n);
  m->set_name(n->name());
  m->set_scope(n->scope());
  m->set_doc(n->doc());
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    ir::Value* old = n->output(i);
    g.replace_all_uses(old, m->output(i));
    m->output(i)->set_type(old->type());
    std::string name = old->name();
    old->set_name({});
    m->output(i)->set_name(name);
  }
  g.remove_node(n);
  n = m;
}

void Step::replace_op(const std::string& op) {
  std::vector<ir::Value*> inputs = n->inputs();
  replace_with(op, inputs, n->attrs());
}

namespace {

const std::map<std::pair<std::string, int>, const AdapterEntry*>& adapter_index() {
  static const auto index = [] {
    std::map<std::pair<std::string, int>, const AdapterEntry*> m;
    for (const AdapterEntry& e : adapters()) m[{e.op, e.version}] = &e;
    return m;
  }();
  return index;
}

// The node, after its adapter, against the schema of `opset`.
void check_against(const Step& s, int opset) {
  const ir::Node& n = *s.n;
  std::optional<ir::SchemaView> schema = ir::schema_of(n.op_type(), opset, "");
  if (!schema) s.fail(n.op_type() + " does not exist at opset " + std::to_string(opset));
  if (schema->deprecated) s.fail(n.op_type() + " is deprecated at opset " + std::to_string(opset));
  for (const ir::Attr& a : n.attrs())
    if (!schema->attrs.count(a.name))
      s.fail("attribute '" + a.name + "' does not exist in " + n.op_type() + "-" +
             std::to_string(schema->since));
  int in = static_cast<int>(n.inputs().size()), out = static_cast<int>(n.outputs().size());
  if (in < schema->min_in || in > schema->max_in || out < schema->min_out || out > schema->max_out)
    s.fail("its " + std::to_string(in) + " inputs and " + std::to_string(out) +
           " outputs do not fit " + n.op_type() + "-" + std::to_string(schema->since));
}

// A negative axis (attribute axis or axes) counted from the rank it refers to, where the value
// types say it: OneHot's and Unsqueeze's count in the output, the others' in input 0.
void positive_axes(Step& s) {
  ir::Node& n = *s.n;
  bool of_output = n.op_type() == "OneHot" || n.op_type() == "Unsqueeze";
  int64_t r = Step::rank_of(of_output ? n.output(0) : n.input(0));
  for (const char* attr : {"axis", "axes"}) {
    const ir::AttrValue* a = n.attr(attr);
    if (!a || (a->kind() != ir::AttrValue::Kind::Int && a->kind() != ir::AttrValue::Kind::Ints))
      continue;
    bool one = a->kind() == ir::AttrValue::Kind::Int;
    ir::Ints v = one ? ir::Ints{a->i()} : a->ints();
    bool changed = false;
    for (int64_t& x : v) {
      if (x >= 0) continue;
      if (r < 0 || x < -r)
        s.fail("a negative " + std::string(attr) + " (" + std::to_string(x) +
               ") exists from opset 11, and the rank it counts from is not known here");
      x += r;
      changed = true;
    }
    if (changed) n.set_attr(attr, one ? ir::AttrValue(v[0]) : ir::AttrValue(v));
  }
}

// One step of `g` (and its subgraphs) between `version - 1` and `version`.
size_t step_graph(ir::Graph& g, ir::Graph& root, int version, bool up, int& counter) {
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  size_t changed = 0;
  for (ir::Node* node : nodes) {
    for (const ir::Attr& a : node->attrs())
      if (a.value.kind() == ir::AttrValue::Kind::Graph && a.value.g())
        changed += step_graph(*a.value.g(), root, version, up, counter);
    if (!node->domain().empty()) continue;
    Step s{g, node, version, up, counter, root};
    // Negative axes exist from opset 11: made positive where the rank they count from is known.
    if (!up && version == 11) positive_axes(s);
    auto it = adapter_index().find({node->op_type(), version});
    Adapter adapt = it == adapter_index().end() ? nullptr : up ? it->second->up : it->second->down;
    if (adapt) {
      adapt(s);
      s.drop_trailing_empty_inputs();
      ++changed;
    }
    check_against(s, up ? version : version - 1);
  }
  return changed;
}

}  // namespace
}  // namespace tonnx::passes::opset

namespace tonnx {

OpsetConversion convert_opset(ir::Model& m, int target) {
  auto range = [](int v) { return v >= kMinConvertOpset && v <= kMaxConvertOpset; };
  if (!range(target))
    throw std::invalid_argument("the target opset " + std::to_string(target) +
                                " is out of range: tonnx converts between opsets " +
                                std::to_string(kMinConvertOpset) + " and " +
                                std::to_string(kMaxConvertOpset));
  int64_t from = ir::opset_version(m.opsets, "");
  if (from < 0) throw std::invalid_argument("the model imports no ai.onnx opset");
  if (!range(static_cast<int>(from)))
    throw std::invalid_argument("the model imports ai.onnx opset " + std::to_string(from) +
                                "; tonnx converts between opsets " +
                                std::to_string(kMinConvertOpset) + " and " +
                                std::to_string(kMaxConvertOpset));
  OpsetConversion r;
  r.from = static_cast<int>(from);
  r.to = target;
  int counter = 0;
  if (target > from)
    for (int v = r.from + 1; v <= target; ++v)
      r.nodes_changed += passes::opset::step_graph(*m.graph, *m.graph, v, true, counter);
  else
    for (int v = r.from; v > target; --v)
      r.nodes_changed += passes::opset::step_graph(*m.graph, *m.graph, v, false, counter);
  for (ir::OpsetImport& o : m.opsets)
    if (o.domain.empty()) o.version = target;
  // The IR version each opset needs at least (ONNX's versioning table), and at most 8 for the
  // opsets libonnx 1.12 checks.
  int64_t need = target >= 23   ? 11
                 : target >= 21 ? 10
                 : target >= 19 ? 9
                 : target >= 15 ? 8
                 : target >= 12 ? 7
                 : target >= 11 ? 6
                 : target >= 10 ? 5
                                : 4;
  m.ir_version = std::max(m.ir_version, need);
  if (target <= 17) m.ir_version = std::min<int64_t>(m.ir_version, 8);
  return r;
}

}  // namespace tonnx
