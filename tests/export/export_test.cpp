// The export API: the seed's AlexNet example, names, scopes, options, errors that lose nothing.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/check.h"
#include "tonnx/models.h"
#include "tonnx/proto.h"

namespace tonnx::test {
namespace {
namespace fs = std::filesystem;
using torch::Tensor;

ExportOptions seed_options() {
  ExportOptions opt;
  opt.input_names = {"actual_input_1"};
  for (int i = 0; i < 16; ++i) opt.input_names.push_back("learned_" + std::to_string(i));
  opt.output_names = {"output1"};
  opt.verbose = true;
  return opt;
}

TEST(SeedExample, AlexNetNamesScopesAndOrt) {
  torch::manual_seed(0);
  auto model = models::AlexNet();
  models::init_weights(*model);
  model->eval();
  auto dummy_input = torch::randn({10, 3, 224, 224});
  ExportOptions opt = seed_options();
  std::ostringstream verbose;
  opt.verbose_stream = &verbose;
  std::string dir = temp_dir("seed_alexnet");
  ExportSummary s = export_model(model, {dummy_input}, dir + "/alexnet.onnx", opt);

  onnx::ModelProto m = read_model_proto(dir + "/alexnet.onnx");
  ASSERT_EQ(m.graph().input_size(), 1);
  EXPECT_EQ(m.graph().input(0).name(), "actual_input_1");
  ASSERT_EQ(m.graph().initializer_size(), 16);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(m.graph().initializer(i).name(), "learned_" + std::to_string(i));
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), "output1");
  // learned_0 is features.0.weight: [64, 3, 11, 11]; learned_15 the last bias [1000].
  EXPECT_EQ(m.graph().initializer(0).dims_size(), 4);
  EXPECT_EQ(m.graph().initializer(15).dims(0), 1000);

  // Verbose output: every node line has a scope, and reads like the seed's.
  std::string text = verbose.str();
  EXPECT_NE(
      text.find(
          "%17 : Float(10, 64, 55, 55) = onnx::Conv[dilations=[1, 1], group=1, kernel_shape=[11, "
          "11], "
          "pads=[2, 2, 2, 2], strides=[4, 4]](%actual_input_1, %learned_0, %learned_1), scope: "
          "AlexNet/Sequential[features]/Conv2d[0]"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("scope: AlexNet/Sequential[classifier]/Linear[6]"), std::string::npos)
      << text;
  std::istringstream lines(text);
  std::string line;
  int nodes = 0;
  while (std::getline(lines, line)) {
    if (line.find(" = onnx::") == std::string::npos) continue;
    ++nodes;
    EXPECT_NE(line.find(", scope: AlexNet"), std::string::npos) << line;
  }
  EXPECT_EQ(nodes, s.num_nodes);
  // Node names follow module paths.
  EXPECT_EQ(m.graph().node(0).name(), "/features/features.0/Conv");

  TestDataSet set;
  set.inputs = {dummy_input};
  set.outputs = s.eager_outputs;
  write_test_data(dir + "/data", set);
  RunResult r = run_ort(dir + "/alexnet.onnx", dir + "/data");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Export, SummaryDescribesTheFile) {
  torch::nn::Sequential m(torch::nn::Conv2d(3, 4, 3), torch::nn::ReLU());
  m->eval();
  std::string path = temp_dir("summary") + "/m.onnx";
  ExportSummary s = export_model(m, {torch::randn({1, 3, 8, 8})}, path);
  EXPECT_EQ(s.path, path);
  EXPECT_EQ(s.opset, 17);
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].type.str(), "Float(1, 3, 8, 8)");
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0].type.str(), "Float(1, 4, 6, 6)");
  EXPECT_EQ(s.op_counts.at("Conv"), 1);
  EXPECT_EQ(s.op_counts.at("Relu"), 1);
  EXPECT_EQ(s.num_initializers, 2);
  EXPECT_EQ(s.parameter_bytes, (4 * 3 * 3 * 3 + 4) * 4);
  EXPECT_EQ(s.file_bytes, static_cast<int64_t>(fs::file_size(path)));
  // Unnamed parameters are named by module path.
  onnx::ModelProto p = read_model_proto(path);
  EXPECT_EQ(p.graph().initializer(0).name(), "0.weight");
  EXPECT_EQ(p.graph().initializer(1).name(), "0.bias");
}

