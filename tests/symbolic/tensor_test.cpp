// Tensor manipulation (src/symbolic/tensor.cpp): cat over a negative dim and mixed types,
// padding (constant, reflect, replicate, circular), pixel_shuffle, embedding, casts, baddbmm,
// scatter_add at repeated indices, slices of lists, and the aten entry points LibTorch's C++
// functional API reaches only when called directly.
// Each exported and checked on tonnx's backend and ONNX Runtime against LibTorch eager, over
// the opsets where the symbolics differ.
#include "error_of.h"
#include "script_check.h"
#include "symbolic_test.h"
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;
namespace F = torch::nn::functional;

class TensorSymbolic : public SymbolicTest<7> {};
INSTANTIATE_TEST_SUITE_P(Opsets, TensorSymbolic, ::testing::ValuesIn(key_opsets()));

TEST_P(TensorSymbolic, CatNegativeDimMixedTypes) {
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b}, -1);
      },
      {torch::randn({2, 3}), torch::randn({2, 1})}, opset(), "cat_neg");
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b}, 0);
      },
      {torch::randn({2, 3}), torch::randn({0, 3})}, opset(), "cat_empty");
  expect_fn_matches(
      [](Tensor a, Tensor b) {
        return torch::cat({a, b});
      },
      {torch::ones({2}, torch::kLong), torch::zeros({3}, torch::kLong)}, opset(), "cat_int64");
}

class TensorOps : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, TensorOps, ::testing::Values(11, 13, 17));

TEST_P(TensorOps, PaddingPixelShuffleEmbeddingCasts) {
  Tensor x = torch::randn({1, 8, 3, 4});
  check(
      [](Tensor x) {
        return F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).value(-1.5));
      },
      {x}, "pad_constant");
  check(
      [](Tensor x) {
        return F::pad(x, F::PadFuncOptions({1, 2, 2, 1}).mode(torch::kReflect));
      },
      {x}, "pad_reflect");
  check(
      [](Tensor x) {
        return F::pad(x, F::PadFuncOptions({3, 1, 0, 2}).mode(torch::kReplicate));
      },
      {x}, "pad_replicate");
  check([](Tensor x) { return F::pixel_shuffle(x, 2); }, {x}, "pixel_shuffle");
  check([](Tensor x) { return F::pixel_unshuffle(x, 1); }, {x}, "pixel_unshuffle");
  torch::nn::Embedding emb(torch::nn::EmbeddingOptions(10, 4).padding_idx(0).max_norm(1.0));
  emb->eval();
  ExportOptions opt;
  opt.opset_version = opset();
  // max_norm renormalizes the weight in place while tracing: LibTorch's own outputs are the oracle.
  expect_export_matches(make_traceable(emb), {torch::tensor({{0L, 3L, 9L}, {3L, 3L, 1L}})}, opt,
                        "embedding_max_norm" + std::to_string(opset()));
  check(
      [](Tensor x) {
        return std::make_tuple(x.to(torch::kLong), x.to(torch::kBool), x.to(torch::kDouble));
      },
      {torch::tensor({-1.7f, 0.f, 2.9f})}, "casts");
  // Every ONNX tensor type that ATen has: float -> integer truncates toward zero.
  check(
      [](Tensor x) {
        return std::make_tuple(x.to(torch::kInt), x.to(torch::kShort), x.to(torch::kChar),
                               x.abs().to(torch::kByte), x.to(torch::kHalf),
                               x.to(torch::kInt).to(torch::kDouble),
                               x.to(torch::kBool).to(torch::kLong));
      },
      {torch::tensor({-100.7f, -1.5f, 0.f, 0.4f, 2.9f, 120.f})}, "casts_all_types");
  check([](Tensor x, Tensor y) { return x.type_as(y) + y; },
        {torch::tensor({1L, 2L}), torch::tensor({0.5f, 1.5f})}, "type_as");
  check([](Tensor s, Tensor a, Tensor b) { return torch::baddbmm(s, a, b, 0.5, 2); },
        {torch::randn({2, 3, 5}), torch::randn({2, 3, 4}), torch::randn({2, 4, 5})}, "baddbmm");
}

