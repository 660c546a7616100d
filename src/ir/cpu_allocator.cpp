#include "ir/cpu_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace tonnx::detail {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

thread_local BlockPool* tls_pool = nullptr;
thread_local bool tls_huge_pages = false;
thread_local AllocationLog* tls_log = nullptr;

// The pool blocks handed out and not yet returned, with their pool: the raw deleter receives
// pointers from any allocator and must tell pool blocks from c10's plain ones.
std::mutex g_blocks_mu;
std::unordered_map<void*, BlockPool*>& live_blocks() {
  static auto* m = new std::unordered_map<void*, BlockPool*>();  // never destroyed: late frees
  return *m;
}

void delete_block(void* data) {
  if (!data) return;
  BlockPool* pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_blocks_mu);
    auto it = live_blocks().find(data);
    if (it != live_blocks().end()) {
      pool = it->second;
      live_blocks().erase(it);
    }
  }
  if (pool)
    pool->put(data);
  else
    c10::free_cpu(data);
}

struct TonnxCpuAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) const override {
    BlockPool* pool = tls_pool;
    if (!pool || n < kMinPoolBytes) {
      void* p = n ? alloc_cpu_block(n) : nullptr;
      if (tls_log && p) {
        try {
          tls_log->record(p, n);
        } catch (...) {
          c10::free_cpu(p);
          throw;
        }
      }
      return {p, p, &c10::free_cpu, c10::Device(c10::DeviceType::CPU)};
    }
    void* p = pool->take(n);
    try {
      std::lock_guard<std::mutex> lock(g_blocks_mu);
      live_blocks().emplace(p, pool);
    } catch (...) {
      pool->put(p);
      throw;
    }
    return {p, p, &delete_block, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &delete_block; }
};

}  // namespace

void* alloc_cpu_block(size_t n) {
  void* p = c10::alloc_cpu(n);
  if (!tls_huge_pages) return p;
  // The whole huge pages inside the block; the kernel faults them in 2 MiB at a time. A
  // refusal (THP off, an old kernel) leaves ordinary pages.
  auto begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  auto end = (reinterpret_cast<uintptr_t>(p) + n) & ~(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  return p;
}

void install_cpu_allocator() {
  static TonnxCpuAllocator allocator;
  static std::once_flag once;
  // Priority above LibTorch's default registration (0), so it is not replaced back.
  std::call_once(once, [] { c10::SetCPUAllocator(&allocator, 1); });
}

HugePageScope::HugePageScope() : prev_(tls_huge_pages) {
  install_cpu_allocator();
  tls_huge_pages = true;
}
HugePageScope::~HugePageScope() { tls_huge_pages = prev_; }

AllocationLog::AllocationLog() : prev_(tls_log) {
  install_cpu_allocator();
  tls_log = this;
}
AllocationLog::~AllocationLog() { tls_log = prev_; }

std::optional<size_t> AllocationLog::size_of(const void* p) const {
  auto it = sizes_.find(p);
  if (it == sizes_.end()) return std::nullopt;
  return it->second;
}

BlockPool* thread_block_pool() { return tls_pool; }

BlockPool* set_thread_block_pool(BlockPool* pool) {
  install_cpu_allocator();
  BlockPool* prev = tls_pool;
  tls_pool = pool;
  return prev;
}

}  // namespace tonnx::detail