TEST(Export, ModulePathNamesAndPartialNames) {
  auto model = models::resnet18();
  model->eval();
  ExportOptions opt;
  opt.input_names = {"image", "stem_weight"};
  std::string path = temp_dir("names") + "/r.onnx";
  export_model(model, {torch::randn({1, 3, 64, 64})}, path, opt);
  onnx::ModelProto p = read_model_proto(path);
  EXPECT_EQ(p.graph().input(0).name(), "image");
  std::set<std::string> inits;
  for (const auto& t : p.graph().initializer()) inits.insert(t.name());
  EXPECT_TRUE(inits.count("stem_weight"));
  EXPECT_TRUE(inits.count("layer1.0.conv1.weight"));
  EXPECT_TRUE(inits.count("layer2.0.downsample.0.weight"));
  EXPECT_TRUE(inits.count("fc.bias"));
  EXPECT_FALSE(inits.count("bn1.num_batches_tracked"));  // unused buffers are dropped
}

TEST(Export, TooManyNamesIsAnError) {
  torch::nn::Linear lin(2, 2);
  ExportOptions opt;
  opt.input_names = {"x", "w", "b", "extra"};
  std::string path = temp_dir("too_many") + "/m.onnx";
  try {
    export_model(lin, {torch::randn({1, 2})}, path, opt);
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "input_names has 4 names, but the model has 1 input(s) and 2 parameter"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Export, OpsetOutOfRange) {
  torch::nn::Linear lin(2, 2);
  for (int opset : {8, 24}) {
    ExportOptions opt;
    opt.opset_version = opset;
    try {
      export_model(lin, {torch::randn({1, 2})}, temp_dir("opset_range") + "/m.onnx", opt);
      FAIL();
    } catch (const ExportError& e) {
      EXPECT_NE(std::string(e.what()).find("opset_version " + std::to_string(opset) +
                                           " is not supported: use 9 to 23"),
                std::string::npos);
    }
  }
}

TEST(Export, WrongInputRankNamesTheProblem) {
  torch::nn::Conv2d conv(3, 4, 3);
  try {
    export_model(conv, {torch::randn({3, 8})}, temp_dir("wrong_rank") + "/m.onnx");
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("tracing the model failed"), std::string::npos)
        << e.what();
  }
}

TEST(Export, WrongInputCount) {
  torch::nn::Linear lin(2, 2);
  try {
    export_model(lin, {torch::randn({1, 2}), torch::randn({1, 2})},
                 temp_dir("wrong_count") + "/m.onnx");
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("tracing the model failed"), std::string::npos)
        << e.what();
  }
}

TEST(Export, UnwritablePathWritesNothing) {
  torch::nn::Linear lin(2, 2);
  EXPECT_THROW(export_model(lin, {torch::randn({1, 2})}, "/nonexistent_dir/m.onnx"), ExportError);
  std::string dir = temp_dir("dir_as_file");
  EXPECT_THROW(export_model(lin, {torch::randn({1, 2})}, dir), ExportError);
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Export, MissingSymbolicsReportedOnceAndNothingWritten) {
  std::string path = temp_dir("missing") + "/m.onnx";
  {
    std::ofstream out(path);
    out << "a good file";
  }
  // Two special functions that ONNX has no op for (and tonnx no built-in symbolic).
  auto weird =
      make_traceable_fn([](Tensor x) { return torch::special_erfcx(x) + torch::special_i1e(x); });
  try {
    export_traceable(weird, {torch::randn({2, 3})}, path);
    FAIL();
  } catch (const ExportError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("2 ops have no symbolic function"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten::special_erfcx"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten::special_i1e"), std::string::npos) << msg;
    EXPECT_NE(msg.find("inputs Float(2, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("register one with tonnx::register_symbolic"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ONNX_ATEN_FALLBACK"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_file(path), "a good file");
  // No temporary files left behind either.
  int files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) (void)e, ++files;
  EXPECT_EQ(files, 1);
}

