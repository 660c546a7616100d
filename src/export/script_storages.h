// A loaded TorchScript module's tensors against the bytes its archive really holds.
#pragma once

#include <torch/script.h>

#include <string>

#include "ir/cpu_allocator.h"

namespace tonnx {

// Every tensor the module holds (parameters, buffers, attributes in lists, tuples, dicts and
// objects, and the constants of its methods' graphs) must lie inside its storage, and each
// storage inside the block its archive record was read into (`log`, alive during the load):
// a storage that declares more bytes than its record holds would hand the heap beyond the
// record to the export. Throws ExportError naming the file, the tensor and both sizes.
void check_loaded_storages(const torch::jit::Module& m, const detail::AllocationLog& log,
                           const std::string& path);

}  // namespace tonnx
