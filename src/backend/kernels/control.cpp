// Control flow: If, Loop, Scan and SequenceMap run subgraph plans. A node's subgraphs may read
// outer-scope values; the plan passes them after the node's own inputs, in the order of
// subgraph_captures(node), and each subgraph plan takes that same capture list.
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

struct Body {
  std::shared_ptr<const SubPlan> plan;
  size_t n_inputs = 0;  // the node's own inputs; captures follow
};

Body body_of(const KernelSpec& s, const std::string& attr) {
  const ir::AttrValue* a = s.node.attr(attr);
  if (!a || a->kind() != ir::AttrValue::Kind::Graph)
    kernel_fail(s.node, "attribute '" + attr + "' must be a graph");
  Body b;
  b.plan = plan_subgraph(*a->g(), s, subgraph_captures(s.node));
  b.n_inputs = s.node.inputs().size();
  return b;
}

RunValues captures_of(const RunValues& in, size_t n_inputs) {
  return RunValues(in.begin() + static_cast<std::ptrdiff_t>(std::min(n_inputs, in.size())),
                   in.end());
}

bool truth(const ir::Node& n, const RunValue& v, const char* what) {
  if (!v.is_tensor() || !v.tensor().defined() || v.tensor().numel() != 1)
    kernel_fail(n, std::string(what) + " must be a one-element tensor but is " + v.describe());
  return v.tensor().item<bool>();
}

TONNX_KERNEL("If", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  Body then_b = body_of(s, "then_branch"), else_b = body_of(s, "else_branch");
  return [&n, then_b, else_b](const RunValues& in) -> RunValues {
    bool c = truth(n, in.at(0), "cond");
    const Body& b = c ? then_b : else_b;
    return run_subplan(*b.plan, {}, captures_of(in, b.n_inputs));
  };
});

at::Tensor stack_or_empty(const std::vector<at::Tensor>& ts, int64_t axis = 0) {
  if (ts.empty()) return at::empty({0}, at::kFloat);
  return at::stack(ts, axis);
}

TONNX_KERNEL("Loop", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  Body body = body_of(s, "body");
  size_t n_carried = n.inputs().size() >= 2 ? n.inputs().size() - 2 : 0;
  size_t n_scan = n.outputs().size() >= n_carried ? n.outputs().size() - n_carried : 0;
  return [&n, body, n_carried, n_scan](const RunValues& in) -> RunValues {
    RunValues caps = captures_of(in, body.n_inputs);
    int64_t max_trip = std::numeric_limits<int64_t>::max();
    if (!in.at(0).empty()) max_trip = in[0].tensor().item<int64_t>();
    bool cond = in.size() > 1 && !in[1].empty() ? truth(n, in[1], "cond") : true;
    RunValues carried(in.begin() + 2, in.begin() + 2 + static_cast<std::ptrdiff_t>(n_carried));
    std::vector<std::vector<at::Tensor>> scans(n_scan);
    for (int64_t i = 0; i < max_trip && cond; ++i) {
      check_run_limits(n);  // a trip count of 2^62 stops only at the run's limits
      RunValues args{at::scalar_tensor(i, at::kLong), at::scalar_tensor(cond, at::kBool)};
      args.insert(args.end(), carried.begin(), carried.end());
      RunValues outs = run_subplan(*body.plan, args, caps);
      if (outs.size() != 1 + n_carried + n_scan)
        kernel_fail(n, "the body returned " + std::to_string(outs.size()) + " values; expected " +
                           std::to_string(1 + n_carried + n_scan));
      cond = truth(n, outs[0], "the body's condition output");
      for (size_t k = 0; k < n_carried; ++k) carried[k] = outs[1 + k];
      for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(outs[1 + n_carried + k].tensor());
    }
    RunValues result = carried;
    for (auto& sc : scans) result.push_back(stack_or_empty(sc));
    return result;
  };
});

