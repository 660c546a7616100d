// The symbolic registry: dispatch by opset, user registrations before built-ins, typed args.
#include <filesystem>

#include "test_util.h"

namespace tonnx::test {
namespace {

TEST(Registry, HighestRegistrationNotAboveOpset) {
  register_symbolic("test::op", 9, [](SymbolicContext& g) -> Outputs { return g.input(0); });
  register_symbolic("test::op", 13, [](SymbolicContext& g) -> Outputs { return g.input(0); });
  const SymbolicFn* a9 = find_symbolic("test::op", 9);
  const SymbolicFn* a12 = find_symbolic("test::op", 12);
  const SymbolicFn* a13 = find_symbolic("test::op", 13);
  const SymbolicFn* a17 = find_symbolic("test::op", 17);
  EXPECT_EQ(a9, a12);
  EXPECT_NE(a12, a13);
  EXPECT_EQ(a13, a17);
  EXPECT_EQ(find_symbolic("test::op", 8), nullptr);
  EXPECT_EQ(next_opset_with_symbolic("test::op", 8), 9);
  EXPECT_EQ(next_opset_with_symbolic("test::op", 10), 13);
  EXPECT_EQ(next_opset_with_symbolic("test::op", 13), -1);
  EXPECT_TRUE(unregister_symbolic("test::op", 13));
  EXPECT_EQ(find_symbolic("test::op", 17), a9);
  EXPECT_TRUE(unregister_symbolic("test::op"));
  EXPECT_FALSE(unregister_symbolic("test::op"));
  EXPECT_EQ(find_symbolic("test::op", 17), nullptr);
}

TEST(Registry, UserRegistrationOverridesBuiltin) {
  const SymbolicFn* builtin = find_symbolic("aten::relu", 17);
  ASSERT_NE(builtin, nullptr);
  register_symbolic("aten::relu", 9, [](SymbolicContext& g, ir::Value* x) {
    return g.op("LeakyRelu", {x}, {{"alpha", 0.0f}});
  });
  auto path = expect_fn_matches([](torch::Tensor x) { return torch::relu(x); },
                                {torch::randn({3, 4})}, 17, "relu_override");
  EXPECT_EQ(op_types(path), std::vector<std::string>{"LeakyRelu"});
  unregister_symbolic("aten::relu");
  EXPECT_EQ(find_symbolic("aten::relu", 17), builtin);
  bool listed = false;
  for (const auto& s : registered_symbolics())
    listed = listed || (s.name == "aten::relu" && !s.user);
  EXPECT_TRUE(listed);
}

// A user symbolic that emits an invalid node: the error names the aten op and says the
// function is the user's, and nothing is written.
TEST(Registry, BrokenUserSymbolicIsNamed) {
  register_symbolic("aten::relu", 9,
                    [](SymbolicContext& g, ir::Value* x) { return g.op("Add", {x}); });
  auto model = make_traceable_fn([](torch::Tensor x) { return torch::relu(x) * 2; });
  std::string path = temp_dir("broken_user_symbolic") + "/m.onnx";
  try {
    export_traceable(model, {torch::randn({2, 3})}, path);
    ADD_FAILURE() << "the export should fail";
  } catch (const ExportError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("your symbolic function for aten::relu"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(Add)"), std::string::npos) << msg;
  }
  unregister_symbolic("aten::relu");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Registry, BadRegistrationsAreRejected) {
  auto fn = [](SymbolicContext& g) -> Outputs { return g.input(0); };
  EXPECT_THROW(register_symbolic("relu", 9, fn), std::invalid_argument);
  EXPECT_THROW(register_symbolic("aten::relu", 0, fn), std::invalid_argument);
}

TEST(Registry, TypedArgumentMismatchNamesTheArgument) {
  // A symbolic may take a prefix of the schema's arguments, as the seed's elu(g, input, alpha).
  register_symbolic("aten::elu", 9, [](SymbolicContext& g, ir::Value* x, double alpha) {
    return g.op("Elu", {x}, {{"alpha", alpha}});
  });
  auto elu = make_traceable_fn([](torch::Tensor x) { return torch::elu(x, 0.5); });
  std::string elu_path = temp_dir("arity_prefix") + "/m.onnx";
  export_traceable(elu, {torch::randn({2, 3})}, elu_path);
  EXPECT_EQ(op_types(elu_path), std::vector<std::string>{"Elu"});
  unregister_symbolic("aten::elu");
  // A symbolic declaring more parameters than the op has inputs.
  register_symbolic("aten::mul", 9,
                    [](SymbolicContext&, ir::Value* a, ir::Value*, ir::Value*) { return a; });
  auto model = make_traceable_fn([](torch::Tensor x) { return x * 2; });
  try {
    export_traceable(model, {torch::randn({2})}, temp_dir("arity") + "/m.onnx");
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(
        std::string(e.what()).find("takes 3 argument(s) but this overload of the op has only 2"),
        std::string::npos)
        << e.what();
  }
  unregister_symbolic("aten::mul");
  // A constant expected where a tensor computed at run time is given.
  register_symbolic("aten::mul", 9, [](SymbolicContext& g, ir::Value* a, int64_t) {
    return g.op("Identity", {a});
  });
  auto model2 = make_traceable_fn([](torch::Tensor x, torch::Tensor y) { return x * y; });
  try {
    export_traceable(model2, {torch::randn({2}), torch::randn({2})},
                     temp_dir("arity2") + "/m.onnx");
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("input 1 (other) must be a constant int"),
              std::string::npos)
        << e.what();
  }
  unregister_symbolic("aten::mul");
}

}  // namespace
}  // namespace tonnx::test
