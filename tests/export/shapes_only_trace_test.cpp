// The shapes-only trace (ExportOptions::shapes_only_trace): tonnx's meta kernels size and lay
// out their results as LibTorch's CPU kernels do, and refuse what they do not handle; a
// shapes-only export writes the very bytes a trace on values writes; a model that needs its
// values is traced on them, and says why; the module's parameters, buffers and training mode
// are as before, also when the shapes-only trace fails half-way.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <sstream>

#include "error_of.h"
#include "export/pipeline.h"
#include "export/trace.h"
#include "graph_builder.h"
#include <torch/csrc/jit/ir/irparser.h>
#include "test_util.h"
#include "tonnx/export.h"
#include "tonnx/models.h"

namespace tonnx {
namespace {

namespace nn = torch::nn;
using at::Tensor;

Tensor to_meta(const Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// What the meta kernel gives is what the CPU kernel gives: sizes, dtype, and strides (where
// there are elements for them to describe).
void expect_same_layout(const Tensor& meta, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(meta.is_meta()) << what;
  EXPECT_EQ(meta.sizes(), cpu.sizes()) << what;
  EXPECT_EQ(meta.scalar_type(), cpu.scalar_type()) << what;
  if (cpu.numel() > 1) {
    EXPECT_EQ(meta.strides(), cpu.strides()) << what;
  }
}

class MetaKernels : public ::testing::Test {
 protected:
  void SetUp() override { detail::register_meta_kernels(); }
};

TEST_F(MetaKernels, ConvolutionSizesAsTheCpuKernel) {
  struct Case {
    std::vector<int64_t> input, weight, stride, padding, dilation;
    bool transposed;
    std::vector<int64_t> output_padding;
    int64_t groups;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 3, 9, 9}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1, true},
      {{2, 4, 10, 7}, {6, 2, 3, 2}, {2, 3}, {1, 0}, {2, 1}, false, {0, 0}, 2, false},
      {{0, 3, 8, 8}, {5, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1, true},  // no batch
      {{1, 4, 11}, {4, 1, 5}, {2}, {2}, {1}, false, {0}, 4, true},                   // depthwise
      {{1, 2, 5, 6, 7},
       {3, 2, 2, 3, 3},
       {1, 2, 1},
       {1, 1, 0},
       {1, 1, 2},
       false,
       {0, 0, 0},
       1,
       true},
      {{1, 4, 5, 5}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, true, {1, 0}, 1, true},
      {{2, 4, 3, 4}, {4, 2, 4, 3}, {3, 2}, {0, 1}, {2, 1}, true, {2, 1}, 2, false},
      {{1, 2, 7}, {2, 3, 4}, {2}, {1}, {1}, true, {1}, 1, true},
  };
  for (at::ScalarType dtype : {at::kFloat, at::kDouble})
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      auto opts = at::TensorOptions().dtype(dtype);
      Tensor x = at::randn(c.input, opts), w = at::randn(c.weight, opts);
      const int64_t out_channels = c.transposed ? c.weight[1] * c.groups : c.weight[0];
      c10::optional<Tensor> b, bm;
      if (c.bias) {
        b = at::randn({out_channels}, opts);
        bm = to_meta(*b);
      }
      Tensor cpu = at::convolution(x, w, b, c.stride, c.padding, c.dilation, c.transposed,
                                   c.output_padding, c.groups);
      Tensor meta = at::convolution(to_meta(x), to_meta(w), bm, c.stride, c.padding, c.dilation,
                                    c.transposed, c.output_padding, c.groups);
      expect_same_layout(meta, cpu, "convolution case " + std::to_string(k));
    }
}

TEST_F(MetaKernels, ConvolutionRefusesWhatItDoesNotHandle) {
  Tensor w = to_meta(at::randn({4, 3, 3, 3}));
  // Channels-last input (the CPU kernel lays out its result by it), and integer dtypes.
  Tensor cl = to_meta(at::randn({1, 3, 8, 8}).contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_THROW(at::conv2d(cl, w), c10::Error);
  auto longs = at::TensorOptions().dtype(at::kLong).device(at::kMeta);
  EXPECT_THROW(at::conv2d(at::empty({1, 3, 8, 8}, longs), at::empty({4, 3, 3, 3}, longs)),
               c10::Error);
  // Contiguous, but the CPU kernel lays out its result channels-last: a grayscale NHWC image
  // permuted to NCHW (is_contiguous() ignores the strides of size-1 dims), a 1x1 weight.
  Tensor gray = at::randn({2, 28, 28, 1}).permute({0, 3, 1, 2});
  ASSERT_TRUE(gray.is_contiguous());
  Tensor w1 = at::randn({4, 1, 3, 3});
  EXPECT_FALSE(at::conv2d(gray, w1).is_contiguous());  // (why the meta kernel refuses it)
  EXPECT_THROW(at::conv2d(to_meta(gray), to_meta(w1)), c10::Error);
  EXPECT_THROW(at::_adaptive_avg_pool2d(to_meta(gray), {7, 7}), c10::Error);
  Tensor w11 = at::randn({4, 1, 1, 3}).permute({0, 3, 1, 2});
  EXPECT_THROW(at::conv2d(to_meta(at::randn({1, 3, 8, 8})), to_meta(w11)), c10::Error);
  // An output that would be empty (kernel larger than the padded input).
  EXPECT_THROW(at::conv2d(to_meta(at::randn({1, 3, 2, 2})), w), c10::Error);
}

TEST_F(MetaKernels, BatchNormSizesAsTheCpuKernel) {
  for (std::vector<int64_t> shape :
       std::vector<std::vector<int64_t>>{{2, 3}, {2, 3, 5}, {1, 3, 4, 4}, {2, 3, 2, 3, 2}})
    for (bool training : {false, true})
      for (bool affine : {false, true}) {
        Tensor x = at::randn(shape), w = at::rand({3}), b = at::randn({3});
        Tensor rm = at::randn({3}), rv = at::rand({3}) + 0.5;
        c10::optional<Tensor> wo, bo, wm, bmeta;
        if (affine) {
          wo = w;
          bo = b;
          wm = to_meta(w);
          bmeta = to_meta(b);
        }
        auto cpu = at::native_batch_norm(x, wo, bo, rm.clone(), rv.clone(), training, 0.1, 1e-5);
        auto meta = at::native_batch_norm(to_meta(x), wm, bmeta, to_meta(rm), to_meta(rv), training,
                                          0.1, 1e-5);
        std::string what = "batch_norm rank " + std::to_string(shape.size()) +
                           (training ? " training" : " eval") + (affine ? " affine" : "");
        expect_same_layout(std::get<0>(meta), std::get<0>(cpu), what + " output");
        expect_same_layout(std::get<1>(meta), std::get<1>(cpu), what + " mean");
        expect_same_layout(std::get<2>(meta), std::get<2>(cpu), what + " invstd");
      }
  // Eval mode without running statistics, and statistics of the wrong size: refused.
  Tensor x = to_meta(at::randn({2, 3, 4}));
  EXPECT_THROW(at::native_batch_norm(x, {}, {}, {}, {}, false, 0.1, 1e-5), c10::Error);
  Tensor four = to_meta(at::randn({4}));
  EXPECT_THROW(at::native_batch_norm(x, {}, {}, four, four, false, 0.1, 1e-5), c10::Error);
}

TEST_F(MetaKernels, AdaptiveAvgPoolSizesAsTheCpuKernel) {
  for (std::vector<int64_t> shape :
       std::vector<std::vector<int64_t>>{{1, 3, 7, 7}, {2, 4, 5, 9}, {3, 6, 6}, {0, 2, 4, 4}})
    for (std::vector<int64_t> out :
         std::vector<std::vector<int64_t>>{{1, 1}, {3, 2}, {7, 7}, {10, 12}, {0, 3}}) {
      Tensor x = at::randn(shape);
      expect_same_layout(at::_adaptive_avg_pool2d(to_meta(x), out),
                         at::_adaptive_avg_pool2d(x, out),
                         "adaptive_avg_pool2d " + c10::str(at::IntArrayRef(shape)) + " -> " +
                             c10::str(at::IntArrayRef(out)));
    }
  EXPECT_THROW(at::_adaptive_avg_pool2d(to_meta(at::randn({1, 2, 0, 4})), {2, 2}), c10::Error);
  EXPECT_THROW(at::_adaptive_avg_pool2d(to_meta(at::randn({5, 5})), {2, 2}), c10::Error);
}

TEST_F(MetaKernels, IndexSelectSizesAsTheCpuKernel) {
  for (at::ScalarType dtype : {at::kFloat, at::kLong, at::kBool})
    for (at::ScalarType index_type : {at::kLong, at::kInt})
      for (int64_t dim : {0, 1, -1, -3})
        for (int64_t n : {0, 1, 4}) {
          Tensor self = at::randint(0, 2, {3, 4, 5}).to(dtype);
          Tensor index = at::randint(0, 3, {n}).to(index_type);
          expect_same_layout(at::index_select(to_meta(self), dim, to_meta(index)),
                             at::index_select(self, dim, index),
                             "index_select dim " + std::to_string(dim) + " n " + std::to_string(n));
        }
  Tensor self = to_meta(at::randn({3, 4}));
  EXPECT_THROW(at::index_select(self, 2, to_meta(at::zeros({1}, at::kLong))), c10::Error);
  EXPECT_THROW(at::index_select(self, 0, to_meta(at::zeros({1}))), c10::Error);  // float index
  EXPECT_THROW(at::index_select(self, 0, to_meta(at::zeros({1, 1}, at::kLong))), c10::Error);
}

TEST_F(MetaKernels, ReluAndWhereLayOutAsTheCpuKernels) {
  const std::vector<Tensor> inputs = {
      at::randn({2, 3}),
      at::randn({4, 3}).t(),
      at::randint(-5, 5, {3, 2}, at::kLong),
      at::randn({2, 0, 3}),
      at::randn({2, 3, 4}).permute({2, 0, 1}),
      at::randn(std::vector<int64_t>{}, at::TensorOptions().dtype(at::kDouble))};
  for (size_t k = 0; k < inputs.size(); ++k)
    expect_same_layout(at::relu(to_meta(inputs[k])), at::relu(inputs[k]),
                       "relu input " + std::to_string(k));
  EXPECT_THROW(at::relu(to_meta(at::zeros({2}, at::kBool))), c10::Error);

  Tensor cond = at::rand({3, 1}) > 0.5, a = at::randn({1, 4}), b = at::randn({3, 4});
  expect_same_layout(at::where(to_meta(cond), to_meta(a), to_meta(b)), at::where(cond, a, b),
                     "where broadcast");
  Tensor bt = at::randn({4, 3}).t();
  expect_same_layout(at::where(to_meta(cond), to_meta(bt), to_meta(a)), at::where(cond, bt, a),
                     "where transposed");
  Tensor big = at::rand({2, 3, 4}) > 0.5, scalar = at::scalar_tensor(-1.0);
  expect_same_layout(at::where(to_meta(big), to_meta(b), to_meta(scalar)),
                     at::where(big, b, scalar), "where with a scalar");
  // A CPU tensor does not mix with meta ones, not even a scalar: the trace runs on values.
  EXPECT_THROW(at::where(to_meta(big), to_meta(b), scalar), c10::Error);
  // Type promotion and uint8 conditions stay with the CPU kernel.
  EXPECT_THROW(at::where(to_meta(cond), to_meta(a), to_meta(b.to(at::kDouble))), c10::Error);
  EXPECT_THROW(at::where(to_meta(cond.to(at::kByte)), to_meta(a), to_meta(b)), c10::Error);
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The zoo's models traced shapes-only write the file a trace on values writes, byte for byte.
TEST(ShapesOnlyTrace, ZooExportsAreTheBytesOfATraceOnValues) {
  const std::string dir = test::temp_dir("shape_trace");
  for (const char* name : {"super_resolution", "resnet18", "dcgan_generator", "dcgan_discriminator",
                           "word_language_model", "inception_v3"}) {
    const models::ZooEntry& e = models::find_model(name);
    Traceable model = e.make(0);
    std::vector<Tensor> inputs = e.inputs(e.input_shapes, 0);
    ExportOptions values, shapes;
    values.shapes_only_trace = false;
    ExportSummary a = export_model(model, inputs, dir + "/values.onnx", values);
    ExportSummary b = export_model(model, inputs, dir + "/shapes.onnx", shapes);
    EXPECT_FALSE(a.traced_shapes_only) << name;
    EXPECT_TRUE(b.traced_shapes_only) << name << ": " << b.traced_on_values_because;
    EXPECT_EQ(file_bytes(dir + "/values.onnx"), file_bytes(dir + "/shapes.onnx")) << name;
    // eager_outputs come from a forward on the values all the same.
    ASSERT_EQ(a.eager_outputs.size(), b.eager_outputs.size()) << name;
    for (size_t k = 0; k < a.eager_outputs.size(); ++k)
      EXPECT_TRUE(a.eager_outputs[k].equal(b.eager_outputs[k])) << name << " output " << k;
  }
}

TEST(ShapesOnlyTrace, DynamicAxesGiveTheBytesOfATraceOnValues) {
  const std::string dir = test::temp_dir("shape_trace");
  const models::ZooEntry& e = models::find_model("word_language_model");
  Traceable model = e.make(0);
  std::vector<Tensor> inputs = e.inputs(e.input_shapes, 0);
  ExportOptions values, shapes;
  values.input_names = shapes.input_names = {"tokens", "h0", "c0"};
  values.dynamic_axes = shapes.dynamic_axes = {
      {"tokens", {{0, "seq"}, {1, "batch"}}}, {"h0", {{1, "batch"}}}, {"c0", {{1, "batch"}}}};
  values.shapes_only_trace = false;
  export_model(model, inputs, dir + "/dyn_values.onnx", values);
  ExportSummary s = export_model(model, inputs, dir + "/dyn_shapes.onnx", shapes);
  EXPECT_TRUE(s.traced_shapes_only) << s.traced_on_values_because;
  EXPECT_EQ(file_bytes(dir + "/dyn_values.onnx"), file_bytes(dir + "/dyn_shapes.onnx"));
}

TEST(ShapesOnlyTrace, WithoutEagerOutputsForwardRunsOnceOnMetaOnly) {
  struct CountedImpl : nn::Module {
    Tensor forward(Tensor x) {
      ++(x.is_meta() ? on_meta : on_values);
      return torch::relu(x) * 3;
    }
    int on_meta = 0, on_values = 0;
  };
  auto m = std::make_shared<CountedImpl>();
  ExportOptions o;
  o.eager_outputs = false;
  ExportSummary s = export_model(nn::AnyModule(m), {torch::randn({2, 3})},
                                 test::temp_dir("shape_trace") + "/counted.onnx", o);
  EXPECT_TRUE(s.traced_shapes_only);
  EXPECT_TRUE(s.eager_outputs.empty());
  EXPECT_EQ(m->on_meta, 1);
  EXPECT_EQ(m->on_values, 0);
  // With eager outputs (the default): one more forward, on the values.
  s = export_model(nn::AnyModule(m), {torch::randn({2, 3})},
                   test::temp_dir("shape_trace") + "/counted.onnx");
  EXPECT_EQ(m->on_meta, 2);
  EXPECT_EQ(m->on_values, 1);
  ASSERT_EQ(s.eager_outputs.size(), 1u);
  EXPECT_FALSE(s.eager_outputs[0].is_meta());
}

// Reads its input's values through data_ptr<float>(), which a meta tensor refuses.
struct RawReadImpl : nn::Module {
  Tensor forward(Tensor x) { return x * (x.contiguous().data_ptr<float>()[0] > 0 ? 2.0 : 3.0); }
};
TORCH_MODULE(RawRead);

// Makes a CPU tensor of its own and adds it to its input: a meta input cannot mix with it.
struct OwnTensorImpl : nn::Module {
  Tensor forward(Tensor x) { return x + torch::arange(x.size(1)).to(x.dtype()); }
};
TORCH_MODULE(OwnTensor);

TEST(ShapesOnlyTrace, ModelsThatNeedValuesAreTracedOnThemAndSayWhy) {
  const std::string dir = test::temp_dir("shape_trace");
  Tensor x = torch::rand({2, 3}) + 1;
  ExportSummary s = export_model(RawRead(), {x}, dir + "/raw.onnx");
  EXPECT_FALSE(s.traced_shapes_only);
  EXPECT_NE(s.traced_on_values_because.find("data is not allocated"), std::string::npos)
      << s.traced_on_values_because;
  ASSERT_EQ(s.eager_outputs.size(), 1u);
  EXPECT_TRUE(s.eager_outputs[0].equal(x * 2));

  s = export_model(OwnTensor(), {x}, dir + "/own.onnx");
  EXPECT_FALSE(s.traced_shapes_only);
  EXPECT_NE(s.traced_on_values_because.find("meta and cpu"), std::string::npos)
      << s.traced_on_values_because;
  test::expect_outputs_match(dir + "/own.onnx", {x}, s.eager_outputs, "own_tensor");

  // item(): a read of values, traced again on them (and checked, as before).
  struct ItemImpl : nn::Module {
    Tensor forward(Tensor x) { return x * x.max().item<double>(); }
  };
  s = export_model(nn::AnyModule(std::make_shared<ItemImpl>()), {x}, dir + "/item.onnx");
  EXPECT_FALSE(s.traced_shapes_only);
  EXPECT_FALSE(s.traced_on_values_because.empty());
  EXPECT_EQ(s.warnings.size(), 1u);

  // The same tensor passed twice: a meta stand-in would not share it.
  struct TwoImpl : nn::Module {
    Tensor forward(Tensor a, Tensor b) { return a + b; }
  };
  Tensor y = torch::zeros({3});
  s = export_model(nn::AnyModule(std::make_shared<TwoImpl>()), {y, y}, dir + "/two.onnx");
  EXPECT_FALSE(s.traced_shapes_only);
  EXPECT_NE(s.traced_on_values_because.find("share memory"), std::string::npos);

  // STRICT traces on values, twice.
  ExportOptions strict;
  strict.trace_check = TraceCheck::STRICT;
  s = export_model(nn::Linear(3, 2), {x}, dir + "/strict.onnx", strict);
  EXPECT_FALSE(s.traced_shapes_only);
}

// Adds up its inputs in a buffer, written in place: a trace on values exports the sum.
struct RunningSumImpl : nn::Module {
  Tensor total = register_buffer("total", torch::zeros({}));
  Tensor forward(Tensor x) {
    total.add_(x.sum());
    return x * 2;
  }
};
TORCH_MODULE(RunningSum);

TEST(ShapesOnlyTrace, WritesToBuffersAndTrainingModeAreTracedOnValues) {
  const std::string dir = test::temp_dir("shape_trace");
  ExportOptions o;
  o.eager_outputs = false;
  RunningSum sum;
  Tensor x = torch::rand({2}) + 1;
  ExportSummary s = export_model(sum, {x}, dir + "/sum.onnx", o);
  EXPECT_FALSE(s.traced_shapes_only);
  EXPECT_NE(s.traced_on_values_because.find("writes to a parameter or buffer"), std::string::npos)
      << s.traced_on_values_because;
  EXPECT_TRUE(sum->total.equal(x.sum()));  // once, on values, as torch.onnx does
  // Batch norm in training mode updates its running statistics inside its kernel.
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(3, 4, 3)), nn::BatchNorm2d(4));
  o.training = TrainingMode::TRAINING;
  s = export_model(net, {torch::randn({2, 3, 6, 6})}, dir + "/train.onnx", o);
  EXPECT_FALSE(s.traced_shapes_only);
  EXPECT_NE(s.traced_on_values_because.find("training mode"), std::string::npos);
}

// Fails on meta tensors only after its first layers ran: parameters, buffers and the training
// mode must be the module's own again, whether the shapes-only trace succeeds or not.
TEST(ShapesOnlyTrace, ParametersBuffersAndModeAreRestored) {
  torch::manual_seed(0);
  for (bool fails : {false, true}) {
    nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(3, 4, 3)), nn::BatchNorm2d(4), nn::ReLU());
    if (fails) net->push_back(RawRead());
    net->train();
    std::vector<std::pair<std::string, Tensor>> before;
    for (const auto& p : net->named_parameters()) before.emplace_back(p.key(), p.value().clone());
    for (const auto& b : net->named_buffers()) before.emplace_back(b.key(), b.value().clone());
    ExportSummary s = export_model(net, {torch::randn({1, 3, 6, 6})},
                                   test::temp_dir("shape_trace") + "/restore.onnx");
    EXPECT_EQ(s.traced_shapes_only, !fails);
    EXPECT_TRUE(net->is_training());
    size_t k = 0;
    for (const auto& p : net->named_parameters()) {
      EXPECT_TRUE(p.value().device().is_cpu() && p.value().requires_grad()) << p.key();
      EXPECT_TRUE(p.value().equal(before[k++].second)) << p.key();
    }
    for (const auto& b : net->named_buffers()) {
      ASSERT_TRUE(b.value().device().is_cpu()) << b.key();
      // The export runs in eval mode: the running statistics are not updated.
      EXPECT_TRUE(b.value().equal(before[k++].second)) << b.key();
    }
    // The module still runs, on its own weights.
    Tensor x = torch::randn({1, 3, 6, 6});
    net->eval();
    EXPECT_EQ(net->forward(x).sizes(), (std::vector<int64_t>{1, 4, 4, 4}));
  }
}

