// Precompiled header: LibTorch and libonnx are heavy; every target reuses this one.
#pragma once
#include <torch/torch.h>
#include <torch/script.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/ir/ir.h>
#include <onnx/onnx_pb.h>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>