TEST(Export, CustomSymbolicAtRunTimeMakesExportPass) {
  auto model = make_traceable_fn([](Tensor x) { return torch::special_erfcx(x); });
  std::string path = temp_dir("custom") + "/m.onnx";
  EXPECT_THROW(export_traceable(model, {torch::randn({2, 3})}, path), ExportError);
  // erfcx(x) = exp(x^2) * erfc(x) = exp(x^2) * (1 - erf(x))
  register_symbolic("aten::special_erfcx", 9, [](SymbolicContext& g, ir::Value* x) {
    ir::Value* one = g.constant_scalar(1.0, at::kFloat);
    ir::Value* erfc = g.op("Sub", {one, g.op("Erf", {x})});
    return g.op("Mul", {g.op("Exp", {g.op("Mul", {x, x})}), erfc});
  });
  ExportOptions opt;
  expect_export_matches(model, {torch::rand({2, 3})}, opt, "custom_erfcx");
  EXPECT_TRUE(unregister_symbolic("aten::special_erfcx"));
  EXPECT_THROW(export_traceable(model, {torch::randn({2, 3})}, path), ExportError);
}

TEST(Export, SeedEluExampleWithScope) {
  // The seed's example: a user symbolic for elu, registered without rebuilding tonnx.
  register_symbolic("aten::elu", 9,
                    [](SymbolicContext& g, ir::Value* input, double alpha, double scale,
                       double input_scale) -> Outputs {
                      if (scale != 1.0 || input_scale != 1.0)
                        g.fail("only scale=1 and input_scale=1 are supported");
                      return g.op("Elu", {input}, {{"alpha", alpha}});
                    });
  auto model = make_traceable_fn([](Tensor x) { return torch::elu(x, 0.7); });
  ExportOptions opt;
  auto path = expect_export_matches(model, {torch::randn({2, 5})}, opt, "user_elu");
  EXPECT_EQ(op_types(path), std::vector<std::string>{"Elu"});
  unregister_symbolic("aten::elu");
}

TEST(Export, AtenFallbackAndFallthrough) {
  auto model = make_traceable_fn([](Tensor x) { return torch::special_i1e(x).relu(); });
  ExportOptions opt;
  opt.operator_export_type = OperatorExportTypes::ONNX_ATEN_FALLBACK;
  std::string path = temp_dir("aten") + "/m.onnx";
  export_traceable(model, {torch::randn({2, 3})}, path, opt);
  onnx::ModelProto m = read_model_proto(path);
  ASSERT_EQ(m.graph().node_size(), 2);
  const auto& n = m.graph().node(0);
  EXPECT_EQ(n.op_type(), "ATen");
  EXPECT_EQ(n.domain(), "org.pytorch.aten");
  EXPECT_EQ(n.attribute(0).name(), "operator");
  EXPECT_EQ(n.attribute(0).s(), "special_i1e");
  bool imported = false;
  for (const auto& o : m.opset_import()) imported = imported || o.domain() == "org.pytorch.aten";
  EXPECT_TRUE(imported);
  // tonnx's backend runs ATen nodes through LibTorch's dispatcher.
  Tensor x = torch::randn({2, 3});
  Tensor want = torch::special_i1e(x).relu();
  expect_close(backend::prepare(path, "CPU").run({x})[0], want, {1e-5, 1e-8}, "");
  opt.operator_export_type = OperatorExportTypes::ONNX_FALLTHROUGH;
  export_traceable(model, {torch::randn({2, 3})}, path, opt);
  m = read_model_proto(path);
  EXPECT_EQ(m.graph().node(0).op_type(), "special_i1e");
  expect_close(backend::prepare(path, "CPU").run({x})[0], want, {1e-5, 1e-8}, "");
}

TEST(Export, AtenFallbackWithOptionalTensorsAndScalarArguments) {
  // nll_loss has no symbolic below opset 12 (NegativeLogLikelihoodLoss): it becomes an ATen
  // node whose absent optional `weight` keeps its input slot and whose reduction /
  // ignore_index are attributes; tonnx's backend runs it.
  auto fn = [](Tensor x, Tensor target) {
    return torch::nn::functional::nll_loss(
        torch::log_softmax(x, 1), target,
        torch::nn::functional::NLLLossFuncOptions().ignore_index(2));
  };
  ExportOptions opt;
  opt.operator_export_type = OperatorExportTypes::ONNX_ATEN_FALLBACK;
  opt.opset_version = 11;
  std::string path = temp_dir("aten_optional") + "/m.onnx";
  Tensor x = torch::randn({5, 4}), target = torch::tensor({0L, 2L, 3L, 1L, 2L});
  export_traceable(make_traceable_fn(fn), {x, target}, path, opt);
  bool has_aten = false;
  onnx::ModelProto proto = read_model_proto(path);
  for (const auto& n : proto.graph().node()) has_aten = has_aten || n.op_type() == "ATen";
  EXPECT_TRUE(has_aten);
  auto outs = backend::prepare(path, "CPU").run({x, target});
  ASSERT_EQ(outs.size(), 1u);
  expect_close(outs[0], fn(x, target), {1e-5, 1e-6}, c10::str(outs[0]) + c10::str(fn(x, target)));
}

