// Aten ops that appear in scripted TorchScript (torch.jit.script keeps conv2d, clip, concat...
// that a trace decomposes). The modules are compiled from TorchScript source in C++
// (torch::jit::Module::define), exported, and checked against LibTorch on ONNX Runtime and
// tonnx's backend.
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/script.h>

#include "test_util.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::test {
namespace {
using torch::Tensor;

// Exports at `opset`, with a dynamic batch when asked: sizes stay computed (aten::size, len,
// min, max are exported, not folded).
void expect_script_matches(const std::string& source, const std::vector<Tensor>& inputs,
                           const std::string& name, int opset = 17, bool dynamic_batch = false) {
  ExportOptions opt;
  opt.opset_version = opset;
  if (dynamic_batch)
    for (size_t i = 0; i < inputs.size(); ++i)
      add_dynamic_axes(opt, inputs.size() == 1 ? "input" : "input_" + std::to_string(i), {0});
  test::expect_script_matches(source, inputs, opt, name);
}

TEST(ScriptedOps, ConvolutionEntryPoints) {
  expect_script_matches(R"JIT(
def forward(self, x, w, w1, w3):
    a = torch.conv2d(x, w, None, [1, 1], [1, 1])
    b = torch.convolution(x, w, None, [2, 1], [0, 1], [1, 1], False, [0, 0], 1)
    c = torch.conv1d(x[0], w1)
    d = torch.conv3d(x.unsqueeze(0), w3)
    return a, b, c, d
)JIT",
                        {torch::randn({1, 2, 6, 7}), torch::randn({3, 2, 3, 3}),
                         torch::randn({4, 6, 2}), torch::randn({2, 1, 2, 2, 2})},
                        "script_conv");
  expect_script_matches(R"JIT(
def forward(self, x, w):
    a = torch.conv_transpose2d(x, w, None, 2, 1)
    b = torch.conv_transpose1d(x[:, :, 0], w[:, :, 0], None, 1)
    c = torch.conv_transpose3d(x.unsqueeze(2), w.unsqueeze(2))
    return a, b, c
)JIT",
                        {torch::randn({1, 2, 4, 5}), torch::randn({2, 3, 3, 3})},
                        "script_conv_transpose");
}

// `math` as Python's TorchScript resolves it (to aten's builtins): Module::define's default
// resolver does not know it.
struct MathResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(
      const std::string& name, torch::jit::GraphFunction& f,
      const torch::jit::SourceRange& loc) override {
    if (name == "math") return std::make_shared<torch::jit::BuiltinModule>("aten");
    return torch::jit::nativeResolver()->resolveValue(name, f, loc);
  }
};

// math.floor / math.ceil of a float give an int (Floor in floats, then the cast); floor and
// ceil of an integer tensor are the tensor (ONNX's Floor takes floats only).
TEST(ScriptedOps, FloorAndCeilToInt) {
  torch::jit::Module m("Scripted");
  m.define(R"(
def forward(self, x):
    n = math.floor(float(x.size(0)) * 1.5)
    c = math.ceil(float(x.size(1)) * 0.4)
    k = x.long()
    return x.new_zeros([n, c]), torch.floor(k), torch.ceil(k), torch.floor(x)
)",
           std::make_shared<MathResolver>());
  std::vector<Tensor> in{torch::randn({3, 4}) * 10};
  ExportOptions opt;
  add_dynamic_axes(opt, "input", {0, 1});
  std::string path = temp_dir("floor_ceil_to_int") + "/model.onnx";
  ExportSummary s = export_model(m, in, path, opt);
  expect_outputs_match(path, s.graph_inputs(in), s.eager_outputs, "floor_ceil_to_int");
}

