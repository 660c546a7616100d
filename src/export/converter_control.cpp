// The converter's control flow (converter.h): prim::If / prim::Loop of scripted graphs become
// ONNX If / Loop with their blocks as subgraphs.
#include <ATen/ATen.h>

#include <set>

#include "export/converter.h"
#include "passes/passes.h"

namespace tonnx::detail {
namespace jit = torch::jit;

namespace {
// Subgraph boundaries keep dtype and rank only: the sizes seen on the example inputs may
// differ on other iterations or branches.
std::optional<ir::TensorType> rank_only(std::optional<ir::TensorType> t) {
  if (t && t->shape)
    for (ir::Dim& d : *t->shape) d = ir::Dim{};
  return t;
}
}  // namespace

ir::Value* Converter::copy_of(ir::Value* v) {
  ir::Value* out;
  if (v->is_sequence() && cfg_.opset < 14) {
    // Identity takes sequences from opset 14: insert an element and erase it again.
    ir::DType dt = v->sequence_elem()->dtype;
    ir::Value* c = constant(at::zeros({0}, ir::scalar_type_from_dtype(dt)));
    ir::Value* longer = emit("SequenceInsert", {v, c}, {}, 1, "")->output();
    longer->set_sequence_elem(v->sequence_elem());
    ir::Value* last = constant(at::scalar_tensor(int64_t{-1}, at::kLong));
    out = emit("SequenceErase", {longer, last}, {}, 1, "")->output();
  } else {
    out = emit("Identity", {v}, {}, 1, "")->output();
  }
  out->set_type(v->type());
  out->set_sequence_elem(v->sequence_elem());
  if (const QParams* q = qparams(v)) {  // a copy of a quantized value is one, alike
    QParams same = *q;
    qparams_[out] = same;
  }
  return out;
}

ir::Value* Converter::as_bool_scalar(ir::Value* v) {
  const auto& t = v->type();
  bool is_bool = t && t->dtype == ir::DType::Bool;
  bool is_scalar = t && t->shape && t->shape->empty();
  if (!is_bool) {
    ir::Value* c =
        emit("Cast", {v}, {{"to", static_cast<int64_t>(ir::DType::Bool)}}, 1, "")->output();
    c->set_type(ir::TensorType{ir::DType::Bool, t ? t->shape : std::nullopt});
    v = c;
  }
  if (!is_scalar) {
    ir::Value* shape = constant(at::empty({0}, at::kLong));
    v = emit("Reshape", {v, shape}, {}, 1, "")->output();
    v->set_type(ir::TensorType{ir::DType::Bool, std::vector<ir::Dim>{}});
  }
  return v;
}

std::vector<ir::Value*> Converter::block_outputs(const jit::Block* b, size_t first,
                                                 const std::vector<const ir::Value*>& partners) {
  std::vector<ir::Value*> outs;
  for (size_t k = first; k < b->outputs().size(); ++k) {
    const jit::Value* o = b->outputs()[k];
    ir::Value* v = nullptr;
    if (o->node()->kind() == c10::prim::Uninitialized) {
      if (k < partners.size()) v = placeholder(o, partners[k]);
    } else {
      v = is_tensor_list_type(o->type()) ? sequence_of(o) : tensor_of(o);
      if (!v)
        fail(b->owningNode(), "output " + std::to_string(k) + " of a block is None (of type " +
                                  o->type()->annotation_str() + "); ONNX subgraphs return tensors");
      if (!v->type()) v->set_type(jit_type(o));
    }
    outs.push_back(v);
  }
  return outs;
}

std::shared_ptr<ir::Graph> Converter::finish_block(const std::vector<ir::Value*>& outs,
                                                   const std::string& name) {
  // The caller has pushed the subgraph and its binding scope, bound the block's inputs and
  // converted its nodes and outputs.
  ir::Graph& g = graph();
  g.name = name;
  std::set<ir::Value*> seen;
  for (ir::Value* v : outs) {
    // ONNX wants each subgraph output computed inside it, once.
    if (!v->producer() || v->producer()->owner() != &g || !seen.insert(v).second) {
      v = copy_of(v);
      seen.insert(v);
    }
    v->set_type(rank_only(v->type()));
    v->set_sequence_elem(rank_only(v->sequence_elem()));
    g.add_output(v);
  }
  passes::eliminate_dead_code(g);
  // Names unique across the whole model (ONNX forbids shadowing outer-scope names); the
  // main graph's values are numbered later, so a prefix keeps them apart.
  std::string prefix = name + "_" + std::to_string(++subgraph_count_) + "_";
  int counter = 0;
  for (const auto& node : g.nodes())
    for (ir::Value* v : node->outputs())
      if (v->name().empty()) v->set_name(prefix + std::to_string(counter++));
  env_.pop_back();
  lists_.pop_back();
  auto done = graphs_.back();
  graphs_.pop_back();
  return done;
}

namespace {
std::string sequence_opset_error(const char* what) {
  return std::string(what) +
         " as an ONNX sequence, which Loop and If take from opset 13; export with "
         "opset_version=13 or newer";
}

std::string control_flow_opset_error(const char* what) {
  return std::string("scripted control flow (") + what +
         ") is exported as ONNX If/Loop with values of any shape, which needs opset 11 or "
         "newer; export with opset_version=11 or newer";
}
}  // namespace

void Converter::convert_if(const jit::Node* n) {
  if (cfg_.opset < 11) fail(n, control_flow_opset_error("prim::If"));
  ir::Value* cond = tensor_of(n->input(0));
  if (!cond) fail(n, "the condition is None");
  cond = as_bool_scalar(cond);
  for (const jit::Value* o : n->outputs())
    if (is_tensor_list_type(o->type()) && cfg_.opset < 13)
      fail(n,
           sequence_opset_error("a list that a branch makes or changes is an output of ONNX's If"));
  // A branch that returns early or raises has prim::Uninitialized outputs, typed like the other
  // branch's: both are converted, then set aside until the other's outputs are known.
  struct Converted {
    std::shared_ptr<ir::Graph> graph;
    std::unordered_map<const jit::Value*, ir::Value*> env;
    std::unordered_map<const jit::Value*, std::vector<ir::Value*>> lists;
    std::vector<ir::Value*> outs;
  } branch[2];
  for (size_t k = 0; k < 2; ++k) {
    graphs_.push_back(std::make_shared<ir::Graph>());
    env_.emplace_back();
    lists_.emplace_back();
    for (const jit::Node* bn : n->blocks()[k]->nodes()) convert_node(bn);
    current_ = n;
    std::vector<ir::Value*> outs = block_outputs(n->blocks()[k], 0, {});
    branch[k] = {graphs_.back(), std::move(env_.back()), std::move(lists_.back()), outs};
    graphs_.pop_back();
    env_.pop_back();
    lists_.pop_back();
  }
  std::vector<ir::Attr> attrs;
  const char* names[] = {"then_branch", "else_branch"};
  for (size_t k = 0; k < 2; ++k) {
    graphs_.push_back(branch[k].graph);
    env_.push_back(std::move(branch[k].env));
    lists_.push_back(std::move(branch[k].lists));
    const std::vector<ir::Value*>& other = branch[1 - k].outs;
    for (size_t i = 0; i < branch[k].outs.size(); ++i)
      if (!branch[k].outs[i])
        branch[k].outs[i] = placeholder(n->blocks()[k]->outputs()[i], other[i]);
    attrs.push_back({names[k], finish_block(branch[k].outs, names[k])});
  }
  current_ = n;
  ir::Node* node = emit("If", {cond}, std::move(attrs), n->outputs().size(), "");
  bind_control_outputs(n, node);
  quantized_if_outputs(n, node, branch[0].outs, branch[1].outs);
  for (size_t i = 0; i < n->outputs().size(); ++i) {  // complex results: from both or neither
    int complex[2];                                   // -1: the branch never returns there
    for (size_t k = 0; k < 2; ++k)
      complex[k] = n->blocks()[k]->outputs()[i]->node()->kind() == c10::prim::Uninitialized
                       ? -1
                       : int{is_complex_value(branch[k].outs[i])};
    if (complex[0] >= 0 && complex[1] >= 0 && complex[0] != complex[1])
      fail(n, "output " + std::to_string(i) +
                  " of this If is a complex tensor in one branch and a real one in the other; "
                  "make both complex (or both real)");
    if (complex[0] > 0 || complex[1] > 0) mark_complex(node->output(i));
  }
  // Outputs the trace left untyped (a branch that returns early) take their branches' type.
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    ir::Value* v = node->output(i);
    if (v->is_sequence() || (v->type() && v->type()->dtype != ir::DType::Undefined)) continue;
    for (size_t k = 0; k < 2; ++k)
      if (n->blocks()[k]->outputs()[i]->node()->kind() != c10::prim::Uninitialized &&
          branch[k].outs[i]->type()) {
        v->set_type(rank_only(branch[k].outs[i]->type()));
        break;
      }
  }
}