// Aten entry points that LibTorch's C++ functional API reaches only when called directly.
TEST_P(TensorOps, DirectAtenEntryPoints) {
  Tensor x = torch::randn({1, 2, 6, 7}), w = torch::randn({3, 2, 3, 3});
  check([w](Tensor x) { return torch::conv2d(x, w, {}, 1, 1); }, {x}, "aten_conv2d");
  check(
      [](Tensor x) {
        return torch::conv1d(x, torch::ones({2, 2, 3}));
      },
      {torch::randn({1, 2, 8})}, "aten_conv1d");
  check(
      [](Tensor x) {
        return torch::conv3d(x, torch::ones({1, 2, 2, 2, 2}) * 0.5);
      },
      {torch::randn({1, 2, 3, 4, 5})}, "aten_conv3d");
  check(
      [w](Tensor x) {
        return torch::convolution(x, w, {}, {2, 1}, {0, 1}, {1, 1}, false, {0, 0}, 1);
      },
      {x}, "aten_convolution");
  check(
      [](Tensor x) {
        return torch::conv_transpose1d(x, torch::ones({2, 3, 3}) * 0.3, {}, 2);
      },
      {torch::randn({1, 2, 5})}, "aten_conv_transpose1d");
  check(
      [](Tensor x) {
        return torch::conv_transpose2d(x, torch::ones({2, 1, 2, 3}) * 0.3, {}, 1, 1);
      },
      {x.narrow(1, 0, 2)}, "aten_conv_transpose2d");
  check(
      [](Tensor x) {
        return torch::conv_transpose3d(x, torch::ones({2, 1, 2, 2, 2}) * 0.3);
      },
      {torch::randn({1, 2, 3, 3, 3})}, "aten_conv_transpose3d");
  check(
      [](Tensor x) {
        return torch::constant_pad_nd(x, {1, 0, 2, 2}, 3.5);
      },
      {x}, "aten_constant_pad_nd");
  check(
      [](Tensor x) {
        return torch::reflection_pad2d(x, {1, 2, 2, 1}) + 0;
      },
      {x}, "aten_reflection_pad2d");
  check(
      [](Tensor x) {
        return torch::reflection_pad1d(x, {2, 1});
      },
      {torch::randn({1, 2, 5})}, "aten_reflection_pad1d");
  check(
      [](Tensor x) {
        return torch::reflection_pad3d(x, {1, 1, 1, 1, 1, 1});
      },
      {torch::randn({1, 1, 3, 3, 3})}, "aten_reflection_pad3d");
  check(
      [](Tensor x) {
        return torch::replication_pad1d(x, {2, 1});
      },
      {torch::randn({1, 2, 5})}, "aten_replication_pad1d");
  check(
      [](Tensor x) {
        return torch::replication_pad2d(x, {0, 3, 1, 0});
      },
      {x}, "aten_replication_pad2d");
  check(
      [](Tensor x) {
        return torch::replication_pad3d(x, {1, 0, 0, 1, 1, 1});
      },
      {torch::randn({1, 1, 3, 3, 3})}, "aten_replication_pad3d");
  check([](Tensor x) { return torch::_softmax(x, 1, false) + torch::_log_softmax(x, -1, false); },
        {x}, "aten_softmax_internal");
  check(
      [](Tensor x) {
        return torch::_reshape_alias(x.contiguous(), {2, 42}, {42, 1});
      },
      {x}, "aten_reshape_alias");
  check(
      [](Tensor x) {
        return torch::_to_copy(x, torch::kDouble) + torch::clip(x, -1, 1).to(torch::kDouble);
      },
      {x}, "aten_to_copy_clip");
  check([](Tensor x) { return torch::rsub(x, 2.0, 3) + x.clone() + x.detach(); }, {x},
        "aten_rsub_clone_detach");
  check([](Tensor x) { return torch::concat({x, x}, -1); }, {x}, "aten_concat");
  check([](Tensor x) { return torch::unsafe_split(x, 3, 3); }, {x}, "aten_unsafe_split");
  check([](Tensor x) { return torch::frobenius_norm(x, {1, 2}); }, {x}, "aten_frobenius_norm");
  check(
      [](Tensor x) {
        return torch::alpha_dropout(x, 0.2, false) + torch::feature_alpha_dropout(x, 0.3, false);
      },
      {x}, "aten_alpha_dropouts");
  check(
      [](Tensor x) {
        return x + torch::empty({7}).fill_(1) + torch::ones_like(x) + torch::full_like(x, 2.5);
      },
      {x}, "aten_like");
  check([](Tensor a, Tensor b) { return torch::logical_xor(a, b) | torch::bitwise_not(a); },
        {torch::tensor({true, false, true}), torch::tensor({true, true, false})},
        "aten_logical_xor_bitwise_not");
  check(
      [](Tensor x) {
        return torch::sinh(x) + torch::cosh(x) + torch::asinh(x) + torch::atanh(x * 0.5) +
               torch::acosh(x.abs() + 1);
      },
      {torch::rand({6}) - 0.5}, "aten_hyperbolic");
}

