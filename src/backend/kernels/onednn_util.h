// oneDNN helpers shared by the oneDNN kernels (kernels/onednn.cpp, conv/onednn_conv.cpp,
// conv/onednn_blocked.cpp, conv/winograd.cpp; private to the backend).
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/cpu_allocator.h"

namespace tonnx::backend::dnn {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr size_t kMaxCachedShapes = 16;

inline const dnnl::engine& cpu_engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline memory::dims dims_of(at::IntArrayRef s) { return memory::dims(s.begin(), s.end()); }

// A parameter given per spatial dim, or empty for `dflt` on each; false for another length.
inline bool per_dim(std::vector<int64_t>& v, size_t d, int64_t dflt) {
  if (v.empty()) v.assign(d, dflt);
  return v.size() == d;
}

// A byte buffer from LibTorch's allocator (so from the Rep's arena during a run), wrapped as
// oneDNN memory of `md`.
inline memory scratch_memory(const memory::desc& md, at::Tensor& keep) {
  keep = at::empty({static_cast<int64_t>(md.get_size())}, at::kByte);
  return memory(md, cpu_engine(), keep.data_ptr());
}

// A primitive's scratchpad for one call: from the run's arena's scratch blocks
// (BlockPool::take_scratch) where a run is on, else as scratch_memory.
inline memory scratchpad_memory(const memory::desc& md, at::Tensor& keep) {
  const size_t n = md.get_size();
  ::tonnx::detail::BlockPool* pool = ::tonnx::detail::thread_block_pool();
  if (!pool || n < ::tonnx::detail::kMinPoolBytes) return scratch_memory(md, keep);
  void* p = pool->take_scratch(n);
  keep = at::from_blob(
      p, {static_cast<int64_t>(n)}, [pool](void* q) { pool->put_scratch(q); },
      at::TensorOptions(at::kByte));
  return memory(md, cpu_engine(), p);
}

// Every primitive takes its scratch memory per call: oneDNN's library-managed scratchpad
// may not be shared by threads, and one Rep may run on several at once.
inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A reorder between two layouts, with its scratch memory descriptor.
struct Reorder {
  dnnl::reorder prim;
  memory::desc scratch;
  Reorder() = default;
  Reorder(const memory::desc& from, const memory::desc& to) {
    dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to, user_scratchpad());
    prim = dnnl::reorder(pd);
    scratch = pd.scratchpad_desc();
  }
  void run(dnnl::stream& s, const memory& from, const memory& to) const {
    at::Tensor keep;
    std::unordered_map<int, memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if (scratch.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_memory(scratch, keep));
    prim.execute(s, args);
    s.wait();  // before `keep` goes
  }
};

// Counts an entry ShapeCache::get built (onednn_cache_builds() in onednn.h reads it).
void count_shape_cache_build();

// A node's primitives, one per call signature (input sizes and flags) and thread count, at
// most kMaxCachedShapes of them. `build` runs under the lock and may call weights_like().
// The thread count is part of the key because oneDNN fixes it when it makes a primitive
// (at::get_num_threads() then, which is what it reads): without it, a Rep first run at one
// thread kept running its convolutions on one thread after at::set_num_threads(2) (ResNet-18:
// 13.6-14.0 ms against 9.4-10.3 for a Rep first run at two), and one first run at two went
// on using two threads when the caller had set one.
template <class Key, class Entry>
class ShapeCache {
 public:
  template <class Build>
  std::shared_ptr<const Entry> get(Key key, Build build) const {
    std::pair<Key, int> k{std::move(key), at::get_num_threads()};
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k);
    if (it != map_.end()) return it->second;
    if (map_.size() >= kMaxCachedShapes) map_.erase(map_.begin());
    auto e = build();
    count_shape_cache_build();
    map_.emplace(std::move(k), e);
    return e;
  }
  // `user` (the weight as PyTorch stores it, at `data`) reordered into `want`: an entry's
  // copy where one already has that format (shapes often share it), else a new one.
  memory weights(const memory::desc& want, const memory::desc& user, void* data) const {
    for (const auto& [key, other] : map_)
      if (other && other->weights && other->weights.get_desc() == want) return other->weights;
    memory user_w(user, cpu_engine(), data), w(want, cpu_engine());
    dnnl::stream s(cpu_engine());
    Reorder(user, want).run(s, user_w, w);
    return w;
  }

 private:
  mutable std::mutex mu_;
  mutable std::map<std::pair<Key, int>, std::shared_ptr<const Entry>> map_;
};

}  // namespace tonnx::backend::dnn