// The last check of every export: each output's declared dtype, rank and known sizes against
// the module's own output on the example. (The traced-number bug declared Double where the
// module gave Float; the model was valid and silently different.)
TEST(CheckAgainstModule, DeclaredTypesMustBeTheModules) {
  auto graph = [](ir::TensorType t) {
    auto b = std::make_shared<test::GraphBuilder>();
    ir::Value* y = b->op("Relu", {b->in("x")});
    y->set_type(t);
    b->out(y, "y");
    return b;
  };
  using ir::Dim;
  Tensor e = torch::zeros({2, 3});
  auto same = graph({ir::DType::Float, std::vector<Dim>{Dim::known(2), Dim::known(3)}});
  EXPECT_NO_THROW(detail::check_against_module(same->g, {e}));
  auto open = graph({ir::DType::Float, std::vector<Dim>{Dim::named("n"), Dim{}}});
  EXPECT_NO_THROW(detail::check_against_module(open->g, {e}));
  auto wrong_dtype = graph({ir::DType::Double, std::vector<Dim>{Dim::known(2), Dim::known(3)}});
  std::string msg = test::error_of([&] { detail::check_against_module(wrong_dtype->g, {e}); });
  EXPECT_NE(msg.find("declares output 0 ('y') as Double(2, 3), but the module gave Float(2, 3)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("It is made by Relu"), std::string::npos) << msg;
  auto wrong_size = graph({ir::DType::Float, std::vector<Dim>{Dim::known(2), Dim::known(4)}});
  EXPECT_THROW(detail::check_against_module(wrong_size->g, {e}), ExportError);
  auto wrong_rank = graph({ir::DType::Float, std::vector<Dim>{Dim{}}});
  EXPECT_THROW(detail::check_against_module(wrong_rank->g, {e}), ExportError);
  auto b = graph({ir::DType::Bool, std::nullopt});
  EXPECT_NO_THROW(detail::check_against_module(b->g, {torch::zeros({4}, torch::kBool)}));
  EXPECT_THROW(detail::check_against_module(b->g, {torch::zeros({4}, torch::kUInt8)}), ExportError);
}

// aten::__is__ / __isnot__ as the converter meets them: the TorchScript frontend folds these
// tests in the graph before converting (docs/torchscript.md), so a graph is converted directly:
// a tensor is not None, and a value is itself.
TEST(Export, IsAndIsNotReachTheirSymbolic) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Float(2, 3)):
  %n : NoneType = prim::Constant()
  %a : bool = aten::__isnot__(%x, %n)
  %b : bool = aten::__is__(%x, %x)
  %c : bool = aten::__is__(%x, %n)
  %y : Float(2, 3) = aten::relu(%x)
  return (%y, %a, %b, %c))IR",
                      g.get());
  detail::TraceResult tr;
  tr.graph = g;
  tr.num_user_inputs = 1;
  Tensor x = torch::randn({2, 3});
  tr.example_inputs = {x};
  tr.eager_outputs = {x.relu(), torch::tensor(true), torch::tensor(true), torch::tensor(false)};
  ExportOptions o;
  detail::Exported ex = detail::finish_export(std::move(tr), o);
  std::string path = test::temp_dir("is_isnot") + "/m.onnx";
  detail::write_exported(std::move(ex), path, o, 0.0);
  auto outs = backend::prepare(path, "CPU").run({x});
  ASSERT_EQ(outs.size(), 4u);
  EXPECT_TRUE(outs[0].equal(x.relu()));
  EXPECT_TRUE(outs[1].item<bool>());
  EXPECT_TRUE(outs[2].item<bool>());
  EXPECT_FALSE(outs[3].item<bool>());
}

}  // namespace
}  // namespace tonnx