class TensorParity : public SymbolicTest<11> {};
INSTANTIATE_TEST_SUITE_P(Opsets, TensorParity, ::testing::Values(9, 11, 13, 17));

TEST_P(TensorParity, CircularPadding) {
  Tensor x = torch::arange(24).to(torch::kFloat).reshape({1, 2, 3, 4});
  check_script(R"(
def forward(self, x):
    a = torch.pad(x, [1, 2, 2, 1], "circular")
    b = torch._pad_circular(x, [0, 3, 1, 1])
    c = torch.pad(x, [-1, 2, 0, -2], "circular")
    return a, b, c
)",
               {x}, opset(), "pad_circular");
  expect_export_error(R"(
def forward(self, x):
    return torch._pad_circular(x, [5, 0, 0, 0])
)",
                      {x}, opset(), "wrap");
  // A circular Conv2d, as torch.nn.Conv2d(padding_mode='circular') computes it.
  check_script(R"(
def forward(self, x, w):
    return torch.conv2d(torch.pad(x, [1, 1, 1, 1], "circular"), w)
)",
               {x, torch::randn({3, 2, 3, 3})}, opset(), "conv_circular");
}

class TensorParity11 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, TensorParity11, ::testing::Values(11, 16, 17));

// Scalars computed at run time: baddbmm's beta and alpha, linspace's steps (an empty and a
// one-step range too), and tril/triu's diagonal (Trilu takes it as an input from opset 14).
//
// beta 0 at run time: self is ignored, its NaN and inf too, as PyTorch documents. LibTorch 1.13's
// baddbmm does not always do so on small batches: on the same inputs, some calls return NaN
// where self is infinite (in 477 of 2000 random draws here, and once in CI), so that output's
// oracle is the documented alpha * bmm(b1, b2), not LibTorch's run of it.
TEST_P(TensorParity11, RuntimeScalars) {
  Tensor s = torch::randn({2, 3, 5}), b1 = torch::randn({2, 3, 4}), b2 = torch::randn({2, 4, 5});
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, s, b1, b2, a, n):
    bb = torch.baddbmm(s, b1, b2, beta=float(a), alpha=float(a) * 2.0)
    b0 = torch.baddbmm(s / 0.0, b1, b2, beta=float(a) - 0.75)
    return bb, b0, torch.linspace(-1.0, float(a), int(n)), torch.linspace(2.0, 3.0, int(n) - 5), torch.linspace(2.0, 3.0, int(n) - 4)
)");
  std::vector<Tensor> inputs{s, b1, b2, torch::tensor(0.75), torch::tensor(5L)};
  ExportOptions opt;
  opt.opset_version = opset();
  std::string name = "runtime_scalars_opset" + std::to_string(opset());
  std::string path = temp_dir(name) + "/model.onnx";
  ExportSummary sum = export_model(m, inputs, path, opt);
  ASSERT_EQ(sum.eager_outputs.size(), 5u);
  std::vector<Tensor> want = sum.eager_outputs;
  want[1] = torch::bmm(b1, b2);
  expect_outputs_match(path, sum.graph_inputs(inputs), want, name);
  if (opset() < 14) return;
  check_script(R"(
def forward(self, x, k):
    return torch.tril(x, int(k)), torch.triu(x, int(k) - 2)
)",
               {s, torch::tensor(1L)}, opset(), "runtime_diagonal");
}

