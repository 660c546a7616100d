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
// What the cache may hold: kCapPeaks times the peak of live bytes, plus kCapSlackBytes.
constexpr size_t kCapPeaks = 4;
constexpr size_t kCapSlackBytes = size_t{64} << 20;
// A cached block that this many runs in a row left untaken goes back to the system.
constexpr uint64_t kKeepRuns = 8;

struct Header {
  size_t capacity;  // usable bytes after the header
  uint64_t magic;
  uint64_t run;  // the arena's run count when the block last went back to it
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
  // What a run needs cached is more than its peak of live bytes: a block serves requests
  // down to 4/5 of its size only, and a network's stages use different sizes, so the blocks
  // of one stage wait in the cache while another runs. Measured once the cache stops
  // missing (the zoo at batch 1): 1.5x the peak (super_resolution) to 4.04x (DenseNet-121:
  // its features grow by 32 channels a layer), Inception v3 3.04x, AlexNet 3.03x. A cap at
  // twice the peak missed on Inception v3 about 150 times a run, each a block faulted in
  // anew at 12 us per 4 KiB page on this project's machine: its 80 -> 192 convolution took
  // 6.8 ms or 18 ms by the run. So the cap is 4x the peak plus 64 MiB, against a single run
  // that never repeats its sizes (a Loop that grows a tensor), and what kKeepRuns runs in a
  // row left untaken goes back to the system at the next run's start (begin_run): sizes the
  // model stopped asking for, while a few input shapes taking turns keep their blocks.
  void put(void* data) override {
    Header* h = header_of(data);
    size_t cap = h->capacity;
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_ -= cap;
      if (!orphaned_ && cached_ + cap <= kCapPeaks * peak_ + kCapSlackBytes) {
        h->run = runs_;
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

  // A run starts: the cached blocks that went back before the last kKeepRuns runs started,
  // and that none of those runs took, serve sizes the model no longer asks for: freed.
  void begin_run() {
    std::vector<void*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++runs_;
      for (auto it = free_.begin(); it != free_.end();) {
        if (header_of(it->second)->run + kKeepRuns < runs_) {
          drop.push_back(it->second);
          cached_ -= it->first;
          it = free_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (void* p : drop) system_free(p);
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
  uint64_t runs_ = 0;  // begin_run calls
  bool orphaned_ = false;
};

std::shared_ptr<Arena> make_arena() {
  detail::install_cpu_allocator();
  return std::shared_ptr<Arena>(new Arena, [](Arena* a) { a->orphan(); });
}

ArenaStats arena_stats(const Arena& a) { return const_cast<Arena&>(a).stats(); }

ArenaScope::ArenaScope(Arena* a) : prev_(detail::set_thread_block_pool(a)) {
  if (a) a->begin_run();
}
ArenaScope::~ArenaScope() { detail::set_thread_block_pool(prev_); }

}  // namespace tonnx::backend
