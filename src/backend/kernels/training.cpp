// ai.onnx.preview.training: the optimizer updates (Adagrad, Adam, Momentum) and Gradient.
// The optimizers are the formulas of ONNX's operator spec, computed in the inputs' float type
// with the scalar coefficients in double. Gradient recomputes, under LibTorch's autograd, the
// part of its graph that leads from `xs` to `y` and differentiates it.
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <set>

#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

const std::string kTraining = "ai.onnx.preview.training";

// R (learning rate) and T (update count): one-element tensors.
double scalar_input(const ir::Node& n, const Tensors& in, size_t i, const char* what) {
  const at::Tensor& t = in.at(i);
  if (!t.defined() || t.numel() != 1)
    kernel_fail(n, std::string(what) + " must be a one-element tensor but has " +
                       (t.defined() ? std::to_string(t.numel()) : std::string("no")) + " elements");
  return t.to(at::kDouble).item<double>();
}

// The number of optimized tensors: inputs are R, T and `groups` lists of that many tensors
// (X, G, then the optimizer's states), outputs `groups - 1` such lists (X_new, the states).
int64_t optimized_count(const ir::Node& n, size_t groups) {
  size_t tensors = n.inputs().size() < 2 ? 0 : n.inputs().size() - 2;
  if (tensors == 0 || tensors % groups != 0)
    kernel_fail(n, "takes R, T and " + std::to_string(groups) +
                       " lists of equal length (X, G and the states) but has " +
                       std::to_string(n.inputs().size()) + " inputs");
  size_t count = tensors / groups;
  if (n.outputs().size() != count * (groups - 1))
    kernel_fail(n, "has " + std::to_string(n.outputs().size()) + " outputs; with " +
                       std::to_string(count) + " optimized tensors it must have " +
                       std::to_string(count * (groups - 1)));
  return static_cast<int64_t>(count);
}

// Input `group`'s tensor `i` (group 0 is X), checked to be a float tensor of X's shape.
const at::Tensor& member(const ir::Node& n, const Tensors& in, int64_t count, int group,
                         int64_t i) {
  const at::Tensor& t = in.at(2 + group * count + i);
  const at::Tensor& x = in.at(2 + i);
  if (!t.defined() || !at::isFloatingType(t.scalar_type()))
    kernel_fail(
        n, "input " + std::to_string(2 + group * count + i) + " must be a floating-point tensor");
  if (t.sizes() != x.sizes())
    kernel_fail(n, "input " + std::to_string(2 + group * count + i) + " has shape " +
                       c10::str(t.sizes()) + " but its X (input " + std::to_string(2 + i) +
                       ") has shape " + c10::str(x.sizes()));
  return t;
}

TONNX_KERNEL_DOMAIN("Adagrad", kTraining, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t count = optimized_count(n, 3);
  double decay = n.attr_f("decay_factor", 0.0f), eps = n.attr_f("epsilon", 1e-6f);
  double norm = n.attr_f("norm_coefficient", 0.0f);
  return [&n, count, decay, eps, norm](const Tensors& in) -> Tensors {
    double r = scalar_input(n, in, 0, "R (learning rate)");
    double t = scalar_input(n, in, 1, "T (update count)");
    double rate = r / (1 + t * decay);
    Tensors out(2 * count);
    for (int64_t i = 0; i < count; ++i) {
      const at::Tensor& x = member(n, in, count, 0, i);
      at::Tensor g = norm * x + member(n, in, count, 1, i);
      at::Tensor h = member(n, in, count, 2, i) + g * g;
      out[i] = x - rate * g / (at::sqrt(h) + eps);
      out[count + i] = h;
    }
    return out;
  };
});

