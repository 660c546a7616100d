#include "backend/arena.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "ir/cpu_allocator.h"

namespace tonnx::backend {

namespace {
// Every arena block starts with a header; 64 bytes keep the data at c10's 64-byte alignment.
constexpr size_t kHeaderBytes = 64;
constexpr uint64_t kMagic = 0x746f6e6e78617265ULL;  // "tonnxare"

struct Header {
  size_t capacity;  // usable bytes after the header
  uint64_t magic;
};
static_assert(sizeof(Header) <= kHeaderBytes, "header must fit");

Header* header_of(void* data) {
  return reinterpret_cast<Header*>(static_cast<char*>(data) - kHeaderBytes);
}

void* system_alloc(size_t capacity) {
  void* base = detail::alloc_cpu_block(capacity + kHeaderBytes);
  auto* h = static_cast<Header*>(base);
  h->capacity = capacity;
  h->magic = kMagic;
  return static_cast<char*>(base) + kHeaderBytes;
}

void system_free(void* data) { c10::free_cpu(header_of(data)); }
}  // namespace

class Arena final : public detail::BlockPool {
 public:
  // A block of at least n bytes: a cached one no more than a quarter larger, or a new one.
  void* take(size_t n) override {
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
      return system_alloc(n);
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
  // Room is twice the peak of live bytes: a block serves requests down to 4/5 of its size
  // only, so a run's blocks add up to more than its peak. Capped at the peak itself, Inception
  // v3 missed 39 times per run and faulted those activations in anew (143 -> 90 ms at one
  // thread with the doubled cap).
  void put(void* data) override {
    size_t cap = header_of(data)->capacity;
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_ -= cap;
      if (!orphaned_ && cached_ + cap <= 2 * peak_) {
        free_.emplace(cap, data);
        cached_ += cap;
        keep = true;
      }
    }
    if (!keep) system_free(data);
    unref();
  }

  // Scratch blocks are kept apart, outside the bytes counted above, one per call running at
  // once: a free one at least n bytes long, else a new one as large as the largest request
  // so far (a smaller free one is dropped), so that one block soon serves every node.
  void* take_scratch(size_t n) override {
    refs_.fetch_add(1);
    void* drop = nullptr;
    size_t want = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      scratch_max_ = std::max(scratch_max_, n);
      for (size_t i = 0; i < scratch_free_.size(); ++i)
        if (header_of(scratch_free_[i])->capacity >= n) {
          void* p = scratch_free_[i];
          scratch_free_.erase(scratch_free_.begin() + static_cast<std::ptrdiff_t>(i));
          ++hits_;
          return p;
        }
      ++misses_;
      if (!scratch_free_.empty()) {
        drop = scratch_free_.back();
        scratch_free_.pop_back();
      }
      want = scratch_max_;
    }
    if (drop) system_free(drop);
    try {
      return system_alloc(want);
    } catch (...) {
      unref();
      throw;
    }
  }

  void put_scratch(void* data) override {
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!orphaned_) {
        scratch_free_.push_back(data);
        keep = true;
      }
    }
    if (!keep) system_free(data);
    unref();
  }

  // The owning Rep is gone: nothing will reuse the cache.
  void orphan() {
    std::multimap<size_t, void*> drop;
    std::vector<void*> scratch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      orphaned_ = true;
      drop.swap(free_);
      scratch.swap(scratch_free_);
      cached_ = 0;
    }
    for (auto& [cap, p] : drop) system_free(p);
    for (void* p : scratch) system_free(p);
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
  std::vector<void*> scratch_free_;    // free scratch blocks
  size_t scratch_max_ = 0;             // the largest scratch request so far
  size_t cached_ = 0, live_ = 0, peak_ = 0, hits_ = 0, misses_ = 0;
  bool orphaned_ = false;
};

std::shared_ptr<Arena> make_arena() {
  detail::install_cpu_allocator();
  return std::shared_ptr<Arena>(new Arena, [](Arena* a) { a->orphan(); });
}

ArenaStats arena_stats(const Arena& a) { return const_cast<Arena&>(a).stats(); }

ArenaScope::ArenaScope(Arena* a) : prev_(detail::set_thread_block_pool(a)) {}
ArenaScope::~ArenaScope() { detail::set_thread_block_pool(prev_); }

}  // namespace tonnx::backend
