// Complex tensors and the FFT from LibTorch C++ (docs/complex.md): traced callables and
// scripted code, on ONNX Runtime and tonnx's backend against LibTorch, with NaN, infinities,
// signed zeros, integer inputs, broadcasting and empty batches; and the loud failures. Models
// written in Python (GFNet, FNet, FNO, spectrograms) are in tests/fft_test.sh.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <filesystem>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

Tolerance fft_tol() {
  Tolerance t;
  t.rtol = 1e-4;
  t.atol = 1e-4;
  return t;
}

// Round trips and spectra, an int64 signal (promoted to float, as torch does), negative dims,
// and every norm. (Which bins a NaN in a signal reaches depends on the FFT's algorithm:
// LibTorch's and ONNX Runtime's differ there, docs/complex.md.)
TEST(Complex, FftFromCpp) {
  torch::manual_seed(3);
  Tensor x = torch::randn({4, 3, 8});
  Tensor ints = torch::randint(-5, 5, {3, 6}, torch::kLong);
  auto f = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    Tensor r = torch::fft::rfft(x, c10::nullopt, -1, "ortho");
    Tensor back = torch::fft::irfft(r, 8, -1, "ortho");
    Tensor c = torch::fft::fft(x, 5, -2, "forward");
    Tensor i = torch::fft::ifft(c, 5, 1, "forward");
    Tensor n = torch::fft::fftn(in[1]);
    Tensor padded = torch::fft::irfft(x, 20);           // a real input, more points than it implies
    Tensor h = torch::fft::hfft(r, 9, -1, "ortho");     // a Hermitian input, odd length
    Tensor ih = torch::fft::ihfft(x, c10::nullopt, 1);  // norm 'backward' is 1/n here
    return {back,
            torch::view_as_real(r),
            torch::view_as_real(i),
            torch::view_as_real(n),
            torch::abs(c),
            torch::angle(c).select(1, 2),
            padded,
            torch::view_as_real(x * c10::complex<double>(0, 1)),
            h,
            torch::view_as_real(ih.resolve_conj())};
  };
  expect_fn_matches(f, {x, ints}, 17, "complex_fft_cpp", fft_tol());
}

// Elementwise rules: complex by real (broadcast) and by complex, signed zeros and infinities in
// angle and atan2, angle of integers, conj, a complex constant.
TEST(Complex, ElementwiseEdgeCases) {
  Tensor re =
      torch::tensor(std::vector<float>{0.0f, -0.0f, -1.5f, 2.0f, INFINITY, -INFINITY, NAN, 0.5f});
  Tensor im =
      torch::tensor(std::vector<float>{0.0f, -0.0f, -0.0f, 3.0f, 1.0f, -1.0f, 1.0f, -INFINITY});
  Tensor scale = torch::tensor(std::vector<float>{2.0f, -1.0f}).view({2, 1});
  Tensor ints = torch::tensor({-3, 0, 4}, torch::kLong);
  auto f = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor z = torch::complex(in[0], in[1]);
    Tensor w = z * in[2];  // [2, 8], by a real column
    Tensor k = torch::tensor({c10::complex<float>(0.5f, -2.0f)});
    Tensor v = w * k + z.conj() - in[2] / (z + 2);
    return {torch::angle(z),        torch::atan2(in[1], in[0]), torch::abs(w),
            torch::view_as_real(v), torch::angle(in[3]),        torch::real(in[0])};
  };
  expect_fn_matches(f, {re, im, scale, ints}, 17, "complex_elementwise", fft_tol());
}

// An empty batch: the DFT of no rows.
TEST(Complex, EmptyBatch) {
  auto f = [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {torch::fft::irfft(torch::fft::rfft(in[0]), 6)};
  };
  expect_fn_matches(f, {torch::randn({0, 6})}, 17, "complex_empty", fft_tol());
}

