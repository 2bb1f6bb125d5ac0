// Where sampled blocks live: one reserved range of address space, so that free() knows a
// sampled block by a single range compare (no hash lookup, no shared cache line), and a
// header in front of each block carries its stack and weight.
// Thread-safety: contains() is lock-free (the range is fixed once reserved); allocate and
// release take the region's SpinLock (sampled allocations are rare: ~1 per 512 KiB).
#pragma once

#include <cstddef>
#include <cstdint>

namespace liveheap::engine {

struct SampleHeader {
  std::uint64_t magic;
  std::uintptr_t run;       // first byte of the page run holding the block
  std::uint64_t run_pages;
  std::uint64_t size;       // requested bytes
  std::int64_t weighted_bytes;
  std::int64_t weighted_count;  // in 1/kCountUnit blocks
  std::uint32_t stack;
  std::uint32_t session;    // the tracing session that counted it (0: not counted)
};

// Set once by reserve_sample_region(); zero before, so in_sample_region() is false.
// Hidden: every free() reads them, PC-relative rather than through the GOT.
[[gnu::visibility("hidden")]] extern std::uintptr_t g_region_base;
[[gnu::visibility("hidden")]] extern std::uintptr_t g_region_span;

inline bool in_sample_region(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) - g_region_base < g_region_span;
}
// The same, callable from outside the library (tests).
bool is_sampled_block(const void* p) noexcept;

// Reserves the range (64 GiB of address space, no memory; smaller when refused). Idempotent.
bool reserve_sample_region() noexcept;

// A block of `size` bytes aligned to `alignment` (0 or a power of two) with a zeroed
// header; nullptr when the region is full (the caller falls back to glibc, unsampled).
void* region_allocate(std::size_t size, std::size_t alignment) noexcept;
SampleHeader* region_header(const void* p) noexcept;
// Bytes from p to the end of its run: what malloc_usable_size reports.
std::size_t region_usable_size(const void* p) noexcept;
// Returns the block's pages to the kernel and its run to the free lists.
void region_release(void* p) noexcept;
// Pages held by the region now (live runs), for the tracker's own-memory figure.
std::int64_t region_overhead_bytes() noexcept;

void region_lock_for_fork() noexcept;
void region_unlock_after_fork() noexcept;

}  // namespace liveheap::engine