TEST(Export, AtenFallbackWithTensorListArguments) {
  // block_diag(Tensor[]) has no symbolic: the list's elements become the ATen node's inputs,
  // its length an attribute, and the backend runs it.
  auto fn = [](Tensor a, Tensor b, Tensor c) {
    return torch::block_diag({a[0], b[1]}) + torch::block_diag({c, c}).sum();
  };
  ExportOptions opt;
  opt.operator_export_type = OperatorExportTypes::ONNX_ATEN_FALLBACK;
  std::string path = temp_dir("aten_list") + "/m.onnx";
  Tensor a = torch::randn({2, 3, 4}), b = torch::randn({2, 4, 5}), c = torch::randn({2, 2});
  export_traceable(make_traceable_fn(fn), {a, b, c}, path, opt);
  onnx::ModelProto proto = read_model_proto(path);
  int aten = 0;
  for (const auto& n : proto.graph().node()) aten += n.op_type() == "ATen";
  EXPECT_EQ(aten, 2);
  // Other inputs than the example's: nothing was frozen into the file.
  a = torch::randn({2, 3, 4});
  b = torch::randn({2, 4, 5});
  c = torch::randn({2, 2});
  auto outs = backend::prepare(path, "CPU").run({a, b, c});
  ASSERT_EQ(outs.size(), 1u);
  expect_close(outs[0], fn(a, b, c), {1e-5, 1e-5}, "");
}

TEST(Export, ExportParamsFalseAndKeepInitializersAsInputs) {
  torch::nn::Linear lin(3, 2);
  std::string dir = temp_dir("params");
  ExportOptions opt;
  opt.export_params = false;
  export_model(lin, {torch::randn({1, 3})}, dir + "/a.onnx", opt);
  onnx::ModelProto a = read_model_proto(dir + "/a.onnx");
  EXPECT_EQ(a.graph().initializer_size(), 0);
  EXPECT_EQ(a.graph().input_size(), 3);
  opt = {};
  opt.keep_initializers_as_inputs = true;
  export_model(lin, {torch::randn({1, 3})}, dir + "/b.onnx", opt);
  onnx::ModelProto b = read_model_proto(dir + "/b.onnx");
  EXPECT_EQ(b.graph().initializer_size(), 2);
  EXPECT_EQ(b.graph().input_size(), 3);
  EXPECT_NO_THROW(check_model_file(dir + "/b.onnx"));
}

