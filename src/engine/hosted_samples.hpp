// Sampled blocks the allocator underneath holds (glibc's only): the sample's header and
// the block in one chunk of glibc's, the block 64 bytes past a page boundary, so that
// free() knows a candidate by its address alone and the header (checked by a magic mixed
// with its address) says whether it is one. Freed, the chunk goes back to glibc at once:
// one heap for the program's blocks and its samples, as without liveheap. The sample
// region held them apart, and each of the two pools kept its own free memory (a matplotlib
// figure loop peaked 2.3-5.5 MiB above bare; sampled-large-blocks.md).
// Thread-safety: lock-free; the header of a live block is written by the thread that
// allocates it and read by the one that frees it (the allocator's hand-over orders them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sample_region.hpp"

namespace liveheap::engine {

inline constexpr std::uintptr_t kHostedGrain = 4096;  // a page: the slack before a block is less
inline constexpr std::uintptr_t kHostedOffset = sizeof(SampleHeader);  // 64: the header
// Smaller samples (a page of the region, with the header) stay in the region: a
// memalign for each made glibc's heap split chunks under the program's small blocks (two
// threads' allocation loop: +0.8 ns a pair), and they are what a thread keeps for its next
// sample there, without a lock.
inline constexpr std::size_t kHostedFrom = kHostedGrain - kHostedOffset + 1;

// free() lets hosted blocks through by their address (may_be_sampled, sample_region.hpp).
static_assert(kSampleAddressBits == kHostedGrain - 1 - kHostedOffset);

// True where a hosted block can be: 64 bytes past a page boundary (one in 256 of a heap's
// places).
inline bool at_hosted_offset(const void* p) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & (kHostedGrain - 1)) == kHostedOffset;
}
// The header of the live hosted block p, or nullptr when p is none. It reads the 64 bytes
// before p only for a block 64 bytes past a boundary: they are in the block's own page,
// readable whatever allocator made it. A freed block's header is wiped, so its second free
// reaches glibc, which aborts with its own message.
SampleHeader* hosted_header(const void* p) noexcept;
inline bool is_hosted(const void* p) noexcept { return at_hosted_offset(p) && hosted_header(p) != nullptr; }
// A live sampled block, hosted or of the sample region.
inline bool is_sample(const void* p) noexcept { return in_sample_region(p) || is_hosted(p); }

// Whether a sample of `alignment` (0: malloc's) is hosted: the allocator underneath is glibc
// (the others keep the sample region, as before), the alignment at most the header's 64,
// and hosting is on (set_hosting, for tests of the region).
bool hosts(std::size_t usable, std::size_t alignment) noexcept;
void set_hosting(bool on) noexcept;

// A hosted block of `size` bytes with room for `usable`, its header filled in (stack,
// weight and session zero), or nullptr when glibc has no memory. Its bytes read as zero
// when `zero` (calloc): a large one from glibc's calloc, which leaves fresh pages
// untouched, a small one cleared here.
void* hosted_allocate(std::size_t size, std::size_t usable, bool zero) noexcept;
// The live hosted block p is now one of `size` bytes with room for `usable` (no more than
// its usable size): in its chunk, which glibc's realloc shrinks when it is a page or more
// larger than it needs. The block (moved only if glibc moved the chunk), its draw kept.
void* hosted_resize(void* p, std::size_t size, std::size_t usable) noexcept;
// Grows the live hosted block p to `size` bytes with room for `usable` through glibc's
// realloc (in place when its heap allows, else moved, large chunks with mremap: no second
// copy resident), the block then moved to 64 bytes past the next page boundary of the new chunk. The
// block, its header and content kept (size, usable and the chunk updated); nullptr when
// glibc has no memory (p is unchanged).
void* hosted_grow(void* p, std::size_t size, std::size_t usable) noexcept;
// Makes the live hosted block p an ordinary block of glibc's holding `size` bytes, its
// content kept, through glibc's realloc as hosted_grow: a growth the draw did not sample.
// The new block, or nullptr (p unchanged).
void* hosted_unsample(void* p, std::size_t size) noexcept;
// Wipes the header and frees the chunk to glibc.
void hosted_release(void* p) noexcept;

// Bytes glibc holds for hosted samples now (their chunks' requests: headers and the slack
// before a page boundary included), and of that the part that is not the blocks' own.
LIVEHEAP_SHARED std::int64_t hosted_bytes() noexcept;
std::int64_t hosted_overhead_bytes() noexcept;

}  // namespace liveheap::engine
