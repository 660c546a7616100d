// Sequences and optionals: values that are not tensors (see RunValue in tonnx/backend.h).
#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

const Sequence& seq_arg(const ir::Node& n, const RunValues& in, size_t i) {
  if (i >= in.size() || !in[i].is_sequence())
    kernel_fail(n, "input " + std::to_string(i) + " must be a sequence but is " +
                       (i < in.size() ? in[i].describe() : std::string("missing")));
  return in[i].sequence();
}

const at::Tensor& tensor_in(const ir::Node& n, const RunValues& in, size_t i) {
  if (i >= in.size() || !in[i].is_tensor() || !in[i].tensor().defined())
    kernel_fail(n, "input " + std::to_string(i) + " must be a tensor but is " +
                       (i < in.size() ? in[i].describe() : std::string("missing")));
  return in[i].tensor();
}

// A position in [-n, n] (insert) or [-n, n-1] (at, erase), normalized.
int64_t seq_pos(const ir::Node& n, const at::Tensor& p, int64_t size, bool inclusive_end) {
  int64_t v = p.item<int64_t>();
  int64_t hi = inclusive_end ? size : size - 1;
  if (v < -size || v > hi)
    kernel_fail(n, "position " + std::to_string(v) + " is out of range for a sequence of " +
                       std::to_string(size) + " (expected " + std::to_string(-size) + " to " +
                       std::to_string(hi) + ")");
  return v < 0 ? v + size : v;
}

ir::DType elem_of(const RunValue& v) {
  return v.is_tensor() && v.tensor().defined()
             ? ir::dtype_from_scalar_type(v.tensor().scalar_type())
             : ir::DType::Undefined;
}

TONNX_KERNEL("SequenceEmpty", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  auto dtype = static_cast<ir::DType>(s.node.attr_i("dtype", 1));
  return [dtype](const RunValues&) -> RunValues { return {Sequence{dtype, {}}}; };
});

TONNX_KERNEL("SequenceConstruct", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const RunValues& in) -> RunValues {
    Sequence q;
    for (size_t i = 0; i < in.size(); ++i) q.items.push_back(tensor_in(n, in, i));
    if (!q.items.empty()) q.elem = elem_of(q.items[0]);
    return {q};
  };
});

TONNX_KERNEL("SequenceInsert", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const RunValues& in) -> RunValues {
    Sequence q = seq_arg(n, in, 0);
    const at::Tensor& t = tensor_in(n, in, 1);
    int64_t size = static_cast<int64_t>(q.items.size());
    int64_t pos = in.size() > 2 && !in[2].empty() ? seq_pos(n, in[2].tensor(), size, true) : size;
    q.items.insert(q.items.begin() + pos, t);
    if (q.elem == ir::DType::Undefined) q.elem = elem_of(t);
    return {q};
  };
});

TONNX_KERNEL("SequenceAt", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const RunValues& in) -> RunValues {
    const Sequence& q = seq_arg(n, in, 0);
    int64_t pos = seq_pos(n, tensor_in(n, in, 1), static_cast<int64_t>(q.items.size()), false);
    return {q.items[pos]};
  };
});

TONNX_KERNEL("SequenceErase", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const RunValues& in) -> RunValues {
    Sequence q = seq_arg(n, in, 0);
    int64_t size = static_cast<int64_t>(q.items.size());
    if (size == 0) kernel_fail(n, "cannot erase from an empty sequence");
    int64_t pos =
        in.size() > 1 && !in[1].empty() ? seq_pos(n, in[1].tensor(), size, false) : size - 1;
    q.items.erase(q.items.begin() + pos);
    return {q};
  };
});

TONNX_KERNEL("SequenceLength", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const RunValues& in) -> RunValues {
    return {at::scalar_tensor(static_cast<int64_t>(seq_arg(n, in, 0).items.size()), at::kLong)};
  };
});

TONNX_KERNEL("SplitToSequence", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 0);
  bool keepdims = n.attr_i("keepdims", 1) != 0;
  return [&n, axis, keepdims](const RunValues& in) -> RunValues {
    const at::Tensor& x = tensor_in(n, in, 0);
    int64_t a = norm_axis(n, axis, x.dim());
    Sequence q;
    q.elem = elem_of(x);
    if (in.size() < 2 || in[1].empty()) {
      for (int64_t i = 0; i < x.size(a); ++i)
        q.items.push_back(keepdims ? x.narrow(a, i, 1) : x.select(a, i));
      return {q};
    }
    const at::Tensor& split = in[1].tensor();
    std::vector<at::Tensor> parts;
    if (split.dim() == 0) {
      int64_t chunk = split.item<int64_t>();
      if (chunk <= 0) kernel_fail(n, "split must be positive, got " + std::to_string(chunk));
      parts = x.split(chunk, a);
    } else {
      std::vector<int64_t> sizes = to_int_vector(split);
      check_split_sizes(n, sizes, a, x.size(a));
      parts = x.split_with_sizes(sizes, a);
    }
    for (auto& p : parts) q.items.push_back(p);
    return {q};
  };
});

TONNX_KERNEL("ConcatFromSequence", 11, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t axis = n.attr_i("axis", 0);
  bool new_axis = n.attr_i("new_axis", 0) != 0;
  return [&n, axis, new_axis](const RunValues& in) -> RunValues {
    const Sequence& q = seq_arg(n, in, 0);
    if (q.items.empty()) kernel_fail(n, "the sequence is empty");
    std::vector<at::Tensor> ts;
    for (const auto& v : q.items) ts.push_back(v.tensor());
    int64_t rank = ts[0].dim() + (new_axis ? 1 : 0);
    int64_t a = norm_axis(n, axis, rank);
    return {new_axis ? at::stack(ts, a) : at::cat(ts, a)};
  };
});

// Optionals: an optional holding X is X; an empty one is RunValue::none().
TONNX_KERNEL("Optional", 15, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const RunValues& in) -> RunValues {
    if (in.empty() || in[0].empty()) return {RunValue::none()};
    return {in[0]};
  };
});
TONNX_KERNEL("OptionalHasElement", 15, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const RunValues& in) -> RunValues {
    return {at::scalar_tensor(!in.empty() && !in[0].empty(), at::kBool)};
  };
});
TONNX_KERNEL("OptionalGetElement", 15, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const RunValues& in) -> RunValues {
    if (in.empty() || in[0].empty()) kernel_fail(n, "the optional input is empty");
    return {in[0]};
  };
});
// Identity passes any value through (tensors, sequences, optionals).
TONNX_KERNEL("Identity", 1, kAnyOpset, [](const KernelSpec&) -> Kernel {
  return [](const RunValues& in) -> RunValues { return {in.at(0)}; };
});

}  // namespace
}  // namespace tonnx::backend
