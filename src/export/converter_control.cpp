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

std::shared_ptr<ir::Graph> Converter::finish_block(const jit::Block* b,
                                                   const std::vector<ir::Value*>& first_outputs,
                                                   const std::string& name) {
  // The caller has pushed the subgraph and its binding scope, bound the block's inputs and
  // converted its nodes.
  ir::Graph& g = graph();
  g.name = name;
  std::vector<ir::Value*> outs = first_outputs;
  for (size_t k = first_outputs.size(); k < b->outputs().size(); ++k) {
    const jit::Value* o = b->outputs()[k];
    ir::Value* v = tensor_of(o);
    if (!v)
      fail(b->owningNode(), "output " + std::to_string(k) + " of a block is None (of type " +
                                o->type()->annotation_str() + "); ONNX subgraphs return tensors");
    if (!v->type()) v->set_type(jit_type(o));
    outs.push_back(v);
  }
  std::set<ir::Value*> seen;
  for (ir::Value* v : outs) {
    // ONNX wants each subgraph output computed inside it, once.
    if (!v->producer() || v->producer()->owner() != &g || !seen.insert(v).second) {
      ir::Value* id = emit("Identity", {v}, {}, 1, "")->output();
      id->set_type(v->type());
      v = id;
      seen.insert(v);
    }
    v->set_type(rank_only(v->type()));
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
  std::vector<ir::Attr> attrs;
  const char* names[] = {"then_branch", "else_branch"};
  for (size_t k = 0; k < 2; ++k) {
    graphs_.push_back(std::make_shared<ir::Graph>());
    env_.emplace_back();
    lists_.emplace_back();
    for (const jit::Node* bn : n->blocks()[k]->nodes()) convert_node(bn);
    current_ = n;
    attrs.push_back({names[k], finish_block(n->blocks()[k], {}, names[k])});
  }
  current_ = n;
  ir::Node* node = emit("If", {cond}, std::move(attrs), n->outputs().size(), "");
  bind_outputs(n, std::vector<ir::Value*>(node->outputs().begin(), node->outputs().end()));
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
    ir::Value* v = tensor_of(n->input(k));
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
    bind(body->inputs()[k], g->add_input(prefix + std::to_string(k), rank_only(t)));
  }
  // The body's first output is the condition of the next iteration.
  for (const jit::Node* bn : body->nodes()) convert_node(bn);
  current_ = n;
  ir::Value* next = tensor_of(body->outputs()[0]);
  if (!next) fail(n, "the loop condition is None");
  next = as_bool_scalar(next);
  std::shared_ptr<ir::Graph> done = finish_block(body, {next}, "loop_body");
  current_ = n;
  ir::Node* node = emit("Loop", inputs, {{"body", done}}, n->outputs().size(), "");
  bind_outputs(n, std::vector<ir::Value*>(node->outputs().begin(), node->outputs().end()));
}

}  // namespace tonnx::detail
