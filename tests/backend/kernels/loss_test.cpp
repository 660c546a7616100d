// The loss kernels (src/backend/kernels/loss.cpp): NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss against LibTorch's nll_loss and log_softmax, over every reduction,
// with and without class weights and ignore_index (a negative one too), on (N, C) and
// (N, C, H, W) inputs, an empty batch, inf and NaN among the scores, and bad input.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <optional>
#include <string>

#include "error_of.h"
#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace {

namespace ir = tonnx::ir;
using tonnx::test::expect_close;
using tonnx::test::run_one_node;

struct LossCase {
  std::string reduction;
  bool weighted;
  std::optional<int64_t> ignore;
};

// The loss node's attributes for case `c`.
std::vector<ir::Attr> loss_attrs(const LossCase& c) {
  std::vector<ir::Attr> attrs{{"reduction", ir::AttrValue(c.reduction)}};
  if (c.ignore) attrs.push_back({"ignore_index", ir::AttrValue(*c.ignore)});
  return attrs;
}

int64_t aten_reduction(const std::string& r) {
  return r == "none" ? at::Reduction::None : r == "sum" ? at::Reduction::Sum : at::Reduction::Mean;
}

// LibTorch's loss of log-probabilities `logp` (ignore_index -100 when none is given: no target
// here is -100).
at::Tensor torch_nll(const at::Tensor& logp, const at::Tensor& t, const at::Tensor& w,
                     const LossCase& c) {
  return at::nll_loss_nd(logp, t, c.weighted ? c10::optional<at::Tensor>(w) : c10::nullopt,
                         aten_reduction(c.reduction), c.ignore.value_or(-100));
}

std::vector<LossCase> cases() {
  std::vector<LossCase> out;
  for (const char* r : {"none", "sum", "mean"})
    for (bool w : {false, true})
      for (std::optional<int64_t> ig :
           {std::optional<int64_t>(), std::optional<int64_t>(1), std::optional<int64_t>(-1)})
        out.push_back({r, w, ig});
  return out;
}

// Targets in [0, C), with some set to `ignore` where one is given.
at::Tensor targets(at::IntArrayRef sizes, int64_t classes, std::optional<int64_t> ignore) {
  at::Tensor t = torch::randint(0, classes, sizes, torch::kLong);
  if (ignore && t.numel() > 1) t.view({-1})[0] = *ignore;
  return t;
}

std::string label(const LossCase& c, at::IntArrayRef x) {
  return c.reduction + (c.weighted ? " weighted" : "") +
         (c.ignore ? " ignore " + std::to_string(*c.ignore) : "") + " on " + c10::str(x);
}

TEST(BackendLoss, NegativeLogLikelihoodAsLibTorch) {
  torch::manual_seed(3);
  for (const LossCase& c : cases())
    for (std::vector<int64_t> xs : {std::vector<int64_t>{5, 4}, std::vector<int64_t>{2, 3, 4, 5}}) {
      at::Tensor x = at::log_softmax(torch::randn(xs), 1);
      std::vector<int64_t> ts = xs;
      ts.erase(ts.begin() + 1);
      at::Tensor t = targets(ts, xs[1], c.ignore), w = torch::rand({xs[1]}) + 0.5;
      std::vector<at::Tensor> in{x, t};
      if (c.weighted) in.push_back(w);
      expect_close(run_one_node("NegativeLogLikelihoodLoss", in, loss_attrs(c)).at(0),
                   torch_nll(x, t, w, c), {1e-5, 1e-6}, label(c, xs));
    }
}

TEST(BackendLoss, SoftmaxCrossEntropyAsLibTorch) {
  torch::manual_seed(4);
  for (const LossCase& c : cases()) {
    std::vector<int64_t> xs{4, 3, 2};
    at::Tensor x = torch::randn(xs) * 3;
    at::Tensor t = targets({4, 2}, 3, c.ignore), w = torch::rand({3}) + 0.5;
    std::vector<at::Tensor> in{x, t};
    if (c.weighted) in.push_back(w);
    auto out = run_one_node("SoftmaxCrossEntropyLoss", in, loss_attrs(c), 2);
    at::Tensor logp = at::log_softmax(x, 1);
    expect_close(out.at(0), torch_nll(logp, t, w, c), {1e-5, 1e-6}, label(c, xs));
    expect_close(out.at(1), logp, {1e-6, 1e-6}, "log_prob " + label(c, xs));
  }
}

TEST(BackendLoss, InfAndNanScoresGoWhereLibTorchPutsThem) {
  at::Tensor x = torch::tensor({{1.f, INFINITY, 0.f}, {NAN, 1.f, 2.f}, {-INFINITY, 0.f, 1.f}});
  at::Tensor t = torch::tensor({1, 2, 0}, torch::kLong);
  for (const char* r : {"none", "sum", "mean"}) {
    LossCase c{r, false, std::nullopt};
    auto out = run_one_node("SoftmaxCrossEntropyLoss", {x, t}, loss_attrs(c), 2);
    at::Tensor logp = at::log_softmax(x, 1);
    expect_close(out.at(0), torch_nll(logp, t, at::Tensor(), c), {1e-6, 1e-6}, r);
    expect_close(out.at(1), logp, {1e-6, 1e-6}, std::string("log_prob ") + r);
  }
}

TEST(BackendLoss, AnEmptyBatch) {
  at::Tensor x = torch::zeros({0, 3}), t = torch::zeros({0}, torch::kLong);
  for (const char* r : {"none", "sum", "mean"}) {
    LossCase c{r, false, std::nullopt};
    auto got = run_one_node("NegativeLogLikelihoodLoss", {x, t}, loss_attrs(c)).at(0);
    expect_close(got, torch_nll(x, t, at::Tensor(), c), {0, 0}, r);
  }
}

TEST(BackendLoss, BadInputIsAnErrorNamingIt) {
  LossCase c{"mean", false, std::nullopt};
  std::string e = tonnx::test::error_of([&] {
    run_one_node("NegativeLogLikelihoodLoss",
                 {torch::zeros({2, 3}), torch::tensor({0, 3}, torch::kLong)}, loss_attrs(c));
  });
  EXPECT_NE(e.find("a target is outside [0, 2]"), std::string::npos) << e;
  EXPECT_NE(e.find("NegativeLogLikelihoodLoss"), std::string::npos) << e;
  LossCase bad{"average", false, std::nullopt};
  e = tonnx::test::error_of([&] {
    run_one_node("NegativeLogLikelihoodLoss",
                 {torch::zeros({2, 3}), torch::tensor({0, 1}, torch::kLong)}, loss_attrs(bad));
  });
  EXPECT_NE(e.find("average"), std::string::npos) << e;
}

}  // namespace