// unsqueeze at a dim computed at run time (from a tensor's value): Unsqueeze's axes input,
// negative dims counting from the output's end as in torch; below opset 13 a clear refusal.
TEST(ScriptedOps, UnsqueezeAtRunTimeDim) {
  const char* source = R"(
def forward(self, x, k):
    return torch.unsqueeze(x, int(k)) * 2.0
)";
  ExportOptions opt;
  opt.opset_version = 13;
  for (int64_t k : {-1, 0, 2, -3})
    test::expect_script_matches(source, {torch::randn({2, 3}), torch::tensor(k)}, opt,
                                "unsqueeze_runtime_dim");
  opt.opset_version = 11;
  torch::jit::Module m("Scripted");
  m.define(source);
  try {
    export_model(m, {torch::randn({2, 3}), torch::tensor(int64_t{1})},
                 temp_dir("unsqueeze_runtime_dim_11") + "/model.onnx", opt);
    FAIL() << "opset 11 cannot unsqueeze at a run-time dim";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("opset 13"), std::string::npos) << e.what();
  }
}

// batch_norm of an input whose batch and length vary (dynamic axes, or a scripted block):
// only the rank is needed, and the channel count only to make a missing weight or bias.
TEST(ScriptedOps, BatchNormOfVaryingSizes) {
  ExportOptions opt;
  opt.input_names = {"x", "w", "b", "rm", "rv"};
  opt.dynamic_axes["x"] = {{0, "n"}, {2, "len"}};
  test::expect_script_matches(R"(
def forward(self, x, w, b, rm, rv):
    y = torch.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, False)
    z = torch.batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5, False)
    return y, z
)",
                              {torch::randn({3, 4, 5}), torch::randn({4}), torch::randn({4}),
                               torch::randn({4}), torch::rand({4}) + 0.5},
                              opt, "batch_norm_varying_sizes");
}

// x.device.type (prim::type of prim::device) folds to the string "cpu" at export.
TEST(ScriptedOps, DeviceType) {
  expect_script_matches(R"(
def forward(self, x):
    if x.device.type == "cpu":
        return x + 1.0
    return x - 1.0
)",
                        {torch::randn({2, 3})}, "device_type");
}

// IntImplicit: a 0-d tensor where TorchScript wants an int (topk's k computed at run time).
TEST(ScriptedOps, IntImplicit) {
  expect_script_matches(R"(
def forward(self, x, k):
    return torch.topk(x, k)[0] * 2
)",
                        {torch::randn({3, 6}), torch::tensor(4L)}, "int_implicit");
}

// Factories whose sizes or ends are computed at run time (torch.onnx's scripted tests).
TEST(ScriptedOps, FactoriesOfRuntimeSizes) {
  expect_script_matches(R"(
def forward(self, x, n):
    k = int(n)
    return torch.eye(k, 3) * 2.0, torch.one_hot(x, k + 1), torch.linspace(float(n), 5.0, 4), torch.hann_window(k, False), torch.hann_window(k), torch.eye(k)
)",
                        {torch::tensor({0L, 2L, 1L}), torch::tensor(4L)}, "runtime_factories");
  expect_script_matches(R"(
def forward(self, n):
    return torch.hann_window(int(n), False) + 1
)",
                        {torch::tensor(1L)}, "hann_window_of_one");
}

TEST(ScriptedOps, ClipConcat) {
  expect_script_matches(R"JIT(
def forward(self, x):
    return torch.concat([torch.clip(x, -0.5, 0.5), x], -1)
)JIT",
                        {torch::randn({2, 3})}, "script_clip_concat");
}

// Scalars and lists of scripted code: dim, len, indexing a size list, min/max of ints,
// any/all, not/and/or on bools, Optional refinement (unchecked_cast), int()/float().
// F.pad is aten::pad in Python torch 1.13's scripts (every mode but circular), and the
// new_* creation ops take self's dtype.
TEST(ScriptedOps, PadAndNewTensors) {
  expect_script_matches(R"JIT(
def forward(self, x, n):
    a = torch.pad(x, [1, 2], "constant", None)
    b = torch.pad(x, [2, 1, 1, 0], "reflect", None)
    c = torch.pad(x, [0, 3, 1, 0], "replicate", None)
    d = torch.pad(x, [1, 1, 1, 1], "constant", -2.5)
    e = x.new_zeros([2, 3]) + x.new_ones([2, 3]) * 2 + x.new_full([2, 3], 7.0)
    f = n.new_zeros([4])
    return a, b, c, d, e, f, x.new_empty([0, 3]).size(0)
)JIT",
                        {torch::randn({1, 2, 3, 4}), torch::tensor({1L, 2L})}, "script_pad_new");
  // new_empty's contents are undefined: filled before use, at a size computed at run time.
  expect_script_matches(R"JIT(
def forward(self, x):
    return x.new_empty([x.size(0), 3]).fill_(2.0) + x[:, :3]
)JIT",
                        {torch::randn({4, 5})}, "script_new_empty", 17, /*dynamic_batch=*/true);
}

