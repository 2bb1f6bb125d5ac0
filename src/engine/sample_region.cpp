// A page-run allocator over one reserved range, for sampled blocks only: best fit over
// size bins; the last run extended at the end of the used range, and a block grown in
// place into what follows it, as glibc's heap does; freed runs kept resident (and
// coalesced) within a budget of what the region may need again, so that a large block
// freed and allocated again costs no madvise and no page faults; runs given back to the
// kernel coalesced and, at the end of the used range, returned to it. A thread keeps the
// one-page run it freed last for its next one-page sample, without the lock.
#include "sample_region.hpp"

#include <atomic>
#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>

#include "spin_lock.hpp"
#include "thread_state.hpp"

namespace liveheap::engine {

std::uintptr_t g_region_base = 0;
std::uintptr_t g_region_span = 0;
std::uintptr_t g_free_mask = kSampleAddressBits;

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::uint64_t kMagic = 0x6c69766568656170ull;  // "liveheap"
constexpr std::uint32_t kLive = 0x4556494c;              // "LIVE"
constexpr std::uint32_t kFreed = 0x45455246;             // "FREE"
constexpr std::size_t kHeaderBytes = 64;
static_assert(sizeof(SampleHeader) == kHeaderBytes);
constexpr int kExactBins = 64;              // runs up to this many pages: one bin per size
constexpr int kBins = kExactBins + 1 + 40;  // larger: one bin per power of two
// Freed runs kept resident: what the region may need again soon, and no more. Its live
// runs were at most `peak` bytes over its last kKeptRunsWindow to 2 x kKeptRunsWindow
// allocations; the runs it keeps are those it would take again to be back there (peak -
// live now), as glibc keeps the free memory its heap held and trims what is above. At
// least kKeepFloor (a few small runs stay whatever the window says), at most kKeepCeiling
// (what glibc leaves untrimmed at the top of its heap at most: its trim threshold grows to
// 64 MiB). A fixed 64 MiB let sampled blocks keep 24-60 MiB resident beside glibc's own
// free memory: two pools, each holding what the other could have reused.
constexpr std::int64_t kKeepFloor = std::int64_t{2} << 20;
constexpr std::int64_t kKeepCeiling = std::int64_t{64} << 20;
// Runs given back per lock hold: madvise runs with the lock released.
constexpr int kBatch = 16;

// A free run, in a side table indexed by its first page: a given-back run is not touched
// at all (it stays non-resident and reads zero), and a kept one keeps the freed block's
// header readable, so that freeing it again is reported as a double free.
struct FreeRun {
  FreeRun* next;  // in its bin
  FreeRun* prev;
  FreeRun* newer;  // kept runs, oldest first: past the budget the oldest goes back
  FreeRun* older;
  std::uint64_t pages;  // 0: no free run starts at this page
  std::uint64_t dirty;  // bytes from the run's start that may be non-zero; past them, zero
  bool kept;            // resident and counted in g_kept; else given back (all zero)
};

struct Taken {
  std::uintptr_t run = 0;
  std::uint64_t dirty = 0;
};

// Per thread (the engine's thread slot, t_thread.slot), each on a line of its own: with two
// threads sampling, each sample took the region's lock and lines, and the run it reused,
// from the other thread's core. `cached`: the one-page run the thread freed last, for its
// next one-page sample (0: none); still counted in g_live_run_bytes, shown apart from the
// kept runs (region_thread_kept_bytes). `overhead`: header and rounding bytes of the live
// runs it allocated less those it freed. Threads past kRunCacheSlots (or with no slot yet)
// share the last entry's overhead and cache nothing: at most kRunCacheSlots pages are held
// so.
constexpr std::uint32_t kRunCacheSlots = 64;
struct alignas(64) ThreadRuns {
  std::atomic<std::uintptr_t> cached{0};
  std::atomic<std::int64_t> overhead{0};
};
ThreadRuns g_thread_runs[kRunCacheSlots + 1];

ThreadRuns& thread_runs() noexcept {
  const std::uint32_t slot = t_thread.slot;  // 1 + the slot, 0: none yet
  return g_thread_runs[slot != 0 && slot <= kRunCacheSlots ? slot - 1 : kRunCacheSlots];
}
bool may_cache(const ThreadRuns& t) noexcept { return &t != &g_thread_runs[kRunCacheSlots]; }

// Takes the run `t` keeps, if any ({0, 0}: none). The header of a one-page run is at its
// start: its freed header says what the block wrote.
Taken take_cached(ThreadRuns& t) noexcept {
  if (t.cached.load(std::memory_order_relaxed) == 0) return {};
  const std::uintptr_t run = t.cached.exchange(0, std::memory_order_acquire);
  if (run == 0) return {};
  return {run, reinterpret_cast<const SampleHeader*>(run)->dirty};
}

// Guarded by g_lock (the atomics are read without it).
alignas(64) SpinLock g_lock;
std::uintptr_t g_bump = 0;            // next never-used page (atomic loads: free() checks it)
std::uintptr_t g_bump_high = 0;       // the highest g_bump yet: side-table pages up to it stay
FreeRun* g_nodes = nullptr;           // one per page of the region
std::uint32_t* g_end_tags = nullptr;  // per page: pages of the free run ending there, or 0
FreeRun* g_kept_bins[kBins] = {};
FreeRun* g_given_bins[kBins] = {};
FreeRun* g_oldest = nullptr;
FreeRun* g_newest = nullptr;
std::int64_t g_live_run_bytes = 0;
std::atomic<std::int64_t> g_kept{0};  // bytes of kept free runs
std::atomic<std::uint64_t> g_madvise_calls{0};

std::uintptr_t bump() noexcept { return __atomic_load_n(&g_bump, __ATOMIC_RELAXED); }
void set_bump(std::uintptr_t value) noexcept { __atomic_store_n(&g_bump, value, __ATOMIC_RELAXED); }
// The used range ends at `end` now, past where it ended: g_bump_high follows.
void grow_used_range(std::uintptr_t end) noexcept {
  set_bump(end);
  if (end > __atomic_load_n(&g_bump_high, __ATOMIC_RELAXED))
    __atomic_store_n(&g_bump_high, end, __ATOMIC_RELAXED);
}

std::uint64_t page_of(std::uintptr_t addr) noexcept { return (addr - g_region_base) / kPage; }
std::uintptr_t start_of(const FreeRun* r) noexcept {
  return g_region_base + static_cast<std::uintptr_t>(r - g_nodes) * kPage;
}

int bin_of(std::uint64_t pages) noexcept {
  if (pages <= kExactBins) return static_cast<int>(pages);
  return kExactBins + 1 + (63 - __builtin_clzll(pages)) - 6;  // 65.. pages: log2 >= 6
}

// The live run bytes' highest in the current window of kKeptRunsWindow allocations, and in
// the one before: a sliding maximum in two numbers. Guarded by g_lock.
int g_window_allocations = 0;
std::int64_t g_window_peak = 0, g_previous_peak = 0;

void note_live() noexcept {
  if (g_live_run_bytes > g_window_peak) g_window_peak = g_live_run_bytes;
}

void note_allocation() noexcept {
  note_live();
  if (++g_window_allocations < kKeptRunsWindow) return;
  g_previous_peak = g_window_peak;
  g_window_peak = g_live_run_bytes;
  g_window_allocations = 0;
}

std::int64_t budget() noexcept {
  const std::int64_t peak = g_window_peak > g_previous_peak ? g_window_peak : g_previous_peak;
  const std::int64_t need = peak - g_live_run_bytes;
  return need < kKeepFloor ? kKeepFloor : need > kKeepCeiling ? kKeepCeiling : need;
}

void insert(std::uintptr_t start, std::uint64_t pages, std::uint64_t dirty, bool kept) noexcept {
  FreeRun* r = &g_nodes[page_of(start)];
  FreeRun** bin = &(kept ? g_kept_bins : g_given_bins)[bin_of(pages)];
  *r = FreeRun{*bin, nullptr, nullptr, nullptr, pages, dirty, kept};
  if (*bin != nullptr) (*bin)->prev = r;
  *bin = r;
  g_end_tags[page_of(start) + pages - 1] = static_cast<std::uint32_t>(pages);
  if (!kept) return;
  r->older = g_newest;
  (g_newest != nullptr ? g_newest->newer : g_oldest) = r;
  g_newest = r;
  g_kept.fetch_add(static_cast<std::int64_t>(pages * kPage), std::memory_order_relaxed);
}

// Moves the kept run r to the old end of the kept list.
void make_oldest(FreeRun* r) noexcept {
  if (r == g_oldest) return;
  (r->older != nullptr ? r->older->newer : g_oldest) = r->newer;
  (r->newer != nullptr ? r->newer->older : g_newest) = r->older;
  r->older = nullptr;
  r->newer = g_oldest;
  g_oldest->older = r;
  g_oldest = r;
}

void remove(FreeRun* r) noexcept {
  FreeRun** bin = &(r->kept ? g_kept_bins : g_given_bins)[bin_of(r->pages)];
  (r->prev != nullptr ? r->prev->next : *bin) = r->next;
  if (r->next != nullptr) r->next->prev = r->prev;
  g_end_tags[static_cast<std::uint64_t>(r - g_nodes) + r->pages - 1] = 0;
  if (r->kept) {
    (r->older != nullptr ? r->older->newer : g_oldest) = r->newer;
    (r->newer != nullptr ? r->newer->older : g_newest) = r->older;
    g_kept.fetch_sub(static_cast<std::int64_t>(r->pages * kPage), std::memory_order_relaxed);
  }
  r->pages = 0;
}

// Adds a free run, merged with free neighbours of the same kind (a merged run's dirty
// bytes stay a prefix: everything up to the right part's dirty end). A given-back run at
// the end of the used range returns to it.
void add_free(std::uintptr_t start, std::uint64_t pages, std::uint64_t dirty, bool kept) noexcept {
  const std::uint64_t first = page_of(start);
  if (first > 0 && g_end_tags[first - 1] != 0) {
    FreeRun* left = &g_nodes[first - g_end_tags[first - 1]];
    if (left->kept == kept) {
      const std::uint64_t left_bytes = left->pages * kPage;
      dirty = dirty > 0 ? left_bytes + dirty : left->dirty;
      start -= left_bytes;
      pages += left->pages;
      remove(left);
    }
  }
  const std::uintptr_t end = start + pages * kPage;
  if (end < bump()) {
    FreeRun* right = &g_nodes[page_of(end)];
    if (right->pages != 0 && right->kept == kept) {
      if (right->dirty > 0) dirty = pages * kPage + right->dirty;
      pages += right->pages;
      remove(right);
    }
  }
  if (!kept && start + pages * kPage == bump()) return set_bump(start);
  insert(start, pages, dirty, kept);
}

FreeRun* best_fit(FreeRun* const* bins, std::uint64_t pages) noexcept {
  for (int b = bin_of(pages); b < kBins; ++b) {
    FreeRun* best = nullptr;
    for (FreeRun* r = bins[b]; r != nullptr; r = r->next) {
      if (r->pages < pages || (best != nullptr && r->pages >= best->pages)) continue;
      best = r;
      if (r->pages == pages) break;
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

// A kept run first (no page faults), then a given-back one, then fresh pages.
Taken take_run(std::uint64_t pages) noexcept {
  FreeRun* r = best_fit(g_kept_bins, pages);
  if (r == nullptr) r = best_fit(g_given_bins, pages);
  const std::uint64_t bytes = pages * kPage;
  if (r != nullptr) {
    const Taken taken{start_of(r), r->dirty < bytes ? r->dirty : bytes};
    const std::uint64_t total = r->pages, dirty = r->dirty;
    const bool kept = r->kept;
    remove(r);
    if (total > pages) insert(taken.run + bytes, total - pages, dirty > bytes ? dirty - bytes : 0, kept);
    return taken;
  }
  // A kept run at the end of the used range is extended (as glibc extends its heap's top
  // chunk): its pages are reused, and only the rest is fresh. Taken anew instead, it would
  // stay resident beside the larger run until the budget sends it back.
  std::uintptr_t run = bump();
  if (run == 0) return {};
  FreeRun* top = run > g_region_base && g_end_tags[page_of(run) - 1] != 0
                     ? &g_nodes[page_of(run) - g_end_tags[page_of(run) - 1]]
                     : nullptr;
  if (top != nullptr) run = start_of(top);
  if (run + bytes > g_region_base + g_region_span) return {};
  const std::uint64_t dirty = top != nullptr ? top->dirty : 0;
  if (top != nullptr) remove(top);
  grow_used_range(run + bytes);
  return {run, dirty};
}

struct Victim {
  std::uintptr_t start;
  std::uint64_t pages;
};

// Takes up to kBatch of the oldest kept runs out of the lists (into limbo: no neighbour
// merges with them) while more than `limit` bytes are kept. Of a run larger than the
// excess, only its first pages go (kept runs merge whatever their size: one merged run
// must not go back whole for a page over the limit); its end, nearer the top, stays.
int take_victims(Victim* out, std::int64_t limit) noexcept {
  int n = 0;
  while (n < kBatch && g_oldest != nullptr) {
    const std::int64_t excess = g_kept.load(std::memory_order_relaxed) - limit;
    if (excess <= 0) break;
    FreeRun* r = g_oldest;
    const std::uintptr_t start = start_of(r);
    const std::uint64_t pages = r->pages, dirty = r->dirty;
    const std::uint64_t over = (static_cast<std::uint64_t>(excess) + kPage - 1) / kPage;
    remove(r);
    if (over < pages) {
      out[n++] = {start, over};
      insert(start + over * kPage, pages - over, dirty > over * kPage ? dirty - over * kPage : 0, true);
      make_oldest(g_newest);  // what is left of the oldest run is still the oldest
    } else {
      out[n++] = {start, pages};
    }
  }
  return n;
}

// With the lock released: the pages go back, then the runs join the given-back lists.
std::int64_t give_back(const Victim* victims, int n) noexcept {
  std::int64_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    madvise(reinterpret_cast<void*>(victims[i].start), victims[i].pages * kPage, MADV_DONTNEED);
    g_madvise_calls.fetch_add(1, std::memory_order_relaxed);
    bytes += static_cast<std::int64_t>(victims[i].pages * kPage);
  }
  SpinGuard guard(g_lock);
  for (int i = 0; i < n; ++i) add_free(victims[i].start, victims[i].pages, 0, false);
  return bytes;
}

// Gives back the oldest kept runs until at most `limit` bytes are kept.
std::int64_t shrink_to(std::int64_t limit) noexcept {
  std::int64_t bytes = 0;
  for (;;) {
    Victim victims[kBatch];
    int n;
    {
      SpinGuard guard(g_lock);
      n = take_victims(victims, limit);
    }
    if (n == 0) return bytes;
    bytes += give_back(victims, n);
  }
}

// Gives back the `n` runs take_victims() took for `limit`, then, when it took a whole
// batch, the oldest kept runs until at most `limit` bytes are kept. Outside the lock.
void give_back_over(const Victim* victims, int n, std::int64_t limit) noexcept {
  if (n == 0) return;
  give_back(victims, n);
  if (n == kBatch) shrink_to(limit);
}

void* map_noreserve(std::size_t bytes) noexcept {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

void report_bad_free(const char* what, const void* p) noexcept {
  char line[128];
  std::size_t n = 0;
  for (const char* s = "liveheap: free(): "; *s != '\0'; ++s) line[n++] = *s;
  for (const char* s = what; *s != '\0' && n < 80; ++s) line[n++] = *s;
  line[n++] = '0';
  line[n++] = 'x';
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  for (int shift = 60; shift >= 0; shift -= 4) line[n++] = "0123456789abcdef"[(v >> shift) & 15];
  line[n++] = '\n';
  [[maybe_unused]] const ssize_t written = write(2, line, n);
  abort();
}

bool reserve_sample_region() noexcept {
  if (g_region_span != 0) return true;
  // Address space only (MAP_NORESERVE, untouched pages cost nothing); try smaller ranges
  // where overcommit is strict. The side tables take 68 B per page of the range.
  for (std::uint64_t span = std::uint64_t{64} << 30; span >= (std::uint64_t{256} << 20); span /= 4) {
    const std::uint64_t pages = span / kPage;
    void* region = map_noreserve(span);
    void* nodes = map_noreserve(pages * sizeof(FreeRun));
    void* tags = map_noreserve(pages * sizeof(std::uint32_t));
    if (region == nullptr || nodes == nullptr || tags == nullptr) {
      if (region != nullptr) munmap(region, span);
      if (nodes != nullptr) munmap(nodes, pages * sizeof(FreeRun));
      if (tags != nullptr) munmap(tags, pages * sizeof(std::uint32_t));
      continue;
    }
    // Side tables are touched a node at a time, sparsely: where transparent huge pages are
    // on for every mapping, each node touched would make 2 MiB resident (4-5 MiB more peak
    // RSS for a Python list of 1.5M elements). The region itself follows the system's
    // setting, as glibc's heap does: its large runs fault as few pages as the program's.
    madvise(nodes, pages * sizeof(FreeRun), MADV_NOHUGEPAGE);
    madvise(tags, pages * sizeof(std::uint32_t), MADV_NOHUGEPAGE);
    g_nodes = static_cast<FreeRun*>(nodes);
    g_end_tags = static_cast<std::uint32_t*>(tags);
    g_region_base = reinterpret_cast<std::uintptr_t>(region);
    set_bump(g_region_base);
    __atomic_store_n(&g_region_span, span, __ATOMIC_RELEASE);
    return true;
  }
  return false;
}

void* region_allocate(std::size_t size, std::size_t alignment, bool zero, std::size_t usable) noexcept {
  if (alignment < 16) alignment = 16;
  if (usable < size) usable = size;
  if (g_region_span == 0 || usable > (g_region_span >> 1) || alignment > (g_region_span >> 4)) return nullptr;
  // The block starts past a 64-byte header, aligned; the header sits at the start of the
  // page just before the block's first byte, so it is found from the block alone. The
  // block is 64 bytes past a page boundary, or on one (may_be_sampled: free() lets it
  // through by its address alone).
  const std::size_t lead = alignment <= kHeaderBytes ? kHeaderBytes
                           : alignment <= kPage      ? kPage
                                                     : alignment + kPage;
  const std::uint64_t pages = (lead + usable + kPage - 1) / kPage;
  ThreadRuns& mine = thread_runs();
  Taken taken;
  Victim victims[kBatch];
  int n = 0;
  std::int64_t limit = 0;
  if (pages == 1 && may_cache(mine)) taken = take_cached(mine);
  if (taken.run == 0) {
    SpinGuard guard(g_lock);
    taken = take_run(pages);
    if (taken.run != 0) g_live_run_bytes += static_cast<std::int64_t>(pages * kPage);
    note_allocation();
    // The live runs grew: what is kept beyond what the region may need again goes back now,
    // not at the next free (kept runs this block did not fit would stay resident beside it,
    // above the recent high).
    limit = budget();
    n = take_victims(victims, limit);
  }
  give_back_over(victims, n, limit);
  if (taken.run == 0) return nullptr;
  const std::uintptr_t block = (taken.run + lead) & ~(alignment - 1);
  if (zero && taken.dirty > 0) {
    // Only what an earlier block may have written: a reused run costs a memset of its
    // dirty part, a fresh or given-back one nothing.
    const std::uint64_t needed = block + usable - taken.run;
    __builtin_memset(reinterpret_cast<void*>(taken.run), 0, taken.dirty < needed ? taken.dirty : needed);
  }
  const std::uintptr_t at = (block - 1) & ~(kPage - 1);
  *reinterpret_cast<SampleHeader*>(at) = SampleHeader{
      kMagic ^ at, taken.run, static_cast<std::uint32_t>(pages), kLive, size, usable, taken.dirty, 0, 0, 0};
  mine.overhead.fetch_add(static_cast<std::int64_t>(pages * kPage - size), std::memory_order_relaxed);
  return reinterpret_cast<void*>(block);
}

SampleHeader* region_header(const void* p) noexcept {
  return reinterpret_cast<SampleHeader*>((reinterpret_cast<std::uintptr_t>(p) - 1) & ~(kPage - 1));
}

SampleHeader* region_live_header(const void* p) noexcept {
  const auto block = reinterpret_cast<std::uintptr_t>(p);
  const auto at = reinterpret_cast<std::uintptr_t>(region_header(p));
  const std::uintptr_t used_end = bump();
  if (at < g_region_base || at >= used_end || block - at < kHeaderBytes)
    report_bad_free("invalid pointer ", p);
  SampleHeader* h = region_header(p);
  if (h->magic != (kMagic ^ at)) report_bad_free("invalid pointer ", p);
  if (h->state == kFreed) report_bad_free("double free of sampled block ", p);
  const std::uintptr_t run_end = h->run + std::uint64_t{h->run_pages} * kPage;
  if (h->state != kLive || h->run % kPage != 0 || h->run < g_region_base || h->run > at ||
      run_end > used_end || h->size > h->usable || block + h->usable > run_end)
    report_bad_free("invalid pointer ", p);
  return h;
}

std::size_t region_usable_size(const void* p) noexcept { return region_header(p)->usable; }

bool region_resize(void* p, std::size_t size, std::size_t usable) noexcept {
  SampleHeader* h = region_live_header(p);
  if (usable < size) usable = size;
  const auto block = reinterpret_cast<std::uintptr_t>(p);
  const std::uint64_t pages = (block - h->run + usable + kPage - 1) / kPage;
  if (pages != h->run_pages) return false;
  // What the program may have written up to the old usable size stays dirty.
  const std::uint64_t written = block + h->usable - h->run;
  if (written > h->dirty) h->dirty = written;
  thread_runs().overhead.fetch_add(static_cast<std::int64_t>(h->size) - static_cast<std::int64_t>(size),
                                   std::memory_order_relaxed);
  h->size = size;
  h->usable = usable;
  return true;
}

bool region_grow(void* p, std::size_t size, std::size_t usable) noexcept {
  SampleHeader* h = region_live_header(p);
  if (usable < size) usable = size;
  const auto block = reinterpret_cast<std::uintptr_t>(p);
  const std::uint64_t pages = (block - h->run + usable + kPage - 1) / kPage;
  if (pages <= h->run_pages) return false;  // not a growth: region_resize's
  const std::uint64_t more = pages - h->run_pages;
  const std::uintptr_t end = h->run + std::uint64_t{h->run_pages} * kPage;
  std::uint64_t taken_dirty = 0;  // of the pages added: a kept run's written prefix
  {
    SpinGuard guard(g_lock);
    if (end == bump()) {  // the last run: the used range grows
      if (end + more * kPage > g_region_base + g_region_span) return false;
      grow_used_range(end + more * kPage);
    } else {  // a free run right after it, if large enough, gives the pages
      FreeRun* next = &g_nodes[page_of(end)];
      if (next->pages < more) return false;
      const std::uint64_t total = next->pages, dirty = next->dirty;
      const bool kept = next->kept;
      remove(next);
      taken_dirty = dirty < more * kPage ? dirty : more * kPage;
      if (total > more)
        insert(end + more * kPage, total - more, dirty > more * kPage ? dirty - more * kPage : 0, kept);
    }
    g_live_run_bytes += static_cast<std::int64_t>(more * kPage);
    note_live();
  }
  // What the program may have written up to the old usable size stays dirty, and so does
  // what a kept run added had written (realloc promises no zeros, but a calloc reusing the
  // run later must clear it); fresh or given-back pages read zero.
  const std::uint64_t written = block + h->usable - h->run;
  if (written > h->dirty) h->dirty = written;
  if (taken_dirty > 0 && end - h->run + taken_dirty > h->dirty) h->dirty = end - h->run + taken_dirty;
  thread_runs().overhead.fetch_add(static_cast<std::int64_t>(more * kPage) -
                                       (static_cast<std::int64_t>(size) - static_cast<std::int64_t>(h->size)),
                                   std::memory_order_relaxed);
  h->run_pages = static_cast<std::uint32_t>(pages);
  h->size = size;
  h->usable = usable;
  return true;
}

void region_release(void* p, bool keep) noexcept {
  SampleHeader* h = region_live_header(p);
  const std::uintptr_t run = h->run;
  const std::uint64_t pages = h->run_pages;
  const std::uint64_t bytes = pages * kPage;
  const std::uint64_t used = reinterpret_cast<std::uintptr_t>(p) + h->usable - run;
  const std::uint64_t dirty = h->dirty > used ? h->dirty : used;
  ThreadRuns& mine = thread_runs();
  mine.overhead.fetch_sub(static_cast<std::int64_t>(bytes - h->size), std::memory_order_relaxed);
  // A racing free of the same block finds it freed here (an exchange: cached runs take no lock).
  if (__atomic_exchange_n(&h->state, kFreed, __ATOMIC_ACQ_REL) != kLive)
    report_bad_free("double free of sampled block ", p);
  if (keep && pages == 1 && may_cache(mine) && mine.cached.load(std::memory_order_relaxed) == 0) {
    h->dirty = dirty;  // read back when the run is taken again
    mine.cached.store(run, std::memory_order_release);
    return;
  }
  Victim victims[kBatch];
  int n = 0;
  std::int64_t limit;
  {
    SpinGuard guard(g_lock);
    g_live_run_bytes -= static_cast<std::int64_t>(bytes);
    limit = budget();
    if (keep && static_cast<std::int64_t>(bytes) <= limit) {
      add_free(run, pages, dirty, true);
      n = take_victims(victims, limit);
    } else {
      victims[n++] = {run, pages};  // out of the lists already: it was live
    }
  }
  give_back_over(victims, n, limit);
}

namespace {

// The runs threads keep join the kept runs (then subject to the budget and trims), but
// `spared`'s.
void drain_thread_caches(const ThreadRuns* spared = nullptr) noexcept {
  for (ThreadRuns& t : g_thread_runs) {
    if (&t == spared) continue;
    const Taken kept = take_cached(t);
    if (kept.run == 0) continue;
    SpinGuard guard(g_lock);
    g_live_run_bytes -= static_cast<std::int64_t>(kPage);
    add_free(kept.run, 1, kept.dirty, true);
  }
}

}  // namespace

std::int64_t region_trim() noexcept {
  drain_thread_caches();
  return shrink_to(0);
}

void region_after_fork_in_child() noexcept { drain_thread_caches(&thread_runs()); }

std::int64_t region_overhead_bytes() noexcept {
  // The side tables: at most 68 B per page of the range ever used.
  const std::uintptr_t high = __atomic_load_n(&g_bump_high, __ATOMIC_RELAXED);
  const std::uint64_t used_pages = high == 0 ? 0 : page_of(high);
  const auto side = static_cast<std::int64_t>(used_pages * (sizeof(FreeRun) + sizeof(std::uint32_t)));
  std::int64_t overhead = 0;
  for (const ThreadRuns& t : g_thread_runs) overhead += t.overhead.load(std::memory_order_relaxed);
  return overhead + region_kept_bytes() + region_thread_kept_bytes() + side;
}

std::int64_t region_kept_bytes() noexcept { return g_kept.load(std::memory_order_relaxed); }

std::int64_t region_thread_kept_bytes() noexcept {
  std::int64_t bytes = 0;
  for (const ThreadRuns& t : g_thread_runs)
    if (t.cached.load(std::memory_order_relaxed) != 0) bytes += kPage;
  return bytes;
}

std::int64_t region_live_bytes() noexcept {
  return __atomic_load_n(&g_live_run_bytes, __ATOMIC_RELAXED) - region_thread_kept_bytes();
}

std::int64_t region_kept_limit() noexcept {
  SpinGuard guard(g_lock);
  return budget();
}
std::uint64_t region_madvise_calls() noexcept { return g_madvise_calls.load(std::memory_order_relaxed); }

void region_lock_for_fork() noexcept { g_lock.lock(); }
void region_unlock_after_fork() noexcept { g_lock.unlock(); }
bool region_locked() noexcept { return g_lock.is_locked(); }

}  // namespace liveheap::engine