TONNX_KERNEL_DOMAIN("Momentum", kTraining, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t count = optimized_count(n, 3);
  for (const char* a : {"alpha", "beta", "norm_coefficient", "mode"})
    if (!n.has_attr(a)) kernel_fail(n, std::string("attribute '") + a + "' is required");
  double alpha = n.attr_f("alpha", 0), beta = n.attr_f("beta", 0);
  double norm = n.attr_f("norm_coefficient", 0);
  std::string mode = n.attr_s("mode", "");
  if (mode != "standard" && mode != "nesterov")
    kernel_fail(n, "mode is '" + mode + "'; expected 'standard' or 'nesterov'");
  bool nesterov = mode == "nesterov";
  return [&n, count, alpha, beta, norm, nesterov](const Tensors& in) -> Tensors {
    double r = scalar_input(n, in, 0, "R (learning rate)");
    double t = scalar_input(n, in, 1, "T (update count)");
    double beta_t = t > 0 ? beta : 1.0;  // the first update takes the whole gradient
    Tensors out(2 * count);
    for (int64_t i = 0; i < count; ++i) {
      const at::Tensor& x = member(n, in, count, 0, i);
      at::Tensor g = norm * x + member(n, in, count, 1, i);
      at::Tensor v = alpha * member(n, in, count, 2, i) + beta_t * g;
      out[i] = nesterov ? x - r * (g + alpha * v) : x - r * v;
      out[count + i] = v;
    }
    return out;
  };
});

TONNX_KERNEL_DOMAIN("Adam", kTraining, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t count = optimized_count(n, 4);
  double alpha = n.attr_f("alpha", 0.9f), beta = n.attr_f("beta", 0.999f);
  double eps = n.attr_f("epsilon", 1e-6f), norm = n.attr_f("norm_coefficient", 0.0f);
  double post = n.attr_f("norm_coefficient_post", 0.0f);
  return [&n, count, alpha, beta, eps, norm, post](const Tensors& in) -> Tensors {
    double r = scalar_input(n, in, 0, "R (learning rate)");
    double t = scalar_input(n, in, 1, "T (update count)");
    // Bias correction of the two moments from the second update on.
    double rate = t > 0 ? r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : r;
    Tensors out(3 * count);
    for (int64_t i = 0; i < count; ++i) {
      const at::Tensor& x = member(n, in, count, 0, i);
      at::Tensor g = norm * x + member(n, in, count, 1, i);
      at::Tensor v = alpha * member(n, in, count, 2, i) + (1 - alpha) * g;
      at::Tensor h = beta * member(n, in, count, 3, i) + (1 - beta) * g * g;
      out[i] = (1 - post) * (x - rate * v / (at::sqrt(h) + eps));
      out[count + i] = v;
      out[2 * count + i] = h;
    }
    return out;
  };
});

// The differentiable ops Gradient can recompute, as ATen functions that autograd follows.
using Differentiable = std::function<at::Tensor(const std::vector<at::Tensor>&)>;
const std::map<std::string, Differentiable>& differentiable_ops() {
  using V = std::vector<at::Tensor>;
  static const std::map<std::string, Differentiable> ops = {
      {"Add", [](const V& a) { return a[0] + a[1]; }},
      {"Sub", [](const V& a) { return a[0] - a[1]; }},
      {"Mul", [](const V& a) { return a[0] * a[1]; }},
      {"Div", [](const V& a) { return a[0] / a[1]; }},
      {"Pow", [](const V& a) { return at::pow(a[0], a[1]); }},
      {"MatMul", [](const V& a) { return at::matmul(a[0], a[1]); }},
      {"Neg", [](const V& a) { return -a[0]; }},
      {"Abs", [](const V& a) { return at::abs(a[0]); }},
      {"Exp", [](const V& a) { return at::exp(a[0]); }},
      {"Log", [](const V& a) { return at::log(a[0]); }},
      {"Sqrt", [](const V& a) { return at::sqrt(a[0]); }},
      {"Reciprocal", [](const V& a) { return at::reciprocal(a[0]); }},
      {"Relu", [](const V& a) { return at::relu(a[0]); }},
      {"Sigmoid", [](const V& a) { return at::sigmoid(a[0]); }},
      {"Tanh", [](const V& a) { return at::tanh(a[0]); }},
      {"Sin", [](const V& a) { return at::sin(a[0]); }},
      {"Cos", [](const V& a) { return at::cos(a[0]); }},
      {"Identity", [](const V& a) { return a[0]; }},
  };
  return ops;
}

std::string op_list() {
  std::string s;
  for (const auto& [op, f] : differentiable_ops()) s += (s.empty() ? "" : ", ") + op;
  return s;
}

// Gradient's recomputation: the nodes between xs and y in topological order, and for every
// other value they read, the initializer it names.
struct GradientPlan {
  std::vector<std::string> xs;
  std::string y;
  std::vector<const ir::Node*> nodes;
  std::map<std::string, at::Tensor> constants;
};