// meshgrid (both indexings), _shape_as_tensor and numel: torchvision's detection models.
TEST(ScriptedOps, MeshgridShapeAsTensorNumel) {
  expect_script_matches(R"JIT(
def forward(self, a, b, c):
    g1 = torch.meshgrid([a, b, c], indexing="ij")
    g2 = torch.meshgrid([a, b], indexing="xy")
    s = torch._shape_as_tensor(c.unsqueeze(0))
    return g1[0] + g1[1] * 2 + g1[2] * 3, g2[0] - g2[1], s, a.numel() + c.numel()
)JIT",
                        {torch::randn({3}), torch::randn({4}), torch::arange(2).to(torch::kFloat)},
                        "script_meshgrid");
}

// F.interpolate(size=y.shape[-2:]) records the .vec overload with a list built in the graph
// (torchvision's FPN): the overload is told by its schema, not by the list's type.
TEST(ScriptedOps, UpsampleVecWithComputedSize) {
  expect_script_matches(R"JIT(
def forward(self, x, y):
    s = y.size()
    return torch.upsample_nearest2d(x, [s[2], s[3]], scale_factors=None)
)JIT",
                        {torch::randn({1, 2, 3, 4}), torch::randn({1, 1, 6, 8})},
                        "script_upsample_vec");
}

// topk with k computed at run time, nonzero and where(condition): torchvision's RPN.
TEST(ScriptedOps, TopkRuntimeKNonzeroWhere) {
  expect_script_matches(R"JIT(
def forward(self, x):
    k = min(x.size(0), 3)
    v, i = torch.topk(x, k, 0)
    nz = torch.nonzero(x > 0.5)
    w = torch.where(x > 0.5)
    return v, i, nz, w[0] * 10 + w[1]
)JIT",
                        {torch::randn({5, 4})}, "script_topk_nonzero", 17, /*dynamic_batch=*/true);
}

// grid_sampler (F.grid_sample; RAFT's correlation lookup): every mode and padding mode.
TEST(ScriptedOps, GridSampler) {
  expect_script_matches(R"JIT(
def forward(self, x, grid):
    a = torch.grid_sampler(x, grid, 0, 0, False)
    b = torch.grid_sampler(x, grid, 1, 1, True)
    c = torch.grid_sampler(x, grid, 0, 2, False)
    d = torch.grid_sampler(x, grid, 2, 1, True)
    return a, b, c, d
)JIT",
                        {torch::randn({2, 3, 5, 6}), torch::rand({2, 4, 7, 2}) * 2.4 - 1.2},
                        "script_grid_sampler", 16);
}