struct ScanAttrs {
  int64_t num_scan_inputs;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

// One scan over unbatched inputs (opset 9 semantics).
RunValues scan_once(const ir::Node& n, const Body& body, const ScanAttrs& a, RunValues states,
                    const std::vector<at::Tensor>& scan_in, const RunValues& caps,
                    size_t n_outputs) {
  size_t n_states = states.size();
  if (n_outputs < n_states)
    kernel_fail(n, "has " + std::to_string(n_outputs) + " outputs but " + std::to_string(n_states) +
                       " state variables");
  auto check_list = [&](const std::vector<int64_t>& v, size_t want, const char* name) {
    if (!v.empty() && v.size() != want)
      kernel_fail(n,
                  std::string(name) + " has " + std::to_string(v.size()) +
                      " entries; expected one per scan " +
                      (std::string(name).find("output") != std::string::npos ? "output" : "input") +
                      " (" + std::to_string(want) + ")");
  };
  check_list(a.in_axes, scan_in.size(), "scan_input_axes");
  check_list(a.in_dirs, scan_in.size(), "scan_input_directions");
  check_list(a.out_axes, n_outputs - n_states, "scan_output_axes");
  check_list(a.out_dirs, n_outputs - n_states, "scan_output_directions");
  if (scan_in.empty()) kernel_fail(n, "has no scan inputs");
  int64_t len = -1;
  std::vector<at::Tensor> xs;
  for (size_t j = 0; j < scan_in.size(); ++j) {
    int64_t ax = a.in_axes.empty() ? 0 : a.in_axes[j];
    ax = norm_axis(n, ax, scan_in[j].dim());
    at::Tensor x = scan_in[j].movedim(ax, 0);
    if (!a.in_dirs.empty() && a.in_dirs[j]) x = x.flip(0);
    if (len >= 0 && x.size(0) != len) kernel_fail(n, "scan inputs differ in length");
    len = x.size(0);
    xs.push_back(x);
  }
  size_t n_scan_out = n_outputs - n_states;
  std::vector<std::vector<at::Tensor>> ys(n_scan_out);
  for (int64_t t = 0; t < len; ++t) {
    check_run_limits(n);
    RunValues args = states;
    for (const auto& x : xs) args.push_back(x[t]);
    RunValues outs = run_subplan(*body.plan, args, caps);
    if (outs.size() != n_outputs)
      kernel_fail(n, "the body returned " + std::to_string(outs.size()) + " values; expected " +
                         std::to_string(n_outputs));
    for (size_t k = 0; k < n_states; ++k) states[k] = outs.at(k);
    for (size_t k = 0; k < n_scan_out; ++k) ys[k].push_back(outs.at(n_states + k).tensor());
  }
  RunValues result = states;
  for (size_t k = 0; k < n_scan_out; ++k) {
    if (!a.out_dirs.empty() && a.out_dirs[k]) std::reverse(ys[k].begin(), ys[k].end());
    at::Tensor y = stack_or_empty(ys[k]);
    int64_t ax = a.out_axes.empty() ? 0 : a.out_axes[k];
    y = y.movedim(0, norm_axis(n, ax, y.dim()));
    result.push_back(y);
  }
  return result;
}

TONNX_KERNEL("Scan", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  Body body = body_of(s, "body");
  ScanAttrs a{n.attr_i("num_scan_inputs", 0), n.attr_ints("scan_input_axes"),
              n.attr_ints("scan_input_directions"), n.attr_ints("scan_output_axes"),
              n.attr_ints("scan_output_directions")};
  size_t n_in = n.inputs().size(), n_out = n.outputs().size();
  if (a.num_scan_inputs <= 0 || static_cast<size_t>(a.num_scan_inputs) > n_in)
    kernel_fail(n, "num_scan_inputs must be in 1.." + std::to_string(n_in));
  return [&n, body, a, n_in, n_out](const RunValues& in) -> RunValues {
    size_t n_states = n_in - static_cast<size_t>(a.num_scan_inputs);
    RunValues states(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_states));
    std::vector<at::Tensor> xs;
    for (size_t j = n_states; j < n_in; ++j) xs.push_back(in[j].tensor());
    return scan_once(n, body, a, states, xs, captures_of(in, n_in), n_out);
  };
});

