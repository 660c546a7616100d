// Helpers shared by the symbolic functions (internal).
#pragma once

#include <ATen/ATen.h>

#include <limits>

#include "tonnx/symbolic.h"

namespace tonnx::sym {

using ir::Value;

// "To the end" for Slice's ends.
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Input i as a tensor of `dtype`: a constant scalar is emitted with that type directly,
// anything else is cast when its traced type differs.
Value* input_as(SymbolicContext& g, size_t i, at::ScalarType dtype);

// Normalizes a negative dim against rank, failing with the op's context when out of range.
int64_t norm_dim(SymbolicContext& g, int64_t dim, int64_t rank);
// dim of input `input`, normalized: needs the input's rank only when dim is negative (values in
// branches the example inputs did not take have no recorded rank; ONNX checks the range).
int64_t arg_dim(SymbolicContext& g, size_t input, int64_t dim);
// The length of int[] input i computed at run time: the prim::ListConstruct that builds it.
int64_t computed_list_length(SymbolicContext& g, size_t i);

// Unsqueeze / Squeeze / ReduceX with axes as attribute (< 13) or input (>= 13; 18 for most
// reductions, so only ReduceSum takes an input in the opsets tonnx emits).
Value* unsqueeze(SymbolicContext& g, Value* x, const std::vector<int64_t>& axes);
Value* squeeze(SymbolicContext& g, Value* x, const std::vector<int64_t>& axes);
// The dtypes ONNX's reductions and CumSum lack before opset 18 (bool, int8, uint8, int16),
// which `reduce` computes in int32 and casts back; nullopt for any other (or unknown) dtype.
std::optional<at::ScalarType> narrow_int(const Value* x);
Value* reduce(SymbolicContext& g, const std::string& op, Value* x,
              const std::optional<std::vector<int64_t>>& axes, bool keepdims);

// The size of dim `dim` (non-negative) of input i when the trace knows it, else nullopt.
std::optional<int64_t> known_size(SymbolicContext& g, size_t i, int64_t dim);

// The size of dim d (non-negative) of input i as a 1-element int64 tensor: a constant when
// known and shapes are not dynamic, else Gather of its Shape.
Value* dim_size(SymbolicContext& g, size_t i, int64_t d);

// Shape of x as a 1-D int64 tensor: a constant when static and shapes are not dynamic.
Value* shape_of(SymbolicContext& g, size_t input_index);

// A binary elementwise op with both inputs converted to `dtype`.
Value* binary(SymbolicContext& g, const std::string& op, at::ScalarType dtype);

// Split into pieces of the given sizes along dim (Split takes sizes as an input from 13).
std::vector<Value*> split_sizes(SymbolicContext& g, Value* x, const std::vector<int64_t>& sizes,
                                int64_t dim);

// a == b elementwise (bool). ONNX's Equal takes floats only from opset 11; before, floats are
// compared as !(a < b) && !(a > b) && neither is NaN.
Value* equal(SymbolicContext& g, Value* a, Value* b, at::ScalarType dtype);

// self with src added at index along axis, repeated indices summed (ScatterElements with
// reduction='add' before opset 16 has none): a one-hot of the index over self's dim (OneHot,
// Where: a NaN reaches only its own target), summed over the index's dim, padded to self's
// shape. index and src of rank `rank`, src at least index's shape. Opset 11.
Value* scatter_add_onehot(SymbolicContext& g, Value* self, Value* index, Value* src, int64_t axis,
                          int64_t rank, at::ScalarType dtype);

// Whether input i of the aten node is a list of tensors (Tensor[] or Tensor?[]).
bool is_tensor_list(SymbolicContext& g, size_t i);

// cat / stack of an ONNX sequence along `axis` (a new one with `new_axis`), as `dtype`.
Value* from_sequence(SymbolicContext& g, Value* seq, int64_t axis, bool new_axis,
                     at::ScalarType dtype);

}  // namespace tonnx::sym
