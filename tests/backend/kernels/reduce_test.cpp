// The reduction kernels (src/backend/kernels/reduce.cpp) against LibTorch: every Reduce op
// with axes as an attribute and, for ReduceSum, as an input (opset 13 on; the other ops take it
// at 18, which this libonnx does not know: issue 54), negative axes, keepdims, empty axes (all, or
// none with noop_with_empty_axes), int64, NaN and inf, empty dims (the identity of Max and Min, as
// ONNX Runtime gives), and ArgMax / ArgMin with select_last_index.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::test::expect_close;
using tonnx::test::GraphBuilder;
using tonnx::test::run_one_node;

// One Reduce node at `opset`; axes an attribute below `axes_input_since`, else an input.
at::Tensor reduce_op(const std::string& op, int opset, int axes_input_since, const at::Tensor& x,
                     const std::vector<int64_t>& axes, bool keep, bool noop = false) {
  std::vector<ir::Attr> attrs{{"keepdims", ir::AttrValue(int64_t{keep})}};
  if (noop) attrs.push_back({"noop_with_empty_axes", ir::AttrValue(int64_t{1})});
  bool axes_input = opset >= axes_input_since && !axes.empty();
  if (!axes_input && !axes.empty()) attrs.push_back({"axes", ir::AttrValue(ir::Ints(axes))});
  std::vector<at::Tensor> inputs =
      axes_input ? std::vector<at::Tensor>{x, torch::tensor(axes, torch::kLong)}
                 : std::vector<at::Tensor>{x};
  return run_one_node(op, inputs, attrs, 1, opset).at(0);
}

using Ref = std::function<at::Tensor(const at::Tensor&, at::IntArrayRef, bool)>;

struct Op {
  std::string name;
  int axes_input_since;
  Ref ref;
};

std::vector<Op> ops() {
  return {
      {"ReduceSum", 13,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) {
         return at::sum(x, a, k, x.scalar_type());
       }},
      {"ReduceMean", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::mean(x, a, k); }},
      {"ReduceMax", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::amax(x, a, k); }},
      {"ReduceMin", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::amin(x, a, k); }},
      {"ReduceProd", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) {
         at::Tensor y = x;
         for (int64_t i = static_cast<int64_t>(a.size()) - 1; i >= 0; --i) y = at::prod(y, a[i], k);
         return y;
       }},
      {"ReduceL1", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::sum(x.abs(), a, k); }},
      {"ReduceL2", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::sum(x * x, a, k).sqrt(); }},
      {"ReduceSumSquare", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::sum(x * x, a, k); }},
      {"ReduceLogSum", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::sum(x, a, k).log(); }},
      {"ReduceLogSumExp", 18,
       [](const at::Tensor& x, at::IntArrayRef a, bool k) { return at::logsumexp(x, a, k); }},
  };
}

TEST(BackendReduce, EveryOpAxesAndKeepdimsAtBothOpsets) {
  torch::manual_seed(9);
  at::Tensor x = torch::rand({2, 3, 4}) + 0.5;  // positive: LogSum is defined
  for (const Op& op : ops())
    for (int opset : {11, 17})
      for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, std::vector<int64_t>{-1},
                                        std::vector<int64_t>{0, 2}, std::vector<int64_t>{2, -3}})
        for (bool keep : {true, false}) {
          std::vector<int64_t> sorted;
          for (int64_t a : axes) sorted.push_back(a < 0 ? a + 3 : a);
          std::sort(sorted.begin(), sorted.end());
          expect_close(reduce_op(op.name, opset, op.axes_input_since, x, axes, keep),
                       op.ref(x, sorted, keep), {1e-5, 1e-6},
                       op.name + " opset " + std::to_string(opset) + " axes " + c10::str(axes) +
                           (keep ? " keepdims" : ""));
        }
}

