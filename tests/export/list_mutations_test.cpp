// Lists changed in place in scripted code (src/export/functionalize.cpp, converter_lists.cpp,
// src/symbolic/lists.cpp): append, insert, pop, del l[i], l[i] = x, +=, extend and clear, in
// straight-line code (the list stays values) and in loops and branches (an ONNX sequence),
// with constant, negative and run-time indices; lists of numbers; values that exist only on
// a path that returns early (prim::Uninitialized). ONNX Runtime and tonnx's backend are
// checked against LibTorch, also at sizes other than the example's, and what cannot be
// exported fails with a message that says why.
#include <torch/script.h>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class Lists : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(5); }
  int opset() const { return GetParam(); }
  std::string check(const std::string& source, const std::vector<Tensor>& inputs,
                    const std::string& name, bool dynamic = false) {
    ExportOptions opt;
    opt.opset_version = opset();
    if (dynamic) add_dynamic_axes(opt, inputs.size() == 1 ? "input" : "input_0", {0});
    return expect_script_matches(source, inputs, opt, name + "_opset" + std::to_string(opset()));
  }
};
// Loop and If carry sequences from opset 13 (ListsRefused checks 11 and 12).
INSTANTIATE_TEST_SUITE_P(Opsets, Lists, ::testing::Values(13, 16, 17));

// A list built in a loop: a sequence carried by the Loop, read by stack, cat, len, indexing
// (constant, negative and computed) and unpacking.
TEST_P(Lists, AppendInLoop) {
  const std::string src = R"(
def forward(self, x, k):
    res = []
    for i in range(x.size(0)):
        res.append(x[i] * float(i))
    res += [x[0] + 1.0]
    a, b = res[0], res[-1]
    return torch.stack(res), torch.cat(res, -1), torch.tensor(len(res)), res[int(k)] + a - b
)";
  check(src, {torch::randn({4, 3}), torch::tensor(2L)}, "append_in_loop");
  std::string path =
      check(src, {torch::randn({5, 2}), torch::tensor(-1L)}, "append_in_loop_dynamic", true);
  // The loop follows the input's size: 2 and 8 rows, against LibTorch on those inputs.
  torch::jit::Module m("Scripted");
  m.define(src);
  for (int64_t rows : {2, 8}) {
    std::vector<Tensor> in{torch::randn({rows, 2}), torch::tensor(1L)};
    std::vector<Tensor> want;
    c10::IValue out = m.forward({in[0], in[1]});
    for (const c10::IValue& v : out.toTupleRef().elements()) want.push_back(v.toTensor());
    expect_outputs_match(path, in, want, "append_in_loop_rows_" + std::to_string(rows));
  }
}

// pop (last, negative, computed), del, insert (clamped as Python clamps), l[i] = x, on a list
// that changed in a loop.
TEST_P(Lists, ChangesOfASequence) {
  check(R"(
def forward(self, x, k):
    i = int(k)
    res = []
    for j in range(x.size(0)):
        res.append(x[j])
    last = res.pop()
    first = res.pop(0)
    mid = res.pop(i)
    del res[-1]
    res.insert(0, last)
    res.insert(-1, first)
    res.insert(100, mid)
    res.insert(-100, mid * 2.0)
    res[i] = x[0] * 3.0
    res[-2] = x[1] * 5.0
    scratch = [x[0]]
    for j in range(x.size(0)):
        scratch.append(x[j])
    scratch.clear()
    scratch.append(x[2])
    return torch.stack(res), last, first, mid, torch.stack(scratch)
)",
        {torch::randn({7, 2}), torch::tensor(1L)}, "sequence_changes");
}

// The same changes on a list known while converting stay values (no sequence ops).
TEST_P(Lists, ChangesOfAKnownList) {
  std::string path = check(R"(
def forward(self, x):
    t = x.unbind(0)
    res = [t[0], t[1]]
    res.append(t[2])
    res.pop(1)
    res.insert(0, t[1])
    res.insert(-1, t[3])
    res[-1] = t[4]
    del res[0]
    res.extend([t[5]])
    res += [t[0]]
    popped = res.pop()
    other = [t[1], t[2]]
    other.clear()
    other.append(t[3])
    return torch.stack(res), popped, torch.stack(other)
)",
                           {torch::randn({6, 3})}, "known_list_changes");
  for (const std::string& op : op_types(path))
    EXPECT_EQ(op.find("Sequence"), std::string::npos) << op;
}

// A list changed in a branch becomes the If's output; one changed in nested loops is carried by
// both.
TEST_P(Lists, BranchesAndNestedLoops) {
  check(R"(
def forward(self, x):
    res = [x[0]]
    if bool(x.sum() > 0):
        res.append(x[1])
    else:
        res.append(x[2])
        res.append(x[3])
    for i in range(x.size(0)):
        for j in range(2):
            res.append(x[i] * float(j))
        if i % 2 == 0:
            res.pop()
    return torch.stack(res)
)",
        {torch::randn({4, 3})}, "branches_and_nested_loops", true);
}

