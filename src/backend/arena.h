// Buffer reuse across runs. A model runs the same sizes again and again; glibc hands large
// blocks (>= 128 KiB, and always >= 32 MiB) back to the kernel on free, so every run
// page-faults its activations in anew: on super_resolution that was a third of the run
// time at 2 threads, and word_language_model's 93 MB logits cost more than their GEMM.
//
// Each Rep owns an Arena. While Rep::run executes on a thread (ArenaScope), LibTorch's CPU
// allocations of at least detail::kMinPoolBytes made on that thread are served from the arena's
// free blocks and go back to it when their tensor dies, whichever thread frees it (a
// returned output may outlive the Rep; the block holds a reference to its arena). Other
// allocations are LibTorch's own. The arena caches what the model's runs reuse: blocks 8
// runs in a row left untaken go back to the system when the next run starts, and the cache never
// holds more than 4x the peak of live bytes plus 64 MiB (arena.cpp says why).
#pragma once

#include <cstddef>
#include <memory>

#include "ir/cpu_allocator.h"

namespace tonnx::backend {

class Arena;  // a detail::BlockPool (ir/cpu_allocator.h)

// Creates an arena; the first call installs tonnx's CPU allocator in LibTorch (it forwards
// to LibTorch's own allocator unless an ArenaScope is active on the calling thread).
std::shared_ptr<Arena> make_arena();

struct ArenaStats {
  size_t hits = 0, misses = 0;  // allocations served from cache / from the system
  size_t cached_bytes = 0;      // bytes held in free blocks now
  size_t peak_live_bytes = 0;   // most bytes live from this arena at once
};
ArenaStats arena_stats(const Arena& a);

// Routes this thread's allocations to `a` for the scope's lifetime (null: no arena). Each
// scope is one run of the model: its start frees the cached blocks the last 8 runs left
// untaken.
class ArenaScope {
 public:
  explicit ArenaScope(Arena* a);
  ~ArenaScope();
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;

 private:
  detail::BlockPool* prev_;
};

}  // namespace tonnx::backend