TEST(BackendReduce, EmptyAxesMeanAllOrNoneWithNoop) {
  at::Tensor x = torch::rand({2, 3}) + 0.5;
  for (const Op& op : ops())
    expect_close(reduce_op(op.name, 17, op.axes_input_since, x, {}, true), op.ref(x, {0, 1}, true),
                 {1e-5, 1e-6}, op.name + " over all");
  // noop_with_empty_axes: ReduceSum's since 13 (the others' since 18).
  expect_close(reduce_op("ReduceSum", 17, 13, x, {}, true, /*noop=*/true), x, {0, 0},
               "ReduceSum noop_with_empty_axes");
}

TEST(BackendReduce, Int64SumsAndExtremesAreExact) {
  at::Tensor x =
      torch::tensor(std::vector<int64_t>{int64_t{1} << 40, -3, 7, 5, int64_t{1} << 41, -9})
          .reshape({2, 3});
  expect_close(reduce_op("ReduceSum", 17, 13, x, {1}, false), at::sum(x, {1}), {0, 0}, "sum");
  expect_close(reduce_op("ReduceMax", 17, 18, x, {0}, true), at::amax(x, {0}, true), {0, 0}, "max");
  expect_close(reduce_op("ReduceMin", 17, 18, x, {-1}, false), at::amin(x, {-1}), {0, 0}, "min");
}

TEST(BackendReduce, NanAndInfPropagateAsLibTorch) {
  at::Tensor x = torch::tensor({{1.f, NAN, 2.f}, {INFINITY, 1.f, -INFINITY}});
  for (const Op& op : ops()) {
    if (op.name == "ReduceLogSum") continue;  // log of a negative sum: NaN either way
    expect_close(reduce_op(op.name, 17, op.axes_input_since, x, {1}, false), op.ref(x, {1}, false),
                 {1e-6, 1e-6}, op.name + " with NaN and inf");
  }
}

TEST(BackendReduce, MaxAndMinOverAnEmptyDimGiveTheirIdentity) {
  at::Tensor x = torch::zeros({2, 0});
  at::Tensor max = reduce_op("ReduceMax", 17, 18, x, {1}, false);
  at::Tensor min = reduce_op("ReduceMin", 17, 18, x, {1}, true);
  EXPECT_EQ(max.sizes(), at::IntArrayRef({2}));
  EXPECT_EQ(min.sizes(), at::IntArrayRef({2, 1}));
  EXPECT_TRUE((max == -std::numeric_limits<float>::infinity()).all().item<bool>()) << max;
  EXPECT_TRUE((min == std::numeric_limits<float>::infinity()).all().item<bool>()) << min;
  expect_close(reduce_op("ReduceSum", 17, 13, x, {1}, false), torch::zeros({2}), {0, 0},
               "sum over an empty dim");
}

TEST(BackendReduce, ArgMaxAndArgMinWithTiesAndLastIndex) {
  at::Tensor x = torch::tensor({{3.f, 1.f, 3.f}, {0.f, 0.f, -1.f}});
  for (const char* op : {"ArgMax", "ArgMin"})
    for (bool last : {false, true})
      for (int64_t axis : {1, -1, 0}) {
        GraphBuilder g;
        g.out(g.op(op, {g.in("x")},
                   {{"axis", ir::AttrValue(axis)},
                    {"keepdims", ir::AttrValue(int64_t{0})},
                    {"select_last_index", ir::AttrValue(int64_t{last})}}),
              "y");
        at::Tensor got = tonnx::backend::prepare(tonnx::model_to_proto(g.m), "CPU").run({x})[0];
        // LibTorch's argmax picks the first of ties; the last is the first of the flipped dim.
        bool is_max = std::string(op) == "ArgMax";
        at::Tensor want;
        if (last) {
          at::Tensor f = x.flip(axis);
          want = x.size(axis) - 1 - (is_max ? f.argmax(axis) : f.argmin(axis));
        } else {
          want = is_max ? x.argmax(axis) : x.argmin(axis);
        }
        expect_close(got, want, {0, 0},
                     std::string(op) + " axis " + std::to_string(axis) + (last ? " last" : ""));
      }
}

}  // namespace
