// Where sampled blocks live when glibc does not hold them (hosted_samples.hpp: samples of
// up to a page, alignments above 64, other allocators): one reserved range of address
// space, so that free() knows a block of it by a range compare (no hash lookup, no shared
// cache line), and a header in front of each block carries its stack and weight.
// Freed runs stay resident for reuse up to a budget (a large block freed and allocated
// again costs no page faults) and go back to the kernel past it, on trim and on stop.
// Thread-safety: contains() is lock-free (the range is fixed once reserved); allocate,
// release and trim take the region's SpinLock (sampled allocations are rare: ~1 per
// 512 KiB), and never call madvise while holding it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shared.hpp"

namespace liveheap::engine {

struct SampleHeader {
  std::uint64_t magic;  // kMagic mixed with the header's own address: a copy is no header
  std::uintptr_t run;   // first byte of the page run holding the block
  std::uint32_t run_pages;
  std::uint32_t state;  // live or freed: a second free of the block is caught
  std::uint64_t size;   // requested bytes
  // What malloc_usable_size reports: the usable size the allocator underneath would have
  // given `size` (next_usable.hpp), so that the program sees the same room sampled or not.
  // The run holds that many bytes from the block; the program may write all of them.
  std::uint64_t usable;
  std::uint64_t dirty;  // bytes from `run` that may be non-zero apart from the block's own
  // (A block hosted by glibc, hosted_samples.hpp, has its own magic: `run` is glibc's
  // chunk, `run_pages` 0, `dirty` the bytes asked of glibc.)
  double inverse;  // 1/p of the size the sample was drawn at (sampler.hpp)
  std::uint32_t stack;
  std::uint32_t session;  // the tracing session that counted it (0: not counted)
};

// Freed runs are kept up to the recent high of live runs: the highest over the last
// kKeptRunsWindow to 2 x kKeptRunsWindow allocations of the region. 128: in a matplotlib
// figure loop, whose figures Python's collector frees several at a time, a window of 64
// forgot the collector's last high between collections (the runs went back, then faulted
// in again: ~300 page faults a figure more than bare); one of 32 forgot a figure's canvas
// between figures.
inline constexpr int kKeptRunsWindow = 128;

// Set once by reserve_sample_region(); zero before, so in_sample_region() is false.
// Hidden: every free() reads them, PC-relative rather than through the GOT.
[[gnu::visibility("hidden")]] extern std::uintptr_t g_region_base;
[[gnu::visibility("hidden")]] extern std::uintptr_t g_region_span;

inline bool in_sample_region(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) - g_region_base < g_region_span;
}

// Every sampled block, of the region or hosted by glibc (hosted_samples.hpp), starts 0 or
// 64 bytes past a page boundary: its address has none of these bits. About one in 128 of
// glibc's other heap blocks has none either (and page-aligned ones, and null), which the
// engine hands on to the allocator underneath.
inline constexpr std::uintptr_t kSampleAddressBits = 0xfbf;
inline bool may_be_sampled(const void* p) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & kSampleAddressBits) == 0;
}

// The blocks whose free() the engine must see: those whose address has no bit of
// g_free_mask. Off and sampled, kSampleAddressBits (the blocks that may be samples); exact,
// 0 (every block). One test of the address against a word on free()'s fast path in every
// mode, where a region compare, an address test and a mode check were three. Written by
// the engine's start and stop (set_free_filter, engine.cpp), one word, so a free never
// reads it torn.
[[gnu::visibility("hidden")]] extern std::uintptr_t g_free_mask;

inline bool free_needs_engine(const void* p) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & g_free_mask) == 0;
}
// The same, callable from outside the library (tests).
bool is_sampled_block(const void* p) noexcept;

// Reserves the range (64 GiB of address space, no memory; smaller when refused). Idempotent.
bool reserve_sample_region() noexcept;

// A block of `size` bytes with room for `usable` (its usable size; at least `size`), aligned
// to `alignment` (0 or a power of two), with a filled-in header (stack, weight and session
// zero); nullptr when the region is full (the caller falls back to glibc, unsampled). Its
// bytes read as zero when `zero` (calloc); otherwise they may hold what a freed block left
// there, as glibc's malloc does.
void* region_allocate(std::size_t size, std::size_t alignment, bool zero = true,
                      std::size_t usable = 0) noexcept;
// Makes the live block p one of `size` bytes with room for `usable` where it is, when its
// run holds that and a new run for it would take as many pages; false otherwise (p is
// unchanged: the caller moves the block).
bool region_resize(void* p, std::size_t size, std::size_t usable) noexcept;
// Makes the live block p one of `size` bytes with room for `usable` where it is, its run
// growing into the pages after it: the end of the used range, or a free run there large
// enough (as glibc's realloc extends a chunk into the top or a free neighbour). False when
// it cannot (p is unchanged: the caller moves the block).
bool region_grow(void* p, std::size_t size, std::size_t usable) noexcept;
SampleHeader* region_header(const void* p) noexcept;
// The header of a live block of the region, or a one-line message on stderr and abort()
// when p is not one: its header is out of the region or not a header (an invalid pointer),
// or its block was freed already (a double free), as glibc's free does.
SampleHeader* region_live_header(const void* p) noexcept;
// "liveheap: free(): <what>0x<p>" on stderr, then abort(), as glibc reports a bad free.
[[noreturn]] void report_bad_free(const char* what, const void* p) noexcept;
// What malloc_usable_size reports for the live block p: its header's usable size.
std::size_t region_usable_size(const void* p) noexcept;
// Returns the block's run to the free lists (checked as region_live_header does). `keep`:
// its pages stay resident for reuse within the budget; otherwise they go back now.
void region_release(void* p, bool keep = true) noexcept;
// Gives every kept free run's pages back to the kernel; the bytes given back.
LIVEHEAP_SHARED std::int64_t region_trim() noexcept;
// Bytes held by the region now beyond the blocks' own: headers and rounding of live runs,
// kept free runs, the first page of each given-back free run (its list node).
std::int64_t region_overhead_bytes() noexcept;
// Bytes of freed runs kept resident now, and madvise calls made since start-up.
LIVEHEAP_SHARED std::int64_t region_kept_bytes() noexcept;
// Bytes of the one-page runs threads keep for their next sample (one a thread, for the first
// 64 threads that trace): apart from kept_bytes and its limit, given back by trim and stop.
LIVEHEAP_SHARED std::int64_t region_thread_kept_bytes() noexcept;
// Bytes of the runs of live samples (their pages, headers and rounding included), and the
// most kept runs may hold now (what the region would take again to be back at its recent
// peak, 2..64 MiB).
LIVEHEAP_SHARED std::int64_t region_live_bytes() noexcept;
LIVEHEAP_SHARED std::int64_t region_kept_limit() noexcept;
LIVEHEAP_SHARED std::uint64_t region_madvise_calls() noexcept;

void region_lock_for_fork() noexcept;
void region_unlock_after_fork() noexcept;
// In a child, after the unlock: the runs kept by threads the child does not have (all but
// the forking thread's) join the kept runs, rather than staying unused until a trim.
void region_after_fork_in_child() noexcept;
bool region_locked() noexcept;

}  // namespace liveheap::engine
