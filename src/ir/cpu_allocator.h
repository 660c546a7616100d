// LibTorch's CPU allocator while tonnx works. c10's own allocation (posix_memalign, free),
// with two additions:
//  - while a HugePageScope is alive on a thread (the exporter's trace), that thread's blocks
//    of 2 MiB or more are advised into transparent huge pages (MADV_HUGEPAGE). On
//    this project's machine a fresh 4 KiB page costs 12 us to fault in, a 2 MiB huge page
//    0.24-4.5 us per 4 KiB; tracing super_resolution spent two thirds of its time faulting
//    in activations (docs/export_speed.md).
//  - while a BlockPool is set on a thread (the backend's arena during Rep::run), that
//    thread's requests of kMinPoolBytes or more come from the pool and go back to it when
//    their tensor dies, whichever thread frees it.
// Every other block is c10's: memory allocated before the install and freed through this
// allocator, or the reverse (oneDNN frees through the current allocator's raw deleter), is
// freed as c10 would.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>

namespace tonnx::detail {

// Requests below this go to the system allocator: glibc serves them from its bins cheaply.
constexpr size_t kMinPoolBytes = 32 * 1024;

class BlockPool {
 public:
  virtual ~BlockPool() = default;
  virtual void* take(size_t n) = 0;  // at least n bytes, 64-byte aligned; may throw
  virtual void put(void* data) = 0;  // a block take() returned, no longer used
  // Scratch memory for the length of one call (a oneDNN primitive's scratchpad): at least n
  // bytes, 64-byte aligned, possibly far more; back through put_scratch. Scratch sizes vary
  // from node to node by tens of MB (Winograd's), which blocks kept per size would not serve.
  virtual void* take_scratch(size_t n) { return take(n); }
  virtual void put_scratch(void* data) { put(data); }
};

// The pool set on this thread (null: none).
BlockPool* thread_block_pool();

// Installs tonnx's allocator as LibTorch's CPU allocator (once per process; later calls do
// nothing). The exporter installs it for its trace, the backend at its first prepare.
void install_cpu_allocator();

// Routes this thread's allocations of kMinPoolBytes or more to `pool` (null: none); returns
// the pool set before. Installs the allocator.
BlockPool* set_thread_block_pool(BlockPool* pool);

// c10::alloc_cpu; blocks of 2 MiB or more advised into huge pages inside a HugePageScope.
void* alloc_cpu_block(size_t n);

// Huge pages for this thread's large blocks while alive (installs the allocator): the
// exporter's trace, and a model's weights of 2 MiB or more as they are loaded
// (tensor_from_proto). Not for the backend's activations: its arena faults nothing after the first
// run, and in one measurement GPT-2's steady-state runs took 290-370 ms with its blocks in huge
// pages against 195 without.
class HugePageScope {
 public:
  HugePageScope();
  ~HugePageScope();
  HugePageScope(const HugePageScope&) = delete;
  HugePageScope& operator=(const HugePageScope&) = delete;

 private:
  bool prev_;
};

// While alive, records the size of every block this thread allocates through LibTorch's CPU
// allocator (it installs tonnx's). LibTorch's TorchScript loader reads each tensor record of an
// archive into one such block, and builds the storage over it with the size the pickle
// declares, which a hostile file can make larger than the record: the log says how many bytes
// the block behind each loaded storage really has. Logs nest; the innermost records.
class AllocationLog {
 public:
  AllocationLog();
  ~AllocationLog();
  AllocationLog(const AllocationLog&) = delete;
  AllocationLog& operator=(const AllocationLog&) = delete;
  // The size of the last block allocated at `p` while this log was alive, if any.
  std::optional<size_t> size_of(const void* p) const;
  void record(const void* p, size_t n) { sizes_[p] = n; }

 private:
  std::unordered_map<const void*, size_t> sizes_;
  AllocationLog* prev_;
};

}  // namespace tonnx::detail
