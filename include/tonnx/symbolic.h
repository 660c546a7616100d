// Symbolic functions: one small C++ function per aten op, registered by qualified name and
// the first opset it serves. Lookup takes the highest registration not above the target
// opset; functions registered by users at run time are looked up before the built-ins.
//
//   tonnx::register_symbolic("aten::elu", 9,
//       [](tonnx::SymbolicContext& g, tonnx::ir::Value* input, double alpha, double scale,
//          double input_scale) { return g.op("Elu", {input}, {{"alpha", alpha}}); });
//
// The parameters after the context are parsed from the aten node's inputs by their C++
// types: ir::Value* (a tensor; constants become ONNX constants), int64_t, double, bool,
// std::string, std::vector<int64_t>, std::vector<ir::Value*> (a tensor list),
// tonnx::RuntimeInt / tonnx::RuntimeInts (an int / int[] known at export or computed at run
// time, such as x.size(1) in a trace) and std::optional<T> of those (None allowed). A function
// may take the first N arguments of the schema and leave the rest (the seed's
// elu(g, input, alpha)). A function with only the context reads its inputs itself
// (g.input(i), g.i(i), ...), for ops whose overloads differ in arity.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tonnx/ir.h"

namespace torch::jit {
struct Node;
struct Value;
}  // namespace torch::jit

namespace tonnx {

namespace detail {
class Converter;
}

// What a symbolic returns: the ONNX values for the aten node's outputs, in order.
struct Outputs {
  std::vector<ir::Value*> values;
  Outputs(ir::Value* v) : values{v} {}
  Outputs(std::vector<ir::Value*> v) : values(std::move(v)) {}
  Outputs(std::initializer_list<ir::Value*> v) : values(v) {}
};

// Thrown for everything that makes an export fail; what() is the message for the user.
class ExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An int (T = int64_t) or int[] (T = std::vector<int64_t>) argument that may be known only at
// run time: `constant` when the export knows it, else `value`, the int64 tensor that computes
// it (0-d for an int, 1-D for an int[]).
template <typename T>
struct MaybeConstant {
  std::optional<T> constant;
  ir::Value* value = nullptr;
  bool is_constant() const { return constant.has_value(); }
};
using RuntimeInt = MaybeConstant<int64_t>;
using RuntimeInts = MaybeConstant<std::vector<int64_t>>;

class SymbolicContext {
 public:
  SymbolicContext(detail::Converter& c, const torch::jit::Node* node) : c_(c), node_(node) {}

  // --- emitting ONNX ---
  // One node of the default domain (or `domain`), returning its first output.
  ir::Value* op(const std::string& op_type, std::vector<ir::Value*> inputs,
                std::vector<ir::Attr> attrs = {});
  std::vector<ir::Value*> op_n(const std::string& op_type, std::vector<ir::Value*> inputs,
                               std::vector<ir::Attr> attrs, size_t n_outputs,
                               const std::string& domain = {});
  ir::Value* constant(const at::Tensor& t);
  ir::Value* constant_ints(const std::vector<int64_t>& v);     // 1-D int64
  ir::Value* constant_scalar(double v, at::ScalarType dtype);  // 0-d
  // Casts `v` to `dtype` (no node when its type is known to match already).
  ir::Value* cast(ir::Value* v, at::ScalarType dtype);
  int opset() const;
  // True when some input axis is dynamic: shapes must not be frozen into the graph.
  bool dynamic_shapes() const;

