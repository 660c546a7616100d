// Traceables: a LibTorch module or callable as the C++ frontend traces it (tonnx/export.h).
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/torch.h>

#include "export/trace.h"

namespace tonnx {

std::vector<torch::Tensor> flatten_outputs(torch::nn::AnyValue&& v) {
  using T = torch::Tensor;
  if (auto* t = v.try_get<T>()) return {*t};
  if (auto* l = v.try_get<std::vector<T>>()) return *l;
  if (auto* p = v.try_get<std::tuple<T, T>>()) return flatten_outputs(*p);
  if (auto* p = v.try_get<std::tuple<T, T, T>>()) return flatten_outputs(*p);
  if (auto* p = v.try_get<std::tuple<T, std::tuple<T, T>>>()) return flatten_outputs(*p);
  throw ExportError("the module's forward returns " + c10::demangle(v.type_info().name()) +
                    "; tonnx exports tensors, vectors and tuples of tensors");
}

Traceable make_traceable(torch::nn::AnyModule module) {
  Traceable t;
  t.module = module.ptr();
  auto shared = std::make_shared<torch::nn::AnyModule>(std::move(module));
  t.forward = [shared](const std::vector<torch::Tensor>& in) {
    // AnyModule checks the count and types of the arguments against forward's signature.
    auto& m = *shared;
    switch (in.size()) {
      case 0:
        return flatten_outputs(m.any_forward());
      case 1:
        return flatten_outputs(m.any_forward(in[0]));
      case 2:
        return flatten_outputs(m.any_forward(in[0], in[1]));
      case 3:
        return flatten_outputs(m.any_forward(in[0], in[1], in[2]));
      case 4:
        return flatten_outputs(m.any_forward(in[0], in[1], in[2], in[3]));
      case 5:
        return flatten_outputs(m.any_forward(in[0], in[1], in[2], in[3], in[4]));
      case 6:
        return flatten_outputs(m.any_forward(in[0], in[1], in[2], in[3], in[4], in[5]));
      default:
        break;
    }
    throw ExportError(
        "tonnx traces modules with up to 6 tensor inputs; wrap the model in a "
        "callable that takes a std::vector<torch::Tensor>");
  };
  return t;
}

Traceable make_traceable(std::shared_ptr<torch::nn::SequentialImpl> seq) {
  Traceable t;
  t.module = seq;
  t.forward = [seq](const std::vector<torch::Tensor>& in) {
    if (in.size() != 1)
      throw ExportError("a Sequential takes one input tensor, but " + std::to_string(in.size()) +
                        " were given");
    return std::vector<torch::Tensor>{seq->forward(in[0])};
  };
  return t;
}

}  // namespace tonnx