// Lists in scripted code: slices of an int list (x.shape[1:], bounds computed at run time
// too) and of a tensor list, list() copies; warnings are dropped; set_ takes the source.
TEST_P(TensorParity11, ListSlicesAndScriptPlumbing) {
  check_script(R"(
def forward(self, x, y, n):
    k = int(n)
    t = list(x.size()[1:])
    z = x.new_zeros(t + y.shape[k:])
    parts = [x, x * 2, x * 3, x * 4]
    q = parts[1:]
    r = parts[-1:0:-2]
    torch.warn("a warning", 2)
    w = x.clone().set_(y)
    return z, q[0] + q[2], r[0] - r[1], list(parts[:2])[1], w
)",
               {torch::randn({2, 3, 4}), torch::randn({5, 6}), torch::tensor(1L)}, opset(),
               "list_slices");
}

// scatter_add and scatter(reduce=) add or multiply at repeated indices: ScatterElements'
// reduction (16). Before 16 a scatter keeps one write per index, so the export refuses.
// Adding at repeated indices: ScatterElements' reduction from opset 16, a one-hot sum before.
class TensorScatter16 : public SymbolicTest<5> {};
INSTANTIATE_TEST_SUITE_P(Opsets, TensorScatter16, ::testing::Values(11, 13, 16, 17));

TEST_P(TensorScatter16, RepeatedIndicesAccumulate) {
  Tensor x = torch::randn({3, 4});
  Tensor idx = torch::tensor({{0L, 1L, 2L, 0L}, {0L, 0L, 2L, 2L}});  // repeats along dim 0
  Tensor src = torch::randn({2, 4});
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); }, {x, idx, src},
        "scatter_add");
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(-1, i, s); },
        {x, torch::tensor({{3L, 3L, 0L}, {1L, 1L, 1L}}), torch::randn({2, 3})},
        "scatter_add_negative_dim");
  check(
      [](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); },
      {torch::zeros({3}, torch::kLong), torch::tensor({0L, 0L, 2L}), torch::tensor({5L, -2L, 7L})},
      "scatter_add_int");
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter(0, i, s, "add"); }, {x, idx, src},
        "scatter_reduce_add");
  // NaN and infinity reach only their own target; an index smaller than self in the other dim;
  // a source larger than the index.
  Tensor special = torch::tensor({{NAN, 1.f, INFINITY}, {2.f, -INFINITY, 3.f}});
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(1, i, s); },
        {torch::zeros({3, 4}), torch::tensor({{0L, 0L, 3L}, {2L, 1L, 1L}}), special},
        "scatter_add_special");
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); },
        {torch::ones({4, 3}), torch::tensor({{3L}, {3L}}), torch::randn({3, 3})},
        "scatter_add_small_index");
  // index_put with accumulate=True: repeated and negative row indices, a NaN value, two index
  // tensors (positions over two dims), a value broadcast over the rest.
  check([](Tensor a, Tensor i, Tensor v) { return a.index_put({i}, v, /*accumulate=*/true); },
        {torch::zeros({4, 3}), torch::tensor({1L, -1L, 1L, 3L}),
         torch::tensor({{1.f, 2.f, 3.f}, {NAN, 1.f, 1.f}, {10.f, 20.f, 30.f}, {5.f, 5.f, 5.f}})},
        "index_put_accumulate");
  check(
      [](Tensor a, Tensor i, Tensor j, Tensor v) {
        return a.index_put({i, j}, v, /*accumulate=*/true);
      },
      {torch::ones({3, 4, 2}), torch::tensor({0L, 2L, 0L}), torch::tensor({1L, 3L, 1L}),
       torch::tensor({4.f, -1.f})},
      "index_put_accumulate_two");
  if (GetParam() < 16) return;
  check([](Tensor a, Tensor i, Tensor s) { return a.scatter(0, i, s, "multiply"); }, {x, idx, src},
        "scatter_reduce_multiply");
}

TEST(TensorErrors, ScatterAddBeforeOpset11IsRefused) {
  ExportOptions opt;
  opt.opset_version = 10;
  std::string dir = temp_dir("scatter_add_10");
  try {
    export_traceable(
        make_traceable_fn([](Tensor a, Tensor i, Tensor s) { return a.scatter_add(0, i, s); }),
        {torch::zeros({3}), torch::tensor({0L, 0L}), torch::ones({2})}, dir + "/m.onnx", opt);
    ADD_FAILURE() << "scatter_add exported at opset 10";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("aten::scatter_add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("11"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tonnx::test
