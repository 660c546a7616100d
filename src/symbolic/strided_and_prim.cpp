// Ops about memory layout and the prim ops that TorchScript's passes leave behind:
// as_strided (a Gather of the computed storage positions), _reshape_from_tensor,
// prim::ConstantChunk, prim::data, prim::tolist.
#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// as_strided(self, size, stride, storage_offset?): element i of the result is storage element
// offset + sum(i_k * stride_k). The export reads storage as self's elements in order, which
// holds only when self owns its storage contiguously from offset 0: a graph input or the
// fresh result of an op, with contiguous strides. A view (a slice, a transpose) shares
// another tensor's storage at unknown offsets, so it is refused rather than read wrongly.
TONNX_SYMBOLIC("aten::as_strided", 9, [](SymbolicContext& g) -> Outputs {
  const torch::jit::Value* self = g.node()->input(0);
  const torch::jit::Node* producer = self->node();
  if (producer->kind() != c10::prim::Param) {
    const c10::FunctionSchema* schema = producer->maybeSchema();
    bool aliases = !schema || schema->returns().empty() || schema->returns()[0].alias_info();
    if (aliases)
      g.fail(std::string("as_strided of a tensor made by ") + producer->kind().toQualString() +
             ", which may share another tensor's storage; ONNX has no storage, so tonnx can "
             "only export as_strided of a graph input or of a new tensor");
  }
  std::vector<int64_t> in_sizes = g.sizes(0);
  if (auto tt = self->type()->cast<c10::TensorType>()) {
    if (auto strides = tt->strides().concrete_sizes()) {
      int64_t expect = 1;
      for (size_t k = in_sizes.size(); k-- > 0;) {
        if (in_sizes[k] != 1 && (*strides)[k] != expect)
          g.fail("as_strided of a non-contiguous tensor is not supported");
        expect *= in_sizes[k];
      }
    }
  }
  std::vector<int64_t> size = g.ints(1), stride = g.ints(2);
  if (size.size() != stride.size())
    g.fail("size has " + std::to_string(size.size()) + " dims but stride " +
           std::to_string(stride.size()));
  int64_t offset = g.num_inputs() > 3 && !g.is_none(3) ? g.i(3) : 0;
  std::optional<int64_t> numel = ir::product_of(in_sizes), count = ir::product_of(size);
  if (!numel) g.fail("the input's size overflows int64");
  if (!count || *count > (int64_t{1} << 28))
    g.fail("as_strided's size is negative or too large to export as a Gather");
  if (offset < 0) g.fail("storage_offset must be >= 0, got " + std::to_string(offset));
  for (int64_t st : stride)
    if (st < 0) g.fail("stride must be >= 0, got " + std::to_string(st));
  auto outside = [&](int64_t at) {
    g.fail("as_strided reads storage element " + std::to_string(at) +
           " or beyond, of a tensor of " + std::to_string(*numel) + " elements");
  };
  at::Tensor pos = at::full({*count}, offset, at::kLong);
  auto p = pos.accessor<int64_t, 1>();
  for (int64_t i = 0; i < *count; ++i) {
    if (p[i] >= *numel) outside(p[i]);
    int64_t rem = i;
    for (size_t k = size.size(); k-- > 0;) {
      int64_t step = rem % size[k];
      rem /= size[k];
      // p + step * stride must stay below numel: checked before the product can overflow.
      if (step && stride[k] && step > (*numel - 1 - p[i]) / stride[k]) outside(p[i] + 1);
      p[i] += step * stride[k];
    }
  }
  Value* flat = g.op("Reshape", {g.input(0), g.constant_ints({-1})});
  return g.op("Gather", {flat, g.constant(pos.reshape(size))});
});

// _reshape_from_tensor(self, shape): Reshape with a shape tensor.
TONNX_SYMBOLIC("aten::_reshape_from_tensor", 9, [](SymbolicContext& g, Value* x, Value* shape) {
  return g.op("Reshape", {x, g.cast(shape, at::kLong)});
});

// prim::ConstantChunk[chunks, dim](self): torch.chunk as a node attribute form (made by
// TorchScript's passes); pieces of ceil(size / chunks), as many as the node has outputs.
TONNX_SYMBOLIC("prim::ConstantChunk", 9, [](SymbolicContext& g) -> Outputs {
  const torch::jit::Node* n = g.node();
  int64_t chunks = n->i(c10::Symbol::attr("chunks"));
  int64_t dim = arg_dim(g, 0, n->i(c10::Symbol::attr("dim")));
  std::vector<int64_t> s = g.sizes(0);
  if (chunks <= 0) g.fail("chunks must be > 0, got " + std::to_string(chunks));
  int64_t piece = (s[dim] + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t left = s[dim]; left > 0; left -= piece) sizes.push_back(std::min(piece, left));
  if (sizes.size() != g.num_outputs())
    g.fail("chunking a dim of " + std::to_string(s[dim]) + " into pieces of " +
           std::to_string(piece) + " gives " + std::to_string(sizes.size()) +
           " pieces, but the node has " + std::to_string(g.num_outputs()) + " outputs");
  return split_sizes(g, g.input(0), sizes, dim);
});

// prim::data(self): the tensor without autograd history.
TONNX_SYMBOLIC("prim::data", 9, [](SymbolicContext&, Value* x) -> Outputs { return x; });

// prim::tolist(self, dim, elem_type): a 1-D tensor as an int[] or float[] (one 1-D tensor in
// ONNX); nested lists have no ONNX form.
TONNX_SYMBOLIC("prim::tolist", 9, [](SymbolicContext& g) -> Outputs {
  if (g.rank(0) != 1)
    g.fail("tolist() of a tensor of rank " + std::to_string(g.rank(0)) +
           " makes a nested list, which ONNX cannot hold; only 1-D works");
  Value* y = g.op("Identity", {g.input(0)});
  y->set_type(
      ir::TensorType{ir::dtype_from_scalar_type(g.scalar_type(0)), std::vector<ir::Dim>(1)});
  return y;
});

// set_(self, source): self takes source's contents and shape (the write is followed by the
// functionalization pass, like other in-place ops).
TONNX_SYMBOLIC("aten::set_", 9, [](SymbolicContext& g) -> Outputs {
  if (g.num_inputs() != 2 || g.arg_type(1) != "Tensor")
    g.fail("only set_(source) with a tensor source is supported (not storage forms)");
  if (g.scalar_type(0) != g.scalar_type(1)) g.fail("set_ needs a source of self's dtype");
  return g.op("Identity", {g.input(1)});
});

}  // namespace
}  // namespace tonnx::sym