// Lists of ints, floats and bools built in loops are 1-D tensors (Concat, Slice, Scatter);
// scale factors computed so (scripted F.interpolate) go to Resize as they are.
TEST_P(Lists, ListsOfNumbers) {
  check(R"(
def forward(self, x):
    sizes: List[int] = []
    scales: List[float] = []
    flags: List[bool] = []
    for i in range(x.dim()):
        sizes.append(x.size(i) * 2)
        scales.append(float(i) + 0.5)
        flags.append(x.size(i) > 2)
    sizes.insert(1, 7)
    sizes.insert(-1, 8)
    del sizes[0]
    sizes[-1] = 9
    last = scales.pop()
    scales[0] = last
    flags.clear()
    flags.append(x.size(0) == 3)
    up = torch.upsample_nearest1d(x, None, scales[0:1])
    return torch.tensor(sizes), torch.tensor(scales), torch.tensor(flags), x.new_zeros(sizes[1:3]), up
)",
        {torch::randn({3, 2, 4})}, "number_lists", true);
}

// List repetition, as torch.stft's scripted code builds a view shape: ints repeated a number of
// times computed at run time (here none), tensors a known number.
TEST_P(Lists, Repetition) {
  check(R"(
def forward(self, x):
    shape = [1] * (3 - x.dim()) + x.size()
    none = [5, 6] * (2 - x.dim())
    pair = [x, x * 2.0] * 2
    return x.view(shape), torch.tensor(none + [x.size(0)]), torch.stack(pair)
)",
        {torch::randn({3, 4})}, "list_repetition", true);
}

// chunk into a number of pieces computed at run time: an ONNX sequence (SplitToSequence) of
// pieces of ceil(n / count), fewer pieces where torch.chunk makes fewer; the input's batch varies.
TEST_P(Lists, ChunkIntoARunTimeCount) {
  for (int64_t n : {3, 4, 13})
    check(R"(
def forward(self, x):
    return torch.chunk(x, x.size(0), 1)
)",
          {torch::randn({3, n})}, "chunk_runtime_count_" + std::to_string(n), true);
}

// unbind of a dim whose size varies: a sequence (SplitToSequence), counted by len; x.dim() of a
// tensor whose rank is known is that rank, where an op needs a constant (stack's dim).
TEST_P(Lists, UnbindOfAVaryingDimAndDimOfKnownRank) {
  check(R"(
def forward(self, x):
    parts = x.unbind()
    return len(parts) + x, torch.stack((x, x * 2.0), dim=x.dim()), parts[-1]
)",
        {torch::randn({4, 5})}, "unbind_varying", true);
}

// A list of tensors returned: one output, an ONNX sequence (as torch.onnx exports it),
// including a list that no tensor is ever put into.
TEST_P(Lists, SequenceOutputs) {
  check(R"(
def forward(self, x):
    res = []
    empty: List[Tensor] = []
    for i in range(x.size(0)):
        res.append(x[i].sum(0, keepdim=True))
    return res, x * 2.0, [x[0], x[1]], empty
)",
        {torch::randn({3, 4})}, "sequence_outputs");
}

// A list of numbers returned is a sequence of 0-d tensors, as torch.onnx exports the number
// lists it can (test_uninitialized_intList): one built in a loop and changed in a branch, one
// of floats, one known at export. The loop follows the input's rows, none included.
TEST_P(Lists, NumberListOutputs) {
  const std::string src = R"(
def forward(self, x):
    y = list(range(x.size(0)))
    if x.size(0) == 3:
        y.append(10)
    r: List[float] = []
    for i in range(x.size(0)):
        r.append(float(x[i].sum()))
    return y, r, [x.size(1), 3]
)";
  std::string path = check(src, {torch::randn({3, 4})}, "number_list_outputs", true);
  EXPECT_EQ(read_model_proto(path).graph().output(0).type().value_case(),
            onnx::TypeProto::kSequenceType);
  torch::jit::Module m("Scripted");
  m.define(src);
  for (int64_t rows : {0, 1, 6}) {
    Tensor x = torch::randn({rows, 4});
    std::vector<Tensor> want;
    std::vector<c10::IValue> in{x};
    c10::IValue out = m.forward(in);
    for (const c10::IValue& list : out.toTupleRef().elements())
      for (const c10::IValue& e : list.toListRef())
        want.push_back(e.isInt() ? torch::tensor(e.toInt())
                                 : torch::tensor(e.toDouble(), torch::kFloat));
    auto got = backend::prepare(path, "CPU").run_values({x});
    ASSERT_EQ(got.size(), 3u);
    std::vector<Tensor> flat;
    for (const auto& v : got)
      for (const auto& e : v.sequence().items) flat.push_back(e.tensor());
    ASSERT_EQ(flat.size(), want.size()) << rows << " rows";
    for (size_t k = 0; k < flat.size(); ++k)
      expect_close(flat[k], want[k].to(flat[k].scalar_type()), {}, "number list element");
    if (rows)
      expect_outputs_match(path, {x}, want, "number_list_outputs_rows_" + std::to_string(rows));
  }
}