// Opset 8: a batch axis 0 and an optional sequence_lens first input.
TONNX_KERNEL("Scan", 8, 8, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  Body body = body_of(s, "body");
  ScanAttrs a{n.attr_i("num_scan_inputs", 0), {}, n.attr_ints("directions"), {}, {}};
  size_t n_in = n.inputs().size(), n_out = n.outputs().size();
  // Inputs: sequence_lens, then the states, then num_scan_inputs scanned tensors.
  if (a.num_scan_inputs <= 0 || n_in < 1 || static_cast<size_t>(a.num_scan_inputs) > n_in - 1)
    kernel_fail(n, "num_scan_inputs must be in 1.." + std::to_string(n_in > 0 ? n_in - 1 : 0) +
                       ", got " + std::to_string(a.num_scan_inputs));
  return [&n, body, a, n_in, n_out](const RunValues& in) -> RunValues {
    if (!in.at(0).empty()) kernel_fail(n, "sequence_lens is not supported");
    size_t n_states = n_in - 1 - static_cast<size_t>(a.num_scan_inputs);
    RunValues caps = captures_of(in, n_in);
    for (size_t j = 1; j < n_in; ++j)
      if (in.at(j).tensor().dim() < 1)
        kernel_fail(n, "input " + std::to_string(j) + " must have a batch axis");
    int64_t batch = in.at(1).tensor().size(0);
    for (size_t j = 1; j < n_in; ++j)
      if (in[j].tensor().size(0) != batch)
        kernel_fail(n, "input " + std::to_string(j) + " has batch " +
                           std::to_string(in[j].tensor().size(0)) + ", input 1 has " +
                           std::to_string(batch));
    std::vector<std::vector<at::Tensor>> outs(n_out);
    for (int64_t b = 0; b < batch; ++b) {
      RunValues states;
      for (size_t k = 0; k < n_states; ++k) states.push_back(in[1 + k].tensor()[b]);
      std::vector<at::Tensor> xs;
      for (size_t j = 1 + n_states; j < n_in; ++j) xs.push_back(in[j].tensor()[b]);
      RunValues r = scan_once(n, body, a, states, xs, caps, n_out);
      for (size_t k = 0; k < n_out; ++k) outs[k].push_back(r[k].tensor());
    }
    RunValues result;
    for (auto& o : outs) result.push_back(at::stack(o, 0));
    return result;
  };
});

// SequenceMap: runs the body once per position of the sequence inputs; tensor inputs are
// passed whole to every iteration.
TONNX_KERNEL("SequenceMap", 17, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  Body body = body_of(s, "body");
  size_t n_out = n.outputs().size();
  return [&n, body, n_out](const RunValues& in) -> RunValues {
    RunValues caps = captures_of(in, body.n_inputs);
    if (!in.at(0).is_sequence()) kernel_fail(n, "input 0 must be a sequence");
    size_t len = in[0].sequence().items.size();
    std::vector<Sequence> outs(n_out);
    for (size_t i = 0; i < len; ++i) {
      RunValues args;
      for (size_t j = 0; j < body.n_inputs; ++j) {
        if (in[j].is_sequence()) {
          const auto& items = in[j].sequence().items;
          if (items.size() != len) kernel_fail(n, "input sequences differ in length");
          args.push_back(items[i]);
        } else {
          args.push_back(in[j]);
        }
      }
      RunValues r = run_subplan(*body.plan, args, caps);
      for (size_t k = 0; k < n_out; ++k) {
        if (r.at(k).is_tensor() && outs[k].items.empty())
          outs[k].elem = ir::dtype_from_scalar_type(r[k].tensor().scalar_type());
        outs[k].items.push_back(r[k]);
      }
    }
    RunValues result;
    for (auto& o : outs) result.push_back(std::move(o));
    return result;
  };
});

}  // namespace
}  // namespace tonnx::backend
