#include "backend/arena.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_set>

namespace tonnx::backend {

namespace {
// Requests below this go to the system allocator: glibc serves them from its bins cheaply.
constexpr size_t kMinArenaBytes = 32 * 1024;
// Every arena block starts with a header; 64 bytes keep the data at c10's 64-byte alignment.
// Other allocations are c10's own (no header), so memory that something allocated before
// tonnx installed its allocator and frees through it later (oneDNN's tensors free through
// the current allocator's raw deleter) is freed as c10 would.
constexpr size_t kHeaderBytes = 64;
constexpr uint64_t kMagic = 0x746f6e6e78617265ULL;  // "tonnxare"

struct Header {
  Arena* arena;
  size_t capacity;  // usable bytes after the header
  uint64_t magic;
};
static_assert(sizeof(Header) <= kHeaderBytes, "header must fit");

Header* header_of(void* data) {
  return reinterpret_cast<Header*>(static_cast<char*>(data) - kHeaderBytes);
}

void* system_alloc(size_t capacity, Arena* arena) {
  void* base = c10::alloc_cpu(capacity + kHeaderBytes);
  auto* h = static_cast<Header*>(base);
  h->arena = arena;
  h->capacity = capacity;
  h->magic = kMagic;
  return static_cast<char*>(base) + kHeaderBytes;
}

void system_free(void* data) { c10::free_cpu(header_of(data)); }

thread_local Arena* tls_arena = nullptr;
}  // namespace

class Arena {
 public:
  // A block of at least n bytes: a cached one no more than a quarter larger, or a new one.
  void* take(size_t n) {
    refs_.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_ += n;
      auto it = free_.lower_bound(n);
      if (it != free_.end() && it->first <= n + n / 4) {
        void* p = it->second;
        cached_ -= it->first;
        free_.erase(it);
        ++hits_;
        live_ += header_of(p)->capacity - n;
        peak_ = std::max(peak_, live_);
        return p;
      }
      ++misses_;
      peak_ = std::max(peak_, live_);
    }
    try {
      return system_alloc(n, this);
    } catch (...) {  // out of memory: undo the accounting, the error goes to the caller
      {
        std::lock_guard<std::mutex> lock(mu_);
        live_ -= n;
      }
      unref();
      throw;
    }
  }

  // A block whose tensor died: cached while the arena has room and an owner, else freed.
  void put(void* data) {
    size_t cap = header_of(data)->capacity;
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_ -= cap;
      if (!orphaned_ && cached_ + cap <= peak_) {
        free_.emplace(cap, data);
        cached_ += cap;
        keep = true;
      }
    }
    if (!keep) system_free(data);
    unref();
  }

  // The owning Rep is gone: nothing will reuse the cache.
  void orphan() {
    std::multimap<size_t, void*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      orphaned_ = true;
      drop.swap(free_);
      cached_ = 0;
    }
    for (auto& [cap, p] : drop) system_free(p);
    unref();
  }

  ArenaStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {hits_, misses_, cached_, peak_};
  }

 private:
  void unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

  std::atomic<size_t> refs_{1};  // the owner plus one per live block
  std::mutex mu_;
  std::multimap<size_t, void*> free_;  // capacity -> data
  size_t cached_ = 0, live_ = 0, peak_ = 0, hits_ = 0, misses_ = 0;
  bool orphaned_ = false;
};

namespace {
// The arena blocks handed out and not yet returned: the raw deleter receives pointers from
// any allocator and must tell arena blocks (with a header) from c10's plain ones.
std::mutex g_blocks_mu;
std::unordered_set<void*>& live_blocks() {
  static auto* s = new std::unordered_set<void*>();  // never destroyed: frees may come late
  return *s;
}

void delete_block(void* data) {
  if (!data) return;
  bool arena_block;
  {
    std::lock_guard<std::mutex> lock(g_blocks_mu);
    arena_block = live_blocks().erase(data) > 0;
  }
  if (arena_block)
    header_of(data)->arena->put(data);
  else
    c10::free_cpu(data);
}

// Installed as LibTorch's CPU allocator: while an ArenaScope is active, requests of
// kMinArenaBytes or more come from its arena; all others are c10's alloc_cpu / free_cpu.
struct TonnxCpuAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) const override {
    Arena* a = tls_arena;
    if (!a || n < kMinArenaBytes) {
      void* p = n ? c10::alloc_cpu(n) : nullptr;
      return {p, p, &c10::free_cpu, c10::Device(c10::DeviceType::CPU)};
    }
    void* p = a->take(n);
    try {
      std::lock_guard<std::mutex> lock(g_blocks_mu);
      live_blocks().insert(p);
    } catch (...) {
      a->put(p);
      throw;
    }
    return {p, p, &delete_block, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &delete_block; }
};

void install_allocator() {
  static TonnxCpuAllocator allocator;
  static std::once_flag once;
  // Priority above LibTorch's default registration (0), so it is not replaced back.
  std::call_once(once, [] { c10::SetCPUAllocator(&allocator, 1); });
}
}  // namespace

std::shared_ptr<Arena> make_arena() {
  install_allocator();
  return std::shared_ptr<Arena>(new Arena, [](Arena* a) { a->orphan(); });
}

ArenaStats arena_stats(const Arena& a) { return const_cast<Arena&>(a).stats(); }

ArenaScope::ArenaScope(Arena* a) : prev_(tls_arena) { tls_arena = a; }
ArenaScope::~ArenaScope() { tls_arena = prev_; }

}  // namespace tonnx::backend