// Scripted: a branch that returns a complex tensor from both sides stays complex.
TEST(Complex, ScriptedBranch) {
  ExportOptions opt;
  opt.opset_version = 17;
  expect_script_matches(R"(
def forward(self, x):
    if bool(x.sum() > 0):
        y = torch.fft_rfft(x)
    else:
        y = torch.fft_rfft(x * 2.0)
    return torch.fft_irfft(y * y.conj(), 8)
)",
                        {torch::randn({2, 8})}, opt, "complex_branch", fft_tol());
}

// Scripted code run on inputs that take the branch the example did not (there the rank is not
// known, so the DFT's axis is negative, counting the pair dim), with complex-to-real ops, a list
// of complex tensors indexed and sliced, and arithmetic in place.
TEST(Complex, ScriptedBranchNotTaken) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x):
    if bool(x.sum() > 0):
        y = torch.fft_irfft(torch.fft_rfft(x), 8)
        a = torch.fft_fft(x).abs()
    else:
        z = torch.fft_rfft(x) * (1 + 2j)
        l = [z, z * 2.0, z.conj()]
        w = l[1:][0] + l[2]
        w *= 3.0
        w += 1.0
        y = torch.fft_irfft(w, 8)
        a = torch.fft_fft(x).imag
    return y, a
)");
  ExportOptions opt;
  opt.opset_version = 17;
  std::string dir = temp_dir("complex_branch_not_taken");
  torch::Tensor example = torch::rand({3, 8}) + 0.1;
  export_model(m, {example}, dir + "/model.onnx", opt);
  auto prepared = backend::prepare(dir + "/model.onnx", "CPU");
  for (float sign : {1.0f, -1.0f}) {
    TestDataSet set;
    set.inputs = {(torch::rand({3, 8}) + 0.1) * sign};
    auto eager = m.forward({set.inputs[0]}).toTuple();  // kept alive while its elements are read
    for (const auto& e : eager->elements()) set.outputs.push_back(e.toTensor());
    std::string data = dir + (sign > 0 ? "/taken" : "/not_taken");
    write_test_data(data, set);
    RunResult r = run_ort(dir + "/model.onnx", data, 1e-4, 1e-4);
    EXPECT_EQ(r.exit_code, 0) << data << ":\n" << r.output;
    auto outs = prepared.run(set.inputs);
    ASSERT_EQ(outs.size(), 2u);
    for (size_t k = 0; k < 2; ++k) expect_close(outs[k], set.outputs[k], fft_tol(), data);
  }
}

TEST(Complex, Refused) {
  std::string dir = temp_dir("complex_refused");
  auto rfft = make_traceable_fn([](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {torch::fft::rfft(in[0]).abs()};
  });
  ExportOptions opt;
  opt.opset_version = 16;
  expect_error(
      [&] {
        export_model(rfft, {torch::randn({2, 8})}, dir + "/a.onnx", opt);
      },
      "opset 17");
  auto out = make_traceable_fn([](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {torch::fft::fft(in[0])};
  });
  expect_error(
      [&] {
        export_model(out, {torch::randn({2, 8})}, dir + "/b.onnx");
      },
      "return torch.view_as_real(y)");
  auto matmul = make_traceable_fn([](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    Tensor c = torch::fft::fft(in[0]);
    return {torch::view_as_real(torch::matmul(c, c))};
  });
  expect_error(
      [&] {
        export_model(matmul, {torch::randn({4, 4})}, dir + "/c.onnx");
      },
      "aten::matmul");
  torch::jit::Module loop("Loop");
  loop.define(R"(
def forward(self, x):
    y = torch.fft_fft(x)
    for i in range(3):
        y = y * 2.0
    return torch.view_as_real(y)
)");
  opt.opset_version = 17;
  expect_error(
      [&] {
        export_model(loop, {torch::randn({2, 4})}, dir + "/d.onnx", opt);
      },
      "carried through this loop");
  torch::jit::Module list("List");
  list.define(R"(
def forward(self, x) -> List[Tensor]:
    return [torch.fft_fft(x), x]
)");
  expect_error(
      [&] {
        export_model(list, {torch::randn({2, 4})}, dir + "/e.onnx", opt);
      },
      "return torch.view_as_real(y)");
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.onnx"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/d.onnx"));
}

}  // namespace
}  // namespace tonnx::test
