// The converter: walks a traced TorchScript graph (aten ops) and emits ONNX through the
// registered symbolic functions. Internal to the exporter.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "export/traced.h"
#include "tonnx/export.h"
#include "tonnx/ir.h"

namespace tonnx::detail {

struct Missing;

// What the tensors of one family of lists (a list, its changed versions, the values a loop
// carries for it) have in common.
struct ListElems {
  std::optional<ir::TensorType> type;  // dtype and rank where all agree
  std::string conflict;                // "Float and Long" when dtypes differ
  bool has_elements = false;           // some tensor is put into one of these lists
};
bool is_tensor_list_type(const c10::TypePtr& t);
// An int[] / float[] / bool[] as the 1-D tensor tonnx makes of it; nullopt for other types.
std::optional<ir::TensorType> number_list_type(const c10::TypePtr& t);

struct ConvertConfig {
  int opset = kDefaultOpset;
  OperatorExportTypes export_type = OperatorExportTypes::ONNX;
  bool export_params = true;
  bool keep_initializers_as_inputs = false;
  std::vector<std::string> input_names;  // graph inputs, then parameters
  std::vector<std::string> output_names;
  std::map<std::string, std::map<int64_t, std::string>> dynamic_axes;
  std::map<std::string, int64_t> custom_opsets;
  bool ignore_unknown_dynamic_axes = false;  // warn about them instead of failing
  size_t num_user_inputs = 0;
  std::vector<TracedParam> params;  // the jit graph inputs after the user inputs
};

// The dynamic_axes names that are neither an input (`inputs`) nor an output (`outputs`): an
// ExportError naming the first, or with `ignore`, each erased from `axes` with a warning
// (printed, and returned), as torch.onnx does. (dynamic.cpp)
std::vector<std::string> drop_unknown_dynamic_axes(
    std::map<std::string, std::map<int64_t, std::string>>& axes,
    const std::set<std::string>& inputs, const std::vector<std::string>& outputs, bool ignore);

class Converter {
 public:
  Converter(std::shared_ptr<torch::jit::Graph> graph, ConvertConfig config);
  ir::Model convert();