  // --- reading the aten node ---
  const torch::jit::Node* node() const { return node_; }
  std::string kind() const;   // "aten::elu"
  std::string scope() const;  // module scope, may be empty
  size_t num_inputs() const;
  size_t num_outputs() const;
  bool is_none(size_t i) const;
  bool is_constant(size_t i) const;
  ir::Value* input(size_t i);                     // a tensor, or a constant as a tensor
  std::vector<ir::Value*> inputs_list(size_t i);  // a Tensor[] input
  // A Tensor[] that changes at run time (in a loop or a branch) is an ONNX sequence (opset
  // 11): is_sequence(i) tells, sequence(i) gives input i as one (a list known while converting
  // becomes SequenceConstruct or SequenceEmpty), and inputs_list(i) fails on it.
  // sequence_op emits an op whose result is the sequence for this node's output 0.
  bool is_sequence(size_t i) const;
  ir::Value* sequence(size_t i);
  ir::Value* sequence_op(const std::string& op_type, std::vector<ir::Value*> inputs,
                         std::vector<ir::Attr> attrs = {});
  int64_t i(size_t i) const;
  double f(size_t i) const;
  bool b(size_t i) const;
  std::string s(size_t i) const;
  std::vector<int64_t> ints(size_t i) const;  // an int[] (or a single int broadcast by aten)
  std::vector<double> floats(size_t i) const;
  std::optional<at::Tensor> constant_tensor(size_t i) const;
  // The traced type of input i / output k (dtype and sizes), when the trace knows it.
  std::optional<ir::TensorType> type(size_t i) const;
  std::optional<ir::TensorType> output_type(size_t k = 0) const;
  at::ScalarType scalar_type(size_t i) const;  // fails when unknown
  at::ScalarType output_scalar_type(size_t k = 0) const;
  int64_t rank(size_t i) const;                // fails when unknown
  std::vector<int64_t> sizes(size_t i) const;  // fails when not static
  std::string arg_name(size_t i) const;        // from the aten schema
  // TorchScript type of input i: "Tensor", "int", "float", "bool", "str", "int[]", "NoneType"...
  std::string arg_type(size_t i) const;

  // --- quantized tensors ---
  // A quantized tensor is exported as its integer values with a scale (float, 0-d) and a zero
  // point (0-d, of the integer type); a graph input or output that is one carries all three,
  // as torch.onnx's are. An op on it dequantizes (DequantizeLinear), computes in float and
  // quantizes its result (QuantizeLinear).
  bool is_quantized(size_t i) const;
  ir::Value* dequantize(size_t i);  // input i in float; an input that is not quantized as it is
  ir::Value* dequantize_value(ir::Value* v);  // the same for a value (an element of a list)
  // Float x quantized with (scale, zero_point) into the integer type of qtype (at::kQUInt8,
  // at::kQInt8 or at::kQInt32): return it as the value of a quantized output of this node.
  ir::Value* quantize(ir::Value* x, ir::Value* scale, ir::Value* zero_point);
  ir::Value* quantize(ir::Value* x, double scale, int64_t zero_point, at::ScalarType qtype);
  // A constant quantized tensor (a weight) as float: its integer values stay in the model,
  // dequantized by DequantizeLinear (per channel from opset 13; below, dequantized at export).
  ir::Value* dequantize_constant(const at::Tensor& q);

  // --- complex tensors ---
  // A complex tensor is exported as a real one with a trailing dim of 2 (real, imaginary), the
  // layout of ONNX's DFT; type(i) of a complex input describes that real tensor. Only ops with a
  // complex rule take complex inputs (src/symbolic/complex.cpp); any other op on one fails.
  bool is_complex(size_t i) const;
  bool is_complex_value(const ir::Value* v) const;
  // Marks v, of that layout, as a complex result of this node and returns it.
  ir::Value* complex_result(ir::Value* v);

  // Fails the export with a message that names the op, its scope and what is wrong.
  [[noreturn]] void fail(const std::string& what) const;
  // Fails because this opset cannot express the op; names the opset that can.
  [[noreturn]] void unsupported_below(int opset_needed, const std::string& what) const;

