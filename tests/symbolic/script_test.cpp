// Scalars and lists of scripted graphs (src/symbolic/script.cpp): loops over range(a, b, step)
// (__range_length, __derive_index), any/all, IntImplicit, and the scalar plumbing of scripted
// code (dim, len, min/max of ints, not/and/or, Optional refinement, int()/float()). Modules are
// compiled from TorchScript source, exported, and checked against LibTorch on ONNX Runtime and
// tonnx's backend.
#include "script_check.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class ScriptParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ScriptParity, ::testing::Values(9, 11, 13, 17));

// for i in range(a, b, step) in scripted code: a Loop whose trip count is __range_length and
// whose index is __derive_index; steps up, down, and empty ranges.
TEST_P(ScriptParity, RangeLoops) {
  if (opset() < 11) GTEST_SKIP() << "scripted loops export from opset 11";
  check_script(R"(
def forward(self, x, n):
    k = int(n)
    acc = x * 0
    for i in range(1, k, 2):
        acc = acc + x * i
    for j in range(k, -3, -3):
        acc = acc - j
    return acc
)",
               {torch::randn({3}), torch::tensor(8L)}, opset(), "range_loops");
}

class ScriptComposite : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, ScriptComposite, ::testing::Values(9, 13, 17));

TEST_P(ScriptComposite, AnyAllOverADim) {
  Tensor b = torch::tensor({{true, false, false}, {true, true, true}});
  check([](Tensor a) { return torch::any(a, 1); }, {b}, "any_dim");
  check([](Tensor a) { return torch::all(a, -1, true); }, {b}, "all_dim_keep");
  check([](Tensor a) { return torch::any(a, 0); }, {torch::tensor({{0.f, NAN}, {0.f, 0.f}})},
        "any_float_nan");
  check([](Tensor a) { return torch::all(a, 0); }, {torch::tensor({{2L, 0L}, {-1L, 3L}})},
        "all_int");
  check([](Tensor a) { return torch::all(a, 1); }, {torch::zeros({2, 0}, torch::kBool)},
        "all_empty");
  check([](Tensor a) { return torch::any(a); }, {torch::zeros({0}, torch::kBool)}, "any_empty");
}

// IntImplicit: a 0-d tensor where TorchScript wants an int (topk's k computed at run time).
TEST(ScriptScripted, IntImplicit) {
  expect_script_matches(R"(
def forward(self, x, k):
    return torch.topk(x, k)[0] * 2
)",
                        {torch::randn({3, 6}), torch::tensor(4L)}, "int_implicit");
}

// Scalars and lists of scripted code: dim, len, indexing a size list, min/max of ints,
// any/all, not/and/or on bools, Optional refinement (unchecked_cast), int()/float().
TEST(ScriptScripted, ScalarPlumbing) {
  const std::string script = R"JIT(
def forward(self, x, y):
    s = x.size()
    n = len(s) + (x * 2).dim()
    k = min(s[0], s[1]) + max(s[0], 2)
    pos = bool((x > 0).any()) and not bool((x > 100).all())
    neg = bool((x < -100).any()) or bool((x < 100).all())
    f = float(k) * 0.5 + float(int(x.sum() * 0) + n)
    out = x * f
    if pos and neg:
        out = out + 1
    if (pos & neg) | (neg & pos):
        out = out * 2
    out = out + torch.full([s[0], 4], x.mean())
    z: Optional[Tensor] = y * 1.0
    if z is not None:
        out = out + z
    if z is None:
        out = out * 0
    if bool(x.sum() > -1000000.0):
        # Under a branch on data, None checks stay in the graph (aten::__is__, __isnot__).
        if z is not None:
            out = out - z
        if z is None:
            out = out * 3
    return out
)JIT";
  expect_script_matches(script, {torch::randn({3, 4}), torch::randn({3, 4})}, "script_scalars", 13);
  expect_script_matches(script, {torch::randn({3, 4}), torch::randn({3, 4})},
                        "script_scalars_dynamic", 13, /*dynamic_batch=*/true);
}

}  // namespace
}  // namespace tonnx::test
