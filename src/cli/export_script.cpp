// `tonnx export MODEL.pt ...`: exports a TorchScript file (traced or scripted) with example
// inputs read from TensorProto files (--inputs, dtypes and shapes kept) or random float
// inputs of given shapes (--input-shape).
#include <torch/script.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/export_script.h"
#include "tonnx/proto.h"
#include "tonnx/torchscript.h"

namespace tonnx::cli {
namespace fs = std::filesystem;

namespace {

torch::Tensor read_input(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UsageError("--inputs: '" + path + "' is not a file (expected an ONNX TensorProto .pb)");
  try {
    return tensor_from_proto(read_tensor_proto(path), folder_of(path));
  } catch (const std::exception& e) {
    throw UsageError("--inputs: cannot read '" + path + "' as an ONNX TensorProto: " + e.what());
  }
}

// Forward's arguments nest a few levels (a tuple of lists of tensors); the parser recurses
// once per level, so deeper nesting is refused before any recursion, not left to the stack.
constexpr int kMaxInputNesting = 32;

// The start of a long argument, for messages.
std::string excerpt(const std::string& s) { return s.size() <= 80 ? s : s.substr(0, 77) + "..."; }

// Splits at commas outside brackets: a.pb,[1,2],(b.pb,c.pb),none -> a.pb | [1,2] | (b.pb,c.pb)
// | none.
std::vector<std::string> split_inputs(const std::string& s) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : s) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (depth < 0) throw UsageError("--inputs: unbalanced brackets in '" + excerpt(s) + "'");
    if (depth > kMaxInputNesting)
      throw UsageError("--inputs: brackets nested more than " + std::to_string(kMaxInputNesting) +
                       " deep in '" + excerpt(s) + "'");
    if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  if (depth != 0) throw UsageError("--inputs: unbalanced brackets in '" + excerpt(s) + "'");
  return out;
}

c10::IValue parse_input(const std::string& tok);

// [..] of tensors, ints or floats: a list of that type; (..): a tuple of anything.
c10::IValue parse_sequence(const std::string& tok) {
  std::string body = tok.substr(1, tok.size() - 2);
  std::vector<c10::IValue> items;
  if (!body.empty())
    for (const auto& e : split_inputs(body)) items.push_back(parse_input(e));
  if (tok.front() == '(') return c10::ivalue::Tuple::create(std::move(items));
  bool tensors = !items.empty(), ints = true, numbers = true;
  for (const auto& v : items) {
    tensors = tensors && v.isTensor();
    ints = ints && v.isInt();
    numbers = numbers && (v.isInt() || v.isDouble());
  }
  if (tensors) {
    c10::List<at::Tensor> l;
    for (const auto& v : items) l.push_back(v.toTensor());
    return l;
  }
  if (ints) {
    c10::List<int64_t> l;
    for (const auto& v : items) l.push_back(v.toInt());
    return l;
  }
  if (numbers) {
    c10::List<double> l;
    for (const auto& v : items)
      l.push_back(v.isInt() ? static_cast<double>(v.toInt()) : v.toDouble());
    return l;
  }
  throw UsageError("--inputs: " + tok +
                   " mixes kinds of values; a [list] holds tensors (.pb files) or numbers, a "
                   "(tuple) anything");
}

// (VALUES.pb,SCALE,ZERO_POINT): a tensor quantized per tensor, from its integer values (uint8:
// quint8, int8: qint8, int32: qint32), as a quantized graph input is fed.
c10::IValue parse_quantized(const std::string& tok) {
  std::vector<std::string> parts = split_inputs(tok.substr(1, tok.size() - 2));
  if (parts.size() != 3)
    throw UsageError("--inputs: quantized" + tok +
                     " needs three items: quantized(VALUES.pb,SCALE,ZERO_POINT)");
  at::Tensor ints = read_input(parts[0]);
  at::ScalarType st = ints.scalar_type();
  if (st != at::kByte && st != at::kChar && st != at::kInt)
    throw UsageError("--inputs: quantized values in '" + parts[0] + "' are " +
                     std::string(c10::toString(ints.scalar_type())) +
                     "; expected uint8, int8 or int32");
  char* end = nullptr;
  double scale = std::strtod(parts[1].c_str(), &end);
  if (end != parts[1].c_str() + parts[1].size() || !(scale > 0))
    throw UsageError("--inputs: the scale of quantized" + tok + " must be a number > 0, got '" +
                     parts[1] + "'");
  int64_t zp = parse_int(parts[2], "zero point");
  return at::_make_per_tensor_quantized_tensor(ints.contiguous(), scale, zp);
}