void Converter::bind_control_outputs(const jit::Node* n, ir::Node* node) {
  for (size_t k = 0; k < n->outputs().size(); ++k) {
    const jit::Value* jo = n->output(k);
    ir::Value* v = node->output(k);
    if (is_tensor_list_type(jo->type())) {
      mark_sequence(v, jo);
    } else if (auto t = number_list_type(jo->type())) {  // int[] / float[] / bool[]
      v->set_type(t);
    } else {
      v->set_type(jit_type(jo));
    }
    bind(jo, v);
  }
}

void Converter::convert_loop(const jit::Node* n) {
  if (cfg_.opset < 11) fail(n, control_flow_opset_error("prim::Loop"));
  ir::Value* max_trip = tensor_of(n->input(0));
  ir::Value* cond = tensor_of(n->input(1));
  if (!max_trip || !cond) fail(n, "the trip count or the condition is None");
  if (!max_trip->type() || max_trip->type()->dtype != ir::DType::Int64) {
    max_trip =
        emit("Cast", {max_trip}, {{"to", static_cast<int64_t>(ir::DType::Int64)}}, 1, "")->output();
    max_trip->set_type(ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{}});
  }
  cond = as_bool_scalar(cond);
  std::vector<ir::Value*> inputs{max_trip, cond};
  for (size_t k = 2; k < n->inputs().size(); ++k) {
    if (is_tensor_list_type(n->input(k)->type()) && cfg_.opset < 13)
      fail(n, sequence_opset_error("a list that changes in a loop is carried by ONNX's Loop"));
    ir::Value* v = is_tensor_list_type(n->input(k)->type()) ? sequence_of(n->input(k))
                                                            : tensor_of(n->input(k));
    if (!v)
      fail(n, "loop-carried value " + std::to_string(k - 2) + " is None (of type " +
                  n->input(k)->type()->annotation_str() + "); ONNX Loop carries tensors");
    inputs.push_back(v);
  }
  const jit::Block* body = n->blocks()[0];
  auto g = std::make_shared<ir::Graph>();
  graphs_.push_back(g);
  env_.emplace_back();
  lists_.emplace_back();
  std::string prefix = "loop_body_" + std::to_string(++subgraph_count_) + "_in_";
  ir::Value* iter =
      g->add_input(prefix + "iter", ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{}});
  bind(body->inputs()[0], iter);
  g->add_input(prefix + "cond", ir::TensorType{ir::DType::Bool, std::vector<ir::Dim>{}});
  for (size_t k = 1; k < body->inputs().size(); ++k) {
    std::optional<ir::TensorType> t = jit_type(body->inputs()[k]);
    if (!t || t->dtype == ir::DType::Undefined) t = inputs[k + 1]->type();
    ir::Value* in = g->add_input(prefix + std::to_string(k), rank_only(t));
    in->set_sequence_elem(rank_only(inputs[k + 1]->sequence_elem()));
    bind(body->inputs()[k], in);
  }
  // The body's first output is the condition of the next iteration.
  for (const jit::Node* bn : body->nodes()) convert_node(bn);
  current_ = n;
  ir::Value* next = tensor_of(body->outputs()[0]);
  if (!next) fail(n, "the loop condition is None");
  next = as_bool_scalar(next);
  std::vector<const ir::Value*> partners(inputs.begin() + 1, inputs.end());
  std::vector<ir::Value*> outs{next};
  for (ir::Value* v : block_outputs(body, 1, partners)) outs.push_back(v);
  bool complex = false;
  for (const std::vector<ir::Value*>* values : {&inputs, &outs})
    for (ir::Value* v : *values) complex = complex || (v && is_complex_value(v));
  if (complex)
    fail(n,
         "a complex tensor is carried through this loop; tonnx carries complex tensors only "
         "outside loops (carry torch.view_as_real(x) and call torch.view_as_complex inside)");
  std::shared_ptr<ir::Graph> done = finish_block(outs, "loop_body");
  current_ = n;
  ir::Node* node = emit("Loop", inputs, {{"body", done}}, n->outputs().size(), "");
  bind_control_outputs(n, node);
}

}  // namespace tonnx::detail
