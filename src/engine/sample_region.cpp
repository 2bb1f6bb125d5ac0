// A page-run allocator over one reserved range, for sampled blocks only.
#include "sample_region.hpp"

#include <atomic>
#include <sys/mman.h>

#include "spin_lock.hpp"

namespace liveheap::engine {

std::uintptr_t g_region_base = 0;
std::uintptr_t g_region_span = 0;

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::uint64_t kMagic = 0x6c69766568656170ull;  // "liveheap"
constexpr std::size_t kHeaderBytes = 64;
constexpr std::size_t kSmallRuns = 64;  // runs up to this many pages get exact free lists
// Runs up to this size are zeroed in place on release and kept; larger ones go back to the
// kernel. madvise plus the page fault on reuse cost ~30 ns per malloc/free pair at the
// default interval (the benchmark measured sampled mode at 2.2x glibc with it on every run).
constexpr std::size_t kKeepPages = 8;

struct FreeRun {
  FreeRun* next;
  std::uint64_t pages;
};

// Guarded by g_lock.
SpinLock g_lock;
std::uintptr_t g_bump = 0;                // next never-used page
FreeRun* g_small_free[kSmallRuns + 1] = {};  // by exact page count
FreeRun* g_large_free = nullptr;          // first fit, split on use
std::atomic<std::int64_t> g_overhead{0};  // header + rounding bytes of live runs

std::uintptr_t take_run(std::uint64_t pages) noexcept {
  if (pages <= kSmallRuns && g_small_free[pages] != nullptr) {
    FreeRun* run = g_small_free[pages];
    g_small_free[pages] = run->next;
    return reinterpret_cast<std::uintptr_t>(run);
  }
  for (FreeRun** link = &g_large_free; *link != nullptr; link = &(*link)->next) {
    FreeRun* run = *link;
    if (run->pages < pages) continue;
    *link = run->next;
    if (run->pages > pages) {  // give the tail back
      auto* tail = reinterpret_cast<FreeRun*>(reinterpret_cast<std::uintptr_t>(run) + pages * kPage);
      tail->pages = run->pages - pages;
      FreeRun** list = tail->pages <= kSmallRuns ? &g_small_free[tail->pages] : &g_large_free;
      tail->next = *list;
      *list = tail;
    }
    return reinterpret_cast<std::uintptr_t>(run);
  }
  if (g_bump + pages * kPage > g_region_base + g_region_span || g_bump == 0) return 0;
  const std::uintptr_t run = g_bump;
  g_bump += pages * kPage;
  return run;
}

void give_back(std::uintptr_t run, std::uint64_t pages) noexcept {
  auto* free_run = reinterpret_cast<FreeRun*>(run);
  free_run->pages = pages;
  FreeRun** list = pages <= kSmallRuns ? &g_small_free[pages] : &g_large_free;
  free_run->next = *list;
  *list = free_run;
}

}  // namespace

bool reserve_sample_region() noexcept {
  if (g_region_span != 0) return true;
  // Address space only (MAP_NORESERVE, untouched pages cost nothing); try smaller ranges
  // where overcommit is strict.
  for (std::uint64_t span = std::uint64_t{64} << 30; span >= (std::uint64_t{256} << 20); span /= 4) {
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) continue;
    g_bump = reinterpret_cast<std::uintptr_t>(p);
    g_region_base = g_bump;
    __atomic_store_n(&g_region_span, span, __ATOMIC_RELEASE);
    return true;
  }
  return false;
}

void* region_allocate(std::size_t size, std::size_t alignment) noexcept {
  if (alignment < 16) alignment = 16;
  if (g_region_span == 0 || size > (g_region_span >> 1) || alignment > (g_region_span >> 4))
    return nullptr;
  // The block starts past a 64-byte header, aligned; the header sits at the start of the
  // page just before the block's first byte, so it is found from the block alone.
  const std::size_t lead = alignment <= kHeaderBytes ? kHeaderBytes
                          : alignment <= kPage     ? alignment
                                                   : alignment + kPage;
  const std::uint64_t pages = (lead + size + kPage - 1) / kPage;
  std::uintptr_t run;
  {
    SpinGuard guard(g_lock);
    run = take_run(pages);
  }
  if (run == 0) return nullptr;
  std::uintptr_t block = (run + lead) & ~(alignment - 1);
  auto* header = reinterpret_cast<SampleHeader*>((block - 1) & ~(kPage - 1));
  *header = SampleHeader{kMagic, run, pages, size, 0, 0, 0, 0};
  g_overhead.fetch_add(static_cast<std::int64_t>(pages * kPage - size), std::memory_order_relaxed);
  return reinterpret_cast<void*>(block);
}

SampleHeader* region_header(const void* p) noexcept {
  return reinterpret_cast<SampleHeader*>((reinterpret_cast<std::uintptr_t>(p) - 1) & ~(kPage - 1));
}

std::size_t region_usable_size(const void* p) noexcept {
  const SampleHeader* h = region_header(p);
  return h->run + h->run_pages * kPage - reinterpret_cast<std::uintptr_t>(p);
}

void region_release(void* p) noexcept {
  const SampleHeader* h = region_header(p);
  const std::uintptr_t run = h->run;
  const std::uint64_t pages = h->run_pages;
  g_overhead.fetch_sub(static_cast<std::int64_t>(pages * kPage - h->size), std::memory_order_relaxed);
  // Either way the run reads as zero when reused (calloc relies on it), and a stale header
  // inside it can never be mistaken for a live one.
  if (pages <= kKeepPages) __builtin_memset(reinterpret_cast<void*>(run), 0, pages * kPage);
  else madvise(reinterpret_cast<void*>(run), pages * kPage, MADV_DONTNEED);
  SpinGuard guard(g_lock);
  give_back(run, pages);
}

bool is_sampled_block(const void* p) noexcept { return in_sample_region(p); }

std::int64_t region_overhead_bytes() noexcept { return g_overhead.load(std::memory_order_relaxed); }

void region_lock_for_fork() noexcept { g_lock.lock(); }
void region_unlock_after_fork() noexcept { g_lock.unlock(); }

}  // namespace liveheap::engine
