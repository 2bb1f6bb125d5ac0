// Sampled blocks in glibc's heap: a chunk of glibc's holds the header and the block, the
// block 64 bytes past a page boundary.
#include "hosted_samples.hpp"

#include <atomic>

#include "next_allocator.hpp"

namespace liveheap::engine {
namespace {

constexpr std::uint64_t kHostedMagic = 0x686c646574736f68ull;  // "hostedlh": not the region's
constexpr std::uint32_t kLive = 0x4556494c;                    // "LIVE"
constexpr std::uint32_t kFreed = 0x45455246;                   // "FREE"
// Every hosted block comes from glibc's malloc with a page of slack to place it: freed, it
// leaves a hole the next sample of its size fits again, and glibc's dynamic mmap threshold
// follows it as it follows the program's own blocks. memalign, which gives the slack back,
// splits a larger chunk and leaves its lead in glibc's bins: with the samples under 64 KiB
// from memalign, one matplotlib figure loop in twelve peaked 2-4.5 MiB higher than the others
// (none in 120 with malloc); with the large ones too, each figure's canvas fitted no hole its
// predecessor left and went to the heap's top (+15 MiB a run). The header and slack are
// 4160 bytes a live sample (/stats: sampled.hosted_bytes).
// A calloc'd block at least this large comes from glibc's calloc, which leaves fresh pages
// untouched; a smaller one is cleared here, its slack left alone (glibc's calloc would clear
// the whole chunk).
constexpr std::size_t kCallocFrom = 64 * 1024;
// Far beyond any heap: the requests below cannot overflow.
constexpr std::size_t kLargest = std::size_t{1} << 46;

#ifdef LIVEHEAP_WITHOUT_HOOKS
// A sanitized tree: the process's free() is the sanitizer's, which would get hosted blocks
// (and TSan, which sees no hand-over inside glibc, would read their reuse as races).
std::atomic<bool> g_hosting{false};
#else
std::atomic<bool> g_hosting{true};
#endif
std::atomic<std::int64_t> g_bytes{0};     // asked of glibc for live hosted blocks
std::atomic<std::int64_t> g_overhead{0};  // of which not the blocks' own bytes

SampleHeader* header_at(std::uintptr_t block) noexcept {
  return reinterpret_cast<SampleHeader*>(block - kHostedOffset);
}

// What a hosted block with room for `usable` asks of glibc: a page of slack before the
// boundary, the header, the block.
std::uint64_t chunk_request(std::uint64_t usable) noexcept { return kHostedGrain + kHostedOffset + usable; }

std::uintptr_t next_boundary(std::uintptr_t chunk) noexcept {
  return (chunk + kHostedGrain - 1) & ~(kHostedGrain - 1);
}

// A hosted header: `run` is glibc's chunk, `run_pages` 0, `dirty` the bytes asked of glibc.
void place(std::uintptr_t block, std::uintptr_t chunk, std::uint64_t request, std::uint64_t size,
           std::uint64_t usable) noexcept {
  *header_at(block) =
      SampleHeader{kHostedMagic ^ (block - kHostedOffset), chunk, 0, kLive, size, usable, request, 0, 0, 0};
  g_bytes.fetch_add(static_cast<std::int64_t>(request), std::memory_order_relaxed);
  g_overhead.fetch_add(static_cast<std::int64_t>(request - size), std::memory_order_relaxed);
}

// The chunk of a header no longer live is no longer counted.
void forget(const SampleHeader& h) noexcept {
  g_bytes.fetch_sub(static_cast<std::int64_t>(h.dirty), std::memory_order_relaxed);
  g_overhead.fetch_sub(static_cast<std::int64_t>(h.dirty - h.size), std::memory_order_relaxed);
}

}  // namespace

SampleHeader* hosted_header(const void* p) noexcept {
  const auto block = reinterpret_cast<std::uintptr_t>(p);
  if (!at_hosted_offset(p)) return nullptr;
  SampleHeader* h = header_at(block);
  if (h->magic != (kHostedMagic ^ (block - kHostedOffset)) || h->state != kLive) return nullptr;
  return h;
}

bool is_sampled_block(const void* p) noexcept { return is_sample(p); }

bool hosts(std::size_t usable, std::size_t alignment) noexcept {
  return usable >= kHostedFrom && alignment <= kHostedOffset && g_hosting.load(std::memory_order_relaxed) &&
         next_is_glibc();
}

void set_hosting(bool on) noexcept { g_hosting.store(on, std::memory_order_relaxed); }

void* hosted_allocate(std::size_t size, std::size_t usable, bool zero) noexcept {
  if (usable < size) usable = size;
  if (usable > kLargest) return nullptr;
  const std::uint64_t request = chunk_request(usable);
  const bool glibc_clears = zero && usable >= kCallocFrom;
  const auto chunk =
      reinterpret_cast<std::uintptr_t>(glibc_clears ? g_next.calloc(1, request) : g_next.malloc(request));
  if (chunk == 0) return nullptr;
  const std::uintptr_t block = next_boundary(chunk) + kHostedOffset;
  if (zero && !glibc_clears) __builtin_memset(reinterpret_cast<void*>(block), 0, usable);
  place(block, chunk, request, size, usable);
  return reinterpret_cast<void*>(block);
}

namespace {

// glibc's realloc of the chunk of the live hosted block at `h` (a copy of whose header is
// `old`) to `request` bytes: the new chunk, or 0 when glibc has no memory (the block is
// unchanged). The header is wiped first: where realloc moves the chunk, the old place is
// glibc's free memory, and a block glibc hands out there must not read as this one.
std::uintptr_t realloc_chunk(SampleHeader* h, const SampleHeader& old, std::uint64_t request) noexcept {
  h->magic = 0;
  const auto chunk =
      reinterpret_cast<std::uintptr_t>(g_next.realloc(reinterpret_cast<void*>(old.run), request));
  if (chunk == 0) h->magic = old.magic;
  return chunk;
}

// Moves the live hosted block p (its first `keep` bytes) into a chunk of `request` bytes
// through glibc's realloc, then to 64 bytes past the chunk's first page boundary (the
// request holds the slack): its header says `size` and `usable` and keeps its draw. nullptr
// when glibc has no memory (p is unchanged).
void* rechunk(void* p, std::size_t size, std::size_t usable, std::uint64_t request,
              std::size_t keep) noexcept {
  const auto old_block = reinterpret_cast<std::uintptr_t>(p);
  SampleHeader* h = header_at(old_block);
  const SampleHeader old = *h;
  const std::uintptr_t lead = old_block - old.run;
  const std::uintptr_t chunk = realloc_chunk(h, old, request);
  if (chunk == 0) return nullptr;
  const std::uintptr_t block = next_boundary(chunk) + kHostedOffset;
  if (block != chunk + lead)
    __builtin_memmove(reinterpret_cast<void*>(block), reinterpret_cast<void*>(chunk + lead), keep);
  forget(old);
  place(block, chunk, request, size, usable);
  SampleHeader* moved = header_at(block);
  moved->inverse = old.inverse;
  moved->stack = old.stack;
  moved->session = old.session;
  return reinterpret_cast<void*>(block);
}

}  // namespace

void* hosted_resize(void* p, std::size_t size, std::size_t usable) noexcept {
  SampleHeader* h = header_at(reinterpret_cast<std::uintptr_t>(p));
  const std::uint64_t room = h->run + h->dirty - reinterpret_cast<std::uintptr_t>(p);
  if (usable > room) usable = room;
  if (usable < size) usable = size;
  // A page or more smaller: glibc's realloc shrinks the chunk (in place, its tail freed), as
  // it shrinks the program's own blocks.
  const std::uint64_t request = chunk_request(usable);
  if (h->dirty >= request + kHostedGrain)
    if (void* q = rechunk(p, size, usable, request, usable)) return q;
  g_overhead.fetch_add(static_cast<std::int64_t>(h->size) - static_cast<std::int64_t>(size),
                       std::memory_order_relaxed);
  h->size = size;
  h->usable = usable;
  return p;
}

void* hosted_grow(void* p, std::size_t size, std::size_t usable) noexcept {
  if (usable < size) usable = size;
  if (usable > kLargest) return nullptr;
  return rechunk(p, size, usable, chunk_request(usable),
                 header_at(reinterpret_cast<std::uintptr_t>(p))->usable);
}

void* hosted_unsample(void* p, std::size_t size) noexcept {
  if (size > kLargest) return nullptr;
  const auto block = reinterpret_cast<std::uintptr_t>(p);
  SampleHeader* h = header_at(block);
  const SampleHeader old = *h;
  const std::uintptr_t lead = block - old.run;
  const std::uintptr_t chunk = realloc_chunk(h, old, lead + size);
  if (chunk == 0) return nullptr;
  __builtin_memmove(reinterpret_cast<void*>(chunk), reinterpret_cast<void*>(chunk + lead),
                    old.usable < size ? old.usable : size);
  forget(old);
  return reinterpret_cast<void*>(chunk);
}

void hosted_release(void* p) noexcept {
  SampleHeader* h = header_at(reinterpret_cast<std::uintptr_t>(p));
  // A racing free of the same block finds it freed here.
  if (__atomic_exchange_n(&h->state, kFreed, __ATOMIC_ACQ_REL) != kLive)
    report_bad_free("double free of sampled block ", p);
  const SampleHeader old = *h;
  h->magic = 0;
  // Where glibc reads a chunk's size: a second free of p, not a header any more, reaches
  // glibc, which finds size 0 and aborts ("free(): invalid size").
  reinterpret_cast<std::uint64_t*>(p)[-1] = 0;
  forget(old);
  g_next.free(reinterpret_cast<void*>(old.run));
}

std::int64_t hosted_bytes() noexcept { return g_bytes.load(std::memory_order_relaxed); }
std::int64_t hosted_overhead_bytes() noexcept { return g_overhead.load(std::memory_order_relaxed); }

}  // namespace liveheap::engine