TEST(Export, DynamicAxesAreSymbolicInTheFile) {
  torch::nn::Sequential m(torch::nn::Conv2d(3, 4, 3), torch::nn::ReLU(), torch::nn::Flatten(),
                          torch::nn::Linear(4 * 6 * 6, 5));
  m->eval();
  ExportOptions opt;
  opt.input_names = {"x"};
  opt.output_names = {"y"};
  opt.dynamic_axes["x"] = {{0, "batch"}};
  opt.dynamic_axes["y"] = {{0, "batch"}};
  std::string dir = temp_dir("dynamic_batch");
  ExportSummary s = export_model(m, {torch::randn({2, 3, 8, 8})}, dir + "/m.onnx", opt);
  onnx::ModelProto p = read_model_proto(dir + "/m.onnx");
  EXPECT_EQ(p.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(p.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  // The static dim (5 classes) stays static, in the file and in the summary.
  EXPECT_EQ(p.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 5);
  EXPECT_EQ(s.outputs.at(0).type.str(), "Float(batch, 5)");
  // Runs at another batch size on ORT and on tonnx's backend.
  torch::NoGradGuard ng;
  auto x = torch::randn({5, 3, 8, 8});
  TestDataSet set;
  set.inputs = {x};
  set.outputs = {m->forward(x)};
  write_test_data(dir + "/data", set);
  RunResult r = run_ort(dir + "/m.onnx", dir + "/data");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Export, DynamicAxesUnknownNameIsAnError) {
  torch::nn::Linear lin(2, 2);
  ExportOptions opt;
  opt.dynamic_axes["nope"] = {{0, "b"}};
  std::string path = temp_dir("dyn_bad") + "/m.onnx";
  try {
    export_model(lin, {torch::randn({1, 2})}, path, opt);
    ADD_FAILURE() << "exported";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ignore_unknown_dynamic_axes"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

// torch.onnx's behaviour on request: the name is a warning, and the model is the static one.
TEST(Export, DynamicAxesUnknownNameCanBeIgnoredWithAWarning) {
  torch::nn::Linear lin(2, 2);
  ExportOptions opt;
  opt.dynamic_axes["nope"] = {{0, "b"}};
  opt.dynamic_axes["output_0"] = {{0, "b"}};
  opt.ignore_unknown_dynamic_axes = true;
  std::string path = temp_dir("dyn_ignored") + "/m.onnx";
  ExportSummary s = export_model(lin, {torch::randn({1, 2})}, path, opt);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("'nope'"), std::string::npos) << s.warnings[0];
  EXPECT_EQ(s.outputs.at(0).type.str(), "Float(b, 2)");
  EXPECT_EQ(s.inputs.at(0).type.str(), "Float(1, 2)");
}

TEST(Backend, BracedListOfTwoTensorsIsPositional) {
  auto fn = [](Tensor a, Tensor b) { return a - b; };
  std::string path = temp_dir("braced") + "/m.onnx";
  export_traceable(make_traceable_fn(fn), {torch::ones({2}), torch::zeros({2})}, path);
  auto rep = backend::prepare(path, "CPU");
  Tensor a = torch::tensor({3.f, 4.f}), b = torch::tensor({1.f, 1.f});
  EXPECT_TRUE(torch::equal(rep.run({a, b})[0], a - b));
}

TEST(Export, MultipleInputsAndTupleOutputs) {
  auto fn = [](Tensor a, Tensor b) { return std::make_tuple(a + b, torch::relu(a - b), a); };
  ExportOptions opt;
  opt.input_names = {"a", "b"};
  opt.output_names = {"sum", "relu_diff", "a_again"};
  auto path = expect_export_matches(make_traceable_fn(fn),
                                    {torch::randn({2, 3}), torch::randn({2, 3})}, opt, "tuple_out");
  onnx::ModelProto p = read_model_proto(path);
  ASSERT_EQ(p.graph().output_size(), 3);
  EXPECT_EQ(p.graph().output(2).name(), "a_again");
}

TEST(Export, ConstantFoldingOnAndOff) {
  auto w = torch::randn({3, 4});
  auto fn = [w](Tensor x) { return torch::matmul(x, w.t() * 2); };
  ExportOptions opt;
  auto folded =
      expect_export_matches(make_traceable_fn(fn), {torch::randn({2, 4})}, opt, "fold_on");
  EXPECT_EQ(op_types(folded), std::vector<std::string>{"MatMul"});
  opt.do_constant_folding = false;
  auto unfolded =
      expect_export_matches(make_traceable_fn(fn), {torch::randn({2, 4})}, opt, "fold_off");
  EXPECT_GT(op_types(unfolded).size(), 1u);
}

TEST(Export, TrainingModeRestoresTheModule) {
  torch::nn::Sequential m(torch::nn::Linear(2, 2), torch::nn::Dropout(0.5));
  m->train();
  ExportOptions opt;
  export_model(m, {torch::randn({1, 2})}, temp_dir("restore") + "/m.onnx", opt);
  EXPECT_TRUE(m->is_training());
  opt.training = TrainingMode::TRAINING;
  opt.opset_version = 13;
  std::string path = temp_dir("training") + "/m.onnx";
  export_model(m, {torch::randn({1, 2})}, path, opt);
  auto ops = op_types(path);
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Dropout"), ops.end());
}

}  // namespace
}  // namespace tonnx::test
