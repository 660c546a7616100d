// src/symbolic/order.cpp: kthvalue, median, searchsorted, count_nonzero, trace, cumprod and tile
// (ops torch.onnx 1.13 does not export), on tonnx's backend and ONNX Runtime against LibTorch,
// with NaN and infinities, integers, negative dims, keepdim and empty tensors.
#include "test_util.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

class Order : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { torch::manual_seed(3); }
  template <typename Fn>
  void check(Fn f, std::vector<Tensor> in, const std::string& name, Tolerance tol = {}) {
    expect_fn_matches(f, in, GetParam(), name, tol);
  }
};
INSTANTIATE_TEST_SUITE_P(Opsets, Order, ::testing::Values(11, 13, 17));

// Distinct values: the index LibTorch returns among tied values is its quickselect's (it
// differs between kthvalue and median), TopK's is the lowest.
Tensor distinct(std::vector<int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return torch::randperm(n).to(torch::kFloat).sub(n / 2.0).reshape(sizes) * 0.5;
}

TEST_P(Order, KthvalueAndMedian) {
  Tensor x = distinct({3, 5, 4});
  check([](Tensor x) { return torch::kthvalue(x, 2, 1); }, {x}, "kthvalue");
  check([](Tensor x) { return torch::kthvalue(x, 4, -1, true); }, {x}, "kthvalue_keep");
  check([](Tensor x) { return torch::kthvalue(x, 1, 0); }, {x.to(torch::kLong)}, "kthvalue_int");
  check([](Tensor x) { return torch::median(x); }, {x}, "median_all");
  check([](Tensor x) { return torch::median(x, 1); }, {x}, "median_dim");
  check([](Tensor x) { return torch::median(x, -1, true); }, {x}, "median_keep");
  check([](Tensor x) { return torch::median(x, 0); }, {x.to(torch::kInt)}, "median_int");
  // NaN: above everything for kthvalue; any NaN makes median's slice NaN, at its first NaN.
  Tensor s = torch::tensor({{3.f, NAN, 1.f, INFINITY, -INFINITY},
                            {5.f, 4.f, 3.f, 2.f, 1.f},
                            {NAN, 0.5f, NAN, -2.f, 7.f}});
  check([](Tensor x) { return torch::kthvalue(x, 3, 1); }, {s}, "kthvalue_nan_middle");
  check([](Tensor x) { return torch::median(x, 1); }, {s}, "median_nan");
  check([](Tensor x) { return torch::median(x); }, {s}, "median_all_nan");
  check([](Tensor x) { return torch::kthvalue(x, 1, 0); }, {torch::tensor(2.5f)}, "kthvalue_0d");
}

TEST_P(Order, Searchsorted) {
  Tensor seq = torch::tensor({-1.f, 0.f, 0.f, 2.5f, 7.f});
  Tensor v = torch::tensor({{0.f, -5.f, 7.f}, {NAN, INFINITY, 2.f}});
  check([](Tensor s, Tensor v) { return torch::searchsorted(s, v); }, {seq, v}, "searchsorted");
  check([](Tensor s, Tensor v) { return torch::searchsorted(s, v, true, true); }, {seq, v},
        "searchsorted_right_int32");
  check([](Tensor s, Tensor v) { return torch::searchsorted(s, v, false, false, "right"); },
        {seq, v}, "searchsorted_side");
  Tensor rows = torch::tensor({{1L, 3L, 5L}, {-2L, -2L, 9L}});
  check([](Tensor s, Tensor v) { return torch::searchsorted(s, v); },
        {rows, torch::tensor({{3L, 6L}, {-2L, 0L}})}, "searchsorted_rows_int");
  Tensor unsorted = torch::tensor({7.f, -1.f, 2.5f, 0.f});
  check([](Tensor s, Tensor v,
           Tensor sorter) { return torch::searchsorted(s, v, false, false, c10::nullopt, sorter); },
        {unsorted, v, torch::argsort(unsorted)}, "searchsorted_sorter");
  check([](Tensor s) { return torch::searchsorted(s, at::Scalar(2.0)); }, {seq},
        "searchsorted_scalar");
  check([](Tensor s, Tensor v) { return torch::searchsorted(s, v); }, {seq, torch::zeros({0, 2})},
        "searchsorted_empty");
}