 private:
  detail::Converter& c_;
  const torch::jit::Node* node_;
};

using SymbolicFn = std::function<Outputs(SymbolicContext&)>;

namespace detail {

template <typename T>
struct ArgReader;
template <>
struct ArgReader<ir::Value*> {
  static ir::Value* read(SymbolicContext& g, size_t i) {
    if (g.is_none(i))
      g.fail("input " + std::to_string(i) + " (" + g.arg_name(i) +
             ") is None but a tensor is required");
    return g.input(i);
  }
};
template <>
struct ArgReader<int64_t> {
  static int64_t read(SymbolicContext& g, size_t i) { return g.i(i); }
};
template <>
struct ArgReader<double> {
  static double read(SymbolicContext& g, size_t i) { return g.f(i); }
};
template <>
struct ArgReader<bool> {
  static bool read(SymbolicContext& g, size_t i) { return g.b(i); }
};
template <>
struct ArgReader<std::string> {
  static std::string read(SymbolicContext& g, size_t i) { return g.s(i); }
};
template <>
struct ArgReader<std::vector<int64_t>> {
  static std::vector<int64_t> read(SymbolicContext& g, size_t i) { return g.ints(i); }
};
template <>
struct ArgReader<std::vector<ir::Value*>> {
  static std::vector<ir::Value*> read(SymbolicContext& g, size_t i) { return g.inputs_list(i); }
};
template <>
struct ArgReader<RuntimeInt> {
  static RuntimeInt read(SymbolicContext& g, size_t i) {
    if (g.is_constant(i)) return {g.i(i), nullptr};
    return {std::nullopt, g.cast(g.input(i), at::kLong)};
  }
};
template <>
struct ArgReader<RuntimeInts> {
  static RuntimeInts read(SymbolicContext& g, size_t i) {
    if (g.is_constant(i)) return {g.ints(i), nullptr};
    return {std::nullopt, g.cast(g.input(i), at::kLong)};
  }
};
template <typename T>
struct ArgReader<std::optional<T>> {
  static std::optional<T> read(SymbolicContext& g, size_t i) {
    if (g.is_none(i)) return std::nullopt;
    return ArgReader<T>::read(g, i);
  }
};

template <typename T>
struct CallableTraits : CallableTraits<decltype(&T::operator())> {};
template <typename C, typename R, typename... A>
struct CallableTraits<R (C::*)(A...) const> {
  using args = std::tuple<A...>;
};
template <typename C, typename R, typename... A>
struct CallableTraits<R (C::*)(A...)> {
  using args = std::tuple<A...>;
};
template <typename R, typename... A>
struct CallableTraits<R (*)(A...)> {
  using args = std::tuple<A...>;
};

void check_arity(SymbolicContext& g, size_t expected);

template <typename F, typename... A, size_t... I>
Outputs call_typed(F& f, SymbolicContext& g, std::index_sequence<I...>) {
  return f(g, ArgReader<std::decay_t<A>>::read(g, I)...);
}

template <typename F, typename Ctx, typename... A>
SymbolicFn make_typed(F f, std::tuple<Ctx, A...>*) {
  static_assert(std::is_same_v<std::decay_t<Ctx>, SymbolicContext>,
                "a symbolic function takes tonnx::SymbolicContext& first");
  return [f](SymbolicContext& g) mutable -> Outputs {
    check_arity(g, sizeof...(A));
    return call_typed<F, A...>(f, g, std::index_sequence_for<A...>{});
  };
}

template <typename F>
SymbolicFn to_symbolic_fn(F f) {
  if constexpr (std::is_convertible_v<F, SymbolicFn> && std::is_invocable_v<F, SymbolicContext&>) {
    return SymbolicFn(std::move(f));
  } else {
    using Args = typename CallableTraits<std::decay_t<F>>::args;
    return make_typed(std::move(f), static_cast<Args*>(nullptr));
  }
}

bool register_builtin(const std::string& qualname, int since_opset, SymbolicFn fn);

}  // namespace detail

// Registers a user symbolic, looked up before the built-ins. Replaces an earlier user
// registration of the same name and opset.
void register_symbolic_fn(const std::string& qualname, int since_opset, SymbolicFn fn);
template <typename F>
void register_symbolic(const std::string& qualname, int since_opset, F f) {
  register_symbolic_fn(qualname, since_opset, detail::to_symbolic_fn(std::move(f)));
}
// Removes a user registration (all opsets when since_opset < 0). Returns whether any was.
bool unregister_symbolic(const std::string& qualname, int since_opset = -1);

struct SymbolicInfo {
  std::string name;
  int since_opset;
  bool user;
};
// Every registration, sorted by name then opset.
std::vector<SymbolicInfo> registered_symbolics();
// The function that serves `qualname` at `opset` (user first), or nullptr.
const SymbolicFn* find_symbolic(const std::string& qualname, int opset);
// The name whose registration serves `qualname` at `opset`: itself, or for an in-place variant
// without a registration of its own (aten::relu_), its functional twin (aten::relu): the trace
// already rewired every later use to the in-place node's output.
std::string serving_symbolic_name(const std::string& qualname, int opset);
// The lowest opset above `opset` that has a registration for qualname, or -1.
int next_opset_with_symbolic(const std::string& qualname, int opset);

}  // namespace tonnx

#define TONNX_CONCAT_INNER(a, b) a##b
#define TONNX_CONCAT(a, b) TONNX_CONCAT_INNER(a, b)
// Built-in registration, placed beside the function (one line per op and opset).
#define TONNX_SYMBOLIC(qualname, since, ...)                                          \
  static const bool TONNX_CONCAT(tonnx_symbolic_reg_, __COUNTER__) [[maybe_unused]] = \
      ::tonnx::detail::register_builtin(qualname, since,                              \
                                        ::tonnx::detail::to_symbolic_fn(__VA_ARGS__))