// Values that exist only on a path that returns early (prim::Uninitialized) take the other
// branch's type; the path that runs is the one ONNX Runtime and the backend run.
TEST_P(Lists, EarlyReturns) {
  const std::string src = R"(
def forward(self, y):
    if y.size(1) < 5:
        if y.size(0) == 1:
            y = y + 4
        else:
            return [y * 2]
    return [y, y]
)";
  check(src, {torch::ones({3, 4}, torch::kInt)}, "early_return_list", true);
  check(src, {torch::ones({1, 4}, torch::kInt)}, "early_return_list_other_branch", true);
  check(R"(
def forward(self, y):
    if y.size(1) < 5:
        if y.size(0) == 1:
            y = y + 4
        else:
            return y
    return y * 3
)",
        {torch::ones({1, 4}, torch::kInt)}, "early_return_tensor", true);
}

// Below opset 11 (no sequences) a list of numbers returned stays one 1-D tensor.
TEST(ListsOpset10, NumberListOutputIsATensor) {
  torch::jit::Module m("Scripted");
  m.define("def forward(self, x):\n    return [x.size(0), x.size(1) * 2]\n");
  ExportOptions opt;
  opt.opset_version = 10;
  std::string path = temp_dir("number_list_opset10") + "/m.onnx";
  add_dynamic_axes(opt, "input", {0});
  export_model(m, {torch::randn({3, 4})}, path, opt);
  auto t = read_model_proto(path).graph().output(0).type();
  ASSERT_EQ(t.value_case(), onnx::TypeProto::kTensorType);
  EXPECT_EQ(t.tensor_type().elem_type(), onnx::TensorProto::INT64);
  auto out = backend::prepare(path, "CPU").run({torch::randn({3, 4})});
  EXPECT_TRUE(torch::equal(out.at(0), torch::tensor({3L, 8L})));
}

// What cannot be exported fails with its reason, naming the op.
TEST(ListsRefused, WithTheirReasons) {
  auto refused = [](const std::string& source, const std::vector<Tensor>& inputs, int opset,
                    const std::string& what) {
    torch::jit::Module m("Scripted");
    m.define(source);
    ExportOptions opt;
    opt.opset_version = opset;
    expect_error([&] { export_model(m, inputs, temp_dir("lists_refused") + "/m.onnx", opt); },
                 what);
  };
  const std::string loop = R"(
def forward(self, x):
    res = []
    for i in range(x.size(0)):
        res.append(x[i])
    return torch.stack(res)
)";
  refused(loop, {torch::randn({3, 2})}, 12, "which Loop and If take from opset 13");
  refused(R"(
def forward(self, x):
    res = [x[0]]
    if bool(x.sum() > 0):
        res.append(x[1])
    return res[-1]
)",
          {torch::randn({3, 2})}, 11, "which Loop and If take from opset 13");
  refused(R"(
def forward(self, x, k):
    res = [x[0], x[1]]
    return res[int(k)]
)",
          {torch::randn({3, 2}), torch::tensor(1L)}, 10, "needs opset 11");
  refused(R"(
def forward(self, x):
    res = []
    for i in range(x.size(0)):
        res.append(x[i])
        res.append(x[i].long())
    return len(res)
)",
          {torch::randn({3, 2})}, 17, "holds tensors of Float and Long");
  refused(R"(
def forward(self, x):
    res = [x[0], x[1]]
    outer = [res]
    res.append(x[2])
    return torch.stack(outer[0])
)",
          {torch::randn({3, 2})}, 17, "also an element of another list");
  refused(R"(
def forward(self, x):
    sizes = [x.size(1), x.size(0)]
    sizes.sort()
    return x.new_zeros(sizes)
)",
          {torch::randn({3, 2})}, 17, "changes a list in place");
  refused(R"(
def forward(self, x):
    res = [x[0]]
    for i in range(x.size(0)):
        res.append(x[i])
    return torch.meshgrid(res)
)",
          {torch::randn({3, 2})}, 17, "ONNX sequence whose length is known only at run time");
}

}  // namespace
}  // namespace tonnx::test