GradientPlan plan_gradient(const ir::Node& n) {
  GradientPlan p;
  if (const ir::AttrValue* xs = n.attr("xs"); xs && xs->kind() == ir::AttrValue::Kind::Strings)
    p.xs = xs->strings();
  p.y = n.attr_s("y", "");
  if (p.xs.empty()) kernel_fail(n, "attribute 'xs' must name at least one tensor");
  if (p.xs.size() != n.inputs().size() || p.xs.size() != n.outputs().size())
    kernel_fail(n, "'xs' names " + std::to_string(p.xs.size()) + " tensors but the node has " +
                       std::to_string(n.inputs().size()) + " inputs and " +
                       std::to_string(n.outputs().size()) + " outputs; all three must agree");
  for (size_t i = 0; i < p.xs.size(); ++i)
    if (!n.input(i) || n.input(i)->name() != p.xs[i])
      kernel_fail(n, "input " + std::to_string(i) + " must be xs[" + std::to_string(i) + "] ('" +
                         p.xs[i] + "')");
  const ir::Graph& g = *n.owner();
  const ir::Value* y = g.find_value(p.y);
  if (!y) kernel_fail(n, "y names '" + p.y + "', which is no value of the graph");
  std::set<const ir::Value*> xs;
  for (const auto& x : p.xs) xs.insert(g.find_value(x));
  // Walk back from y to xs; every leaf that is not an x must be an initializer.
  std::set<const ir::Node*> needed;
  std::vector<const ir::Value*> stack{y};
  std::set<const ir::Value*> seen;
  while (!stack.empty()) {
    const ir::Value* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second || xs.count(v)) continue;
    if (const at::Tensor* init = g.initializer(v)) {
      p.constants[v->name()] = *init;
      continue;
    }
    const ir::Node* prod = v->producer();
    if (!prod)
      kernel_fail(n, "y ('" + p.y + "') depends on '" + v->name() +
                         "', which is neither in xs nor an initializer; tonnx differentiates "
                         "subgraphs whose only inputs are xs and initializers");
    if (prod == &n) kernel_fail(n, "y ('" + p.y + "') depends on the Gradient node itself");
    if (!differentiable_ops().count(prod->op_type()) || !prod->domain().empty() ||
        prod->outputs().size() != 1)
      kernel_fail(n, "y ('" + p.y + "') is computed by " + prod->op_type() + " node '" +
                         prod->name() +
                         "', which tonnx cannot differentiate (it can: " + op_list() + ")");
    needed.insert(prod);
    for (const ir::Value* in : prod->inputs())
      if (in) stack.push_back(in);
  }
  for (const auto& node : g.nodes())
    if (needed.count(node.get())) p.nodes.push_back(node.get());
  return p;
}

TONNX_KERNEL_DOMAIN("Gradient", kTraining, 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  auto p = std::make_shared<const GradientPlan>(plan_gradient(n));
  return [&n, p](const Tensors& in) -> Tensors {
    c10::InferenceMode not_inference(false);
    at::AutoGradMode grad(true);
    std::map<std::string, at::Tensor> env;
    std::vector<at::Tensor> xs;
    for (size_t i = 0; i < p->xs.size(); ++i) {
      if (!in.at(i).defined() || !at::isFloatingType(in[i].scalar_type()))
        kernel_fail(n, "xs[" + std::to_string(i) + "] ('" + p->xs[i] +
                           "') must be a floating-point tensor");
      xs.push_back(in[i].clone().requires_grad_(true));
      env[p->xs[i]] = xs.back();
    }
    for (const auto& [name, t] : p->constants) env[name] = t.clone();
    for (const ir::Node* node : p->nodes) {
      std::vector<at::Tensor> args;
      for (const ir::Value* v : node->inputs()) args.push_back(env.at(v->name()));
      env[node->output(0)->name()] = differentiable_ops().at(node->op_type())(args);
    }
    at::Tensor y = env.at(p->y);
    // A y that depends on no x (through initializers only): every gradient is zero.
    Tensors grads(xs.size());
    if (y.requires_grad())
      grads = torch::autograd::grad({y}, xs, {at::ones_like(y)}, c10::optional<bool>(false), false,
                                    true);
    Tensors out;
    for (size_t i = 0; i < xs.size(); ++i)
      out.push_back(grads[i].defined() ? grads[i].detach() : at::zeros_like(xs[i].detach()));
    return out;
  };
});

}  // namespace
}  // namespace tonnx::backend