TEST_P(Order, CountsTracesProductsTiles) {
  Tensor x = torch::tensor({{0.f, NAN, -0.f}, {1.f, 0.f, INFINITY}});
  check([](Tensor x) { return torch::count_nonzero(x); }, {x}, "count_nonzero");
  check([](Tensor x) { return torch::count_nonzero(x, at::IntArrayRef{-1}); }, {x},
        "count_nonzero_dim");
  check([](Tensor x) { return torch::count_nonzero(x, c10::optional<int64_t>(0)); },
        {x.to(torch::kLong)}, "count_nonzero_int");
  check([](Tensor x) { return torch::trace(x); }, {torch::randn({3, 4})}, "trace");
  check([](Tensor x) { return torch::trace(x); }, {x}, "trace_nan_off_diagonal");
  check([](Tensor x) { return torch::trace(x); }, {torch::tensor({{2, 9}, {4, -5}}, torch::kInt)},
        "trace_int");
  Tensor p = torch::rand({2, 5, 3}) + 0.5;
  check([](Tensor x) { return torch::cumprod(x, 1); }, {p}, "cumprod");
  check([](Tensor x) { return torch::cumprod(x, -1, torch::kDouble); }, {p}, "cumprod_dtype");
  check([](Tensor x) { return torch::cumprod(x, 0); }, {torch::tensor({3L, -2L, 0L, 5L})},
        "cumprod_int");
  check([](Tensor x) { return torch::cumprod(x, 0); },
        {torch::tensor({2.f, INFINITY, 0.f, NAN, 1.f})}, "cumprod_inf_nan");
  check([](Tensor x) { return torch::cumprod(x, 1); }, {torch::ones({2, 0})}, "cumprod_empty");
}

TEST_P(Order, CumulativeExtremesAndDiag) {
  // Ties take the latest index, a NaN stays once seen (at the latest NaN), as in LibTorch.
  Tensor s = torch::tensor(
      {{1.f, 3.f, 3.f, NAN, 2.f, NAN, 9.f}, {-INFINITY, 0.f, -1.f, 0.f, INFINITY, 5.f, 5.f}});
  check([](Tensor x) { return torch::cummax(x, 1); }, {s}, "cummax");
  check([](Tensor x) { return torch::cummin(x, -1); }, {s}, "cummin");
  check([](Tensor x) { return torch::cummax(x, 0); }, {s.t().contiguous()}, "cummax_dim0");
  Tensor i = torch::tensor({{4L, -2L, 4L, 7L}, {INT64_MIN, INT64_MAX, 0L, INT64_MIN}});
  check([](Tensor x) { return torch::cummin(x, 1); }, {i}, "cummin_int64");
  check([](Tensor x) { return torch::cummax(x, 1); }, {i.to(torch::kShort)}, "cummax_int16");
  check([](Tensor x) { return torch::cummax(x, 0); }, {torch::tensor({false, true, false})},
        "cummax_bool");
  check([](Tensor x) { return torch::cummin(x, 1); }, {torch::zeros({2, 0})}, "cummin_empty");
  Tensor v = torch::tensor({1.5f, NAN, -3.f});
  check(
      [](Tensor x) {
        return std::make_tuple(torch::diag(x), torch::diag(x, 2), torch::diag(x, -1));
      },
      {v}, "diag_vector");
  check([](Tensor x) { return torch::diag(x, 1); }, {torch::tensor({1L, 2L})}, "diag_vector_int");
  Tensor m = torch::randn({3, 5});
  check(
      [](Tensor x) {
        return std::make_tuple(torch::diag(x), torch::diag(x, 2), torch::diag(x, -2),
                               torch::diag(x, 4));
      },
      {m}, "diag_matrix");
}

// A trace records tile as repeat (LibTorch decomposes it); a scripted graph keeps aten::tile.
TEST_P(Order, ScriptedTile) {
  ExportOptions opt;
  opt.opset_version = GetParam();
  expect_script_matches(R"(
def forward(self, x, b):
    return x.tile([2]), x.tile([2, 1, 3]), b.tile([0, 2])
)",
                        {torch::randn({2, 3}), torch::randn({2, 3}).gt(0)}, opt, "tile");
}

}  // namespace
}  // namespace tonnx::test
