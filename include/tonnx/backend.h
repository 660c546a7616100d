// tonnx's CPU backend, shaped like the seed's Caffe2 one:
//   auto rep = tonnx::backend::prepare("model.onnx", "CPU");
//   std::vector<torch::Tensor> outputs = rep.run({input});
// prepare() does all graph work once (read, fold constants, bind kernels with parsed
// attributes, plan buffer lifetimes); run() only executes the plan.
#pragma once

#include <onnx/onnx_pb.h>

#include <ATen/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tonnx/ir.h"

namespace tonnx::backend {

struct PrepareOptions {
  int num_threads = 0;   // 0: leave LibTorch's setting
  bool optimize = true;  // constant folding at prepare time
};

struct Plan;

class Rep {
 public:
  explicit Rep(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  // Positional inputs map onto the graph inputs that are not initializers, in order.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) const;
  // Inputs by name; every graph input must be given.
  std::vector<at::Tensor> run(const std::map<std::string, at::Tensor>& inputs) const;
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  double prepare_seconds() const;

 private:
  std::shared_ptr<const Plan> plan_;
};

Rep prepare(const std::string& path, const std::string& device = "CPU", const PrepareOptions& = {});
Rep prepare(const onnx::ModelProto& model, const std::string& device = "CPU",
            const PrepareOptions& = {}, const std::string& base_dir = {});
Rep prepare(ir::Model model, const std::string& device = "CPU", const PrepareOptions& = {});

// "CPU" only: Debian's LibTorch is built without CUDA.
bool supports_device(const std::string& device);

// Runs one node (the onnx backend API's run_node).
std::vector<at::Tensor> run_node(const onnx::NodeProto& node, const std::vector<at::Tensor>& inputs,
                                 int opset = 17);

}  // namespace tonnx::backend
