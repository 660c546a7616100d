// What `tonnx print` shows of a constant: one element as its value, more as the type and the
// first values, elided past eight (ir::values_str, shared with `tonnx run`'s output lines).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "tonnx/check.h"
#include "tonnx/ir.h"
#include "tonnx/proto.h"

namespace tonnx::test {
namespace {

std::string printed_constant(const at::Tensor& value) {
  onnx::ModelProto m = one_node_model("Constant", {});
  auto* node = m.mutable_graph()->mutable_node(0);
  auto* a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = tensor_to_proto(value, "");
  std::string g = printable_graph(m);
  size_t b = g.find("value=");
  return b == std::string::npos ? g : g.substr(b, g.find("]()", b) - b);
}

TEST(PrintConstants, ValuesAreShown) {
  EXPECT_EQ(printed_constant(at::scalar_tensor(2, at::kLong)), "value={2}");
  EXPECT_EQ(printed_constant(at::tensor({-1L, 1L, 1L, 1L})),
            "value=<Tensor Long(4) {-1, 1, 1, 1}>");
  EXPECT_EQ(printed_constant(at::arange(20, at::kFloat).reshape({4, 5}) / 2),
            "value=<Tensor Float(4, 5) {0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, ... (20 in all)}>");
  EXPECT_EQ(printed_constant(at::tensor({1, 0}).to(at::kBool)),
            "value=<Tensor Bool(2) {true, false}>");
  EXPECT_EQ(printed_constant(at::empty({0, 3})), "value=<Tensor Float(0, 3) {}>");
  at::Tensor special = at::tensor({NAN, INFINITY, -INFINITY});
  EXPECT_EQ(printed_constant(special), "value=<Tensor Float(3) {nan, inf, -inf}>");
}

TEST(PrintConstants, ValuesStrOfAnyTensor) {
  EXPECT_EQ(ir::values_str(at::Tensor()), "{}");
  EXPECT_EQ(ir::values_str(at::arange(3, at::kInt), 2), "{0, 1, ... (3 in all)}");
  EXPECT_EQ(ir::values_str(at::arange(6, at::kLong).reshape({2, 3}).t()), "{0, 3, 1, 4, 2, 5}");
}

}  // namespace
}  // namespace tonnx::test