// One --inputs token: a TensorProto file, or a value for a non-tensor argument of forward:
// none, true/false, an int, a float, a bracketed list of numbers or tensors, a tuple, or
// quantized(VALUES.pb,SCALE,ZERO_POINT).
c10::IValue parse_input(const std::string& tok) {
  if (tok == "none" || tok == "None") return c10::IValue();
  if (tok == "true" || tok == "True") return c10::IValue(true);
  if (tok == "false" || tok == "False") return c10::IValue(false);
  auto number = [](const std::string& t, bool* is_int) -> std::optional<double> {
    if (t.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(t.c_str(), &end, 10);
    if (errno == 0 && end == t.c_str() + t.size()) {
      *is_int = true;
      return static_cast<double>(i);
    }
    errno = 0;
    double d = std::strtod(t.c_str(), &end);
    if (errno == 0 && end == t.c_str() + t.size()) {
      *is_int = false;
      return d;
    }
    return std::nullopt;
  };
  bool is_int = false;
  if (auto v = number(tok, &is_int))
    return is_int ? c10::IValue(static_cast<int64_t>(std::stoll(tok))) : c10::IValue(*v);
  const std::string q = "quantized(";
  if (tok.rfind(q, 0) == 0 && tok.back() == ')') return parse_quantized(tok.substr(q.size() - 1));
  if (tok.size() >= 2 &&
      ((tok.front() == '[' && tok.back() == ']') || (tok.front() == '(' && tok.back() == ')')))
    return parse_sequence(tok);
  return read_input(tok);
}

// The tensors of an argument, in order (tuples and lists flattened), as the graph's inputs.
void tensors_of(const c10::IValue& v, std::vector<torch::Tensor>& out) {
  if (v.isTensor()) out.push_back(v.toTensor());
  if (v.isTuple())
    for (const auto& e : v.toTupleRef().elements()) tensors_of(e, out);
  if (v.isList())
    for (const auto& e : v.toListRef()) tensors_of(e, out);
}

}  // namespace

bool is_torchscript_model(const std::string& model) {
  std::error_code ec;
  bool pt = model.size() > 3 && model.compare(model.size() - 3, 3, ".pt") == 0;
  return pt || fs::is_regular_file(model, ec);
}

int cmd_export_script(const Args& a) {
  const std::string model = a.positional[0];
  auto out = a.output();
  if (!out) throw UsageError("missing -o OUT.onnx");
  if (model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0)
    throw UsageError("'" + model +
                     "' is an ONNX model already: export takes a zoo model's name or a "
                     "TorchScript file (.pt); `tonnx check`, `tonnx print` and `tonnx run` "
                     "read ONNX files");
  if (a.has("--inputs") == a.has("--input-shape"))
    throw UsageError(
        "a TorchScript model needs example inputs: give either --inputs "
        "in0.pb,in1.pb (ONNX TensorProto files) or --input-shape 1x3x224x224");

  ExportOptions opt = export_options(a);

  std::vector<c10::IValue> args;
  std::vector<torch::Tensor> inputs;
  if (auto v = a.get("--inputs")) {
    for (const auto& p : split_inputs(*v)) {
      args.push_back(parse_input(p));
      tensors_of(args.back(), inputs);
    }
  } else {
    torch::manual_seed(static_cast<uint64_t>(a.integer("--seed").value_or(0)));
    for (const auto& shape : parse_shapes(*a.get("--input-shape"))) {
      inputs.push_back(torch::randn(shape));
      args.emplace_back(inputs.back());
    }
  }

  if (auto libs = a.get("--load-library"))
    for (const auto& lib : split(*libs, ',')) load_library(lib);
  torch::jit::Module m = load_torchscript(model);
  ExportSummary s = export_model_args(m, args, *out, opt);
  if (auto dir = a.get("--test-data")) write_export_test_data(*dir, inputs, s);
  std::cout << s.str();
  // As in torch.onnx, an example input the model never reads is not a graph input: say so.
  for (size_t k = 0; k < inputs.size(); ++k)
    if (std::find(s.input_positions.begin(), s.input_positions.end(), static_cast<int64_t>(k)) ==
        s.input_positions.end())
      std::cout << "  example input " << k
                << " is not a graph input: the model does not read its values\n";
  return 0;
}

}  // namespace tonnx::cli