  // --- used by SymbolicContext ---
  int opset() const { return cfg_.opset; }
  bool dynamic() const { return !cfg_.dynamic_axes.empty(); }
  // The graph being emitted into: the model's, or a subgraph of If/Loop while converting
  // a block.
  ir::Graph& graph() { return graphs_.empty() ? *model_.graph : *graphs_.back(); }
  ir::Node* emit(const std::string& op_type, std::vector<ir::Value*> inputs,
                 std::vector<ir::Attr> attrs, size_t n_outputs, const std::string& domain);
  ir::Value* tensor_of(const torch::jit::Value* v);
  std::vector<ir::Value*> tensor_list_of(const torch::jit::Value* v);
  ir::Value* constant(const at::Tensor& t);
  [[noreturn]] void fail(const torch::jit::Node* n, const std::string& what) const;
  std::string describe(const torch::jit::Node* n) const;  // op, scope, input types
  // Lists that change at run time, as ONNX sequences (converter_lists.cpp).
  bool is_sequence(const torch::jit::Value* v) const;
  ir::Value* sequence_of(const torch::jit::Value* v);  // a known list becomes one
  // A graph output `list` (int[], float[], bool[]) held as the 1-D tensor `v`: a sequence of
  // 0-d tensors from opset 11; anything else: `v`.
  ir::Value* number_list_output(const torch::jit::Value* list, ir::Value* v);
  ir::Value* mark_sequence(ir::Value* seq, const torch::jit::Value* list);
  // `seen` (when given) says whether any tensor was put into the list's family in the graph;
  // when none was (a list an op returned), the type is a Float placeholder.
  std::optional<ir::TensorType> list_elem_type(const torch::jit::Value* list, bool* seen = nullptr);
  // Quantized tensors (converter_quant.cpp): a value's integer tensor, bound like any tensor,
  // with its scale and zero point here.
  struct QParams {
    ir::Value* scale = nullptr;       // float: 0-d, or 1-D per channel
    ir::Value* zero_point = nullptr;  // of the integer type, shaped like scale
    std::optional<int64_t> axis;      // per channel
    at::ScalarType qtype = at::kQUInt8;
  };
  const QParams* qparams(const ir::Value* v) const;
  bool is_quantized(const torch::jit::Value* v) const;  // by its type or its bound value
  // DequantizeLinear of a quantized value, with its own scale or with `scale` instead.
  ir::Value* dequantized(ir::Value* v, ir::Value* scale = nullptr);
  ir::Value* quantized(ir::Value* x, const QParams& q);  // QuantizeLinear, recorded
  ir::Value* quantized_constant(const at::Tensor& q);    // integer constant, recorded
  ir::Value* dequantized_constant(const at::Tensor& q);
  // Complex tensors (converter_complex.cpp): bound to a real tensor with a trailing dim of 2
  // (real, imaginary), as ONNX's DFT lays them out.
  bool is_complex(const torch::jit::Value* v) const;  // by its type or its bound value
  bool is_complex_value(const ir::Value* v) const { return complex_.count(v) > 0; }
  // Values whose rank depends on sizes seen only at run time (converter_rank.cpp).
  bool rank_varies(const torch::jit::Value* v) const { return rank_varies_.count(v) > 0; }
  ir::Value* mark_complex(ir::Value* v) {
    complex_.insert(v);
    return v;
  }
  // For each user graph input, in order, the position of the example input it comes from (a
  // quantized example input is three graph inputs: values, scale, zero point).
  const std::vector<int64_t>& input_examples() const { return input_examples_; }
  // After convert(): the ONNX value each top-level TorchScript value became (tonnx::verify
  // compares them with LibTorch's).
  const std::unordered_map<const torch::jit::Value*, ir::Value*>& top_level_values() const {
    return env_.front();
  }
  // What convert() warned about (also printed to stderr).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  void check_feasible();
  void collect_missing(const torch::jit::Block* b, std::vector<Missing>& missing) const;
  void convert_node(const torch::jit::Node* n);  // then propagate_varying_rank
  void convert_node_kind(const torch::jit::Node* n);
  // Control flow (opset 11+): a block becomes an ir::Graph attribute. Values of enclosing
  // scopes are referenced by name inside it.
  void convert_if(const torch::jit::Node* n);
  void convert_loop(const torch::jit::Node* n);
  // A block's outputs from `first` on: tensors, sequences for lists that change at run time,
  // and for prim::Uninitialized a value typed like partners[k] (null without one).
  std::vector<ir::Value*> block_outputs(const torch::jit::Block* b, size_t first,
                                        const std::vector<const ir::Value*>& partners);
  // Sets the outputs on the innermost subgraph, names its values and pops it with its
  // binding scope.
  std::shared_ptr<ir::Graph> finish_block(const std::vector<ir::Value*>& outs,
                                          const std::string& name);
  ir::Value* as_bool_scalar(ir::Value* v);
  ir::Value* copy_of(ir::Value* v);  // Identity, or its equivalent for sequences below 14
  void analyse_lists();
  // A value for `v`, which no path reads (prim::Uninitialized), typed like `like` (may be null).
  ir::Value* placeholder(const torch::jit::Value* v, const ir::Value* like);
  // Value bindings, one scope per block being converted (innermost last): a constant
  // materialized inside a subgraph must not be reused outside it.
  ir::Value* find_env(const torch::jit::Value* v) const;
  void bind(const torch::jit::Value* v, ir::Value* to) { env_.back()[v] = to; }
  void bind_outputs(const torch::jit::Node* n, const Outputs& outs);
  void bind_control_outputs(const torch::jit::Node* n, ir::Node* node);  // If, Loop
  void fallback_node(const torch::jit::Node* n, bool aten_node);
  bool structural(const torch::jit::Node* n) const;
  const SymbolicFn* lookup(const torch::jit::Node* n) const;
  // An op with quantized inputs that has no quantized symbolic: through its float symbolic on
  // the dequantized inputs, its quantized outputs quantized again. False when no input is
  // quantized.
  bool convert_dequantized(const torch::jit::Node* n, const SymbolicFn& fn);
  // Runs a symbolic for n: errors other than ExportError become one that names the node.
  Outputs call_symbolic(const torch::jit::Node* n, const SymbolicFn& fn);
  void add_quantized_input(const torch::jit::Value* in, const std::string& name,
                           const std::optional<ir::TensorType>& type, size_t example,
                           std::set<std::string>& used_names);
  // An If whose branches both return quantized values with the same scale and zero point
  // (made before the If) returns one; other quantized If outputs fail.
  void quantized_if_outputs(const torch::jit::Node* n, ir::Node* node,
                            const std::vector<ir::Value*>& then_outs,
                            const std::vector<ir::Value*>& else_outs);
  // squeeze of a dim whose size varies (converter_rank.cpp): If (size == 1) Squeeze else
  // Identity, as torch.onnx exports it. Its result's rank is known only at run time: the values
  // computed from it are recorded, and symbolics see them without a rank (they fail where they
  // need one, instead of using the traced rank).
  bool convert_varying_squeeze(const torch::jit::Node* n);
  void propagate_varying_rank(const torch::jit::Node* n);
  // List repetition ([1] * k): true when n is one (converter_lists.cpp).
  bool convert_list_repeat(const torch::jit::Node* n);
  // True when n takes or makes a complex tensor: its op's complex rule converts it (or the
  // export fails, naming the op).
  bool convert_complex(const torch::jit::Node* n);
  void add_quantized_output(ir::Value* v, const std::string& name,
                            std::optional<ir::TensorType> type, std::set<std::string>& used_names);

  std::shared_ptr<torch::jit::Graph> jg_;
  ConvertConfig cfg_;
  ir::Model model_;
  std::vector<std::unordered_map<const torch::jit::Value*, ir::Value*>> env_{1};
  std::vector<std::unordered_map<const torch::jit::Value*, std::vector<ir::Value*>>> lists_{1};
  std::vector<std::shared_ptr<ir::Graph>> graphs_;  // subgraphs being built
  int subgraph_count_ = 0;
  const torch::jit::Node* current_ = nullptr;
  bool uses_aten_domain_ = false;
  bool lists_analysed_ = false;
  std::unordered_map<const torch::jit::Value*, const torch::jit::Value*> list_class_;
  std::unordered_map<const torch::jit::Value*, ListElems> list_elems_;
  std::unordered_map<const ir::Value*, QParams> qparams_;
  std::unordered_set<const ir::Value*> complex_;
  std::unordered_set<const torch::jit::Value*> rank_varies_;
  std::vector<int64_t> input_examples_;
  std::vector<std::string> warnings_;
};

std::optional<ir::TensorType> jit_type(const torch::jit::Value* v);
// A node's module scope path ("" when it has none).
std::string scope_of(const torch::jit::Node* n);
std::optional<c10::IValue> constant_ivalue(const torch::jit::Value* v);
bool is_quantized_type(const torch::jit::Value* v);  // a tensor of a quantized dtype
bool is_complex_type(const torch::jit::Value* v);    // a complex tensor or number
ir::DType quantized_storage(at::ScalarType qtype);   // QUInt8 -> UInt8, ...

}  // namespace tonnx::detail
