// The check of the backend's prepare-time optimizations (tests/backend): one graph prepared
// with and without them.
#pragma once

#include <string>
#include <vector>

#include "graph_builder.h"
#include "tonnx/backend.h"
#include "tonnx/proto.h"

namespace tonnx::test {

// Runs `model` with and without prepare-time optimizations; returns both outputs and the op
// types the optimized plan ran.
struct Both {
  std::vector<at::Tensor> fast, plain;
  std::vector<std::string> ops;
};
inline Both run_both(GraphBuilder& b, const std::vector<at::Tensor>& inputs,
                     bool fold_batchnorm = false) {
  backend::PrepareOptions fast_opts;
  fast_opts.profile = true;
  fast_opts.fold_batchnorm = fold_batchnorm;
  backend::PrepareOptions plain_opts;
  plain_opts.optimize = false;
  plain_opts.memory_arena = false;
  // Through a proto each: prepare(ir::Model) rewrites the (shared) graph it is given.
  onnx::ModelProto proto = model_to_proto(b.m);
  backend::Rep plain = backend::prepare(proto, "CPU", plain_opts);
  backend::Rep fast = backend::prepare(proto, "CPU", fast_opts);
  Both r;
  r.plain = plain.run(inputs);
  r.fast = fast.run(inputs);
  for (const auto& p : fast.profile()) r.ops.push_back(p.op_type);
  return r;
}

}  // namespace tonnx::test