TEST(ScriptedOps, ScalarPlumbing) {
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

// Attribute writes in an if and in a loop (torch.onnx's test_set_attr_* cases): the written
// values are carried out of the branch and through the loop; a parameter, a tensor buffer and
// an int counter; inputs that take the other branch and another trip count agree too.
TEST(ScriptedOps, AttributeWritesInControlFlow) {
  torch::manual_seed(0);
  torch::jit::Module m("Stateful");
  m.register_parameter("bias", torch::randn({4}), false);
  m.register_attribute("scale", c10::TensorType::get(), torch::full({4}, 1.5));
  m.register_attribute("count", c10::IntType::get(), int64_t{0});
  m.define(R"(
def forward(self, x, k):
    if bool(x.sum() > 0):
        self.scale = self.scale * 2.0
    else:
        self.count = self.count + 10
    for i in range(int(k)):
        self.count = self.count + 1
        if i % 2 == 0:
            self.bias = self.bias + x.mean(0)
    return x * self.scale + self.bias + float(self.count)
)");
  std::vector<std::vector<Tensor>> sets = {{torch::rand({3, 4}) + 0.1, torch::tensor(3L)},
                                           {-torch::rand({2, 4}) - 0.1, torch::tensor(4L)},
                                           {torch::rand({5, 4}), torch::tensor(0L)}};
  ExportOptions opt;
  add_dynamic_axes(opt, "x", {0});
  opt.input_names = {"x", "k"};
  std::string path = temp_dir("attr_writes") + "/model.onnx";
  export_model(m, sets[0], path, opt);
  for (size_t i = 0; i < sets.size(); ++i) {
    // forward changes the module's state: each reference runs on a fresh copy.
    Tensor want = m.deepcopy().forward({sets[i][0], sets[i][1]}).toTensor();
    expect_outputs_match(path, sets[i], {want}, "attr_writes_" + std::to_string(i));
  }
  EXPECT_EQ(m.attr("count").toInt(), 0);  // the caller's module is unchanged by the export
}

// interpolate to sizes computed in a loop from sizes that vary (torchvision's
// GeneralizedRCNNTransform.resize): the size list's length is unknown to shape inference, which
// ONNX Runtime then reads as 0 and rejects the model, unless it is reshaped to its length.
TEST(ScriptedOps, InterpolateToSizesBuiltInALoop) {
  torch::jit::Module m("Resize");
  m.define(R"(
def forward(self, x):
    sizes: List[int] = []
    for i in range(2):
        sizes.append(int(float(x.size(i + 2)) * 1.5))
    return torch.upsample_bilinear2d(x, sizes, False, None)
)");
  ExportOptions opt;
  opt.input_names = {"x"};
  add_dynamic_axes(opt, "x", {2, 3});
  std::string path = temp_dir("interpolate_loop_sizes") + "/model.onnx";
  std::vector<std::vector<Tensor>> sets = {{torch::rand({1, 3, 10, 20})},
                                           {torch::rand({1, 3, 7, 5})}};
  export_model(m, sets[0], path, opt);
  for (size_t i = 0; i < sets.size(); ++i)
    expect_outputs_match(path, sets[i], {m.forward({sets[i][0]}).toTensor()},
                         "interpolate_loop_sizes_" + std::to_string(i));
}

// print() and an unused tolist() in scripted code are side effects only: the export drops them
// (torch.onnx's test_print_tensor_within_torch_nn_module).
TEST(ScriptedOps, PrintAndUnusedTolistAreDropped) {
  expect_script_matches(R"(
def forward(self, x):
    y = x[:, 0]
    print("first column:", y, x.size(0))
    _: List[float] = x[0].tolist()
    return y * 2.0
)",
                        {torch::randn({4, 3})}, "print_tolist");
}

// A list an op returns (broadcast_tensors) as a graph output is a sequence of its items' dtype
// (it was Float, which the checker rejected for int64 items); items of two dtypes are refused.
TEST(ScriptedOps, ListOutputOfAnOpKeepsItsDtype) {
  std::string src = R"(
def forward(self, x, y) -> List[Tensor]:
    return torch.broadcast_tensors(x, y)
)";
  expect_script_matches(src, {torch::randint(5, {4, 2, 1, 4}), torch::randint(5, {2, 3, 1})},
                        "broadcast_list_int64");
  torch::jit::Module m("Mixed");
  m.define(src);
  ExportOptions opt;
  expect_error(
      [&] {
        export_model(m, {torch::randint(5, {2, 1}), torch::randn({3})},
                     temp_dir("broadcast_mixed") + "/m.onnx", opt);
      },
      "holds tensors of Long and Float");
}

}  // namespace
}  // namespace tonnx::test
