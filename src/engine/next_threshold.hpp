// What the allocator underneath would have learned from the large blocks sampled mode took
// from it. glibc raises its mmap threshold to the size of an mmapped chunk it frees (and its
// trim threshold to twice that, up to 32 MiB): after a program's first large block, blocks of
// that size come from its heap and freed memory stays at its top, instead of being mapped,
// faulted in and unmapped again each time. A sampled block never reaches glibc (nearly every
// block above the sample interval is sampled), so under liveheap glibc would stay at its
// first 128 KiB threshold for the whole run: every unsampled block above it mapped and
// faulted afresh, its heap trimmed to 128 KiB (a matplotlib figure loop faulted ~250 pages a
// figure more than bare).
// Thread-safety: any thread, outside every lock of liveheap's; lock-free.
#pragma once

#include <cstddef>

namespace liveheap::engine {

// A sampled block of `usable` bytes was freed: when the allocator underneath is glibc and
// the size is larger than any shown before (and within glibc's dynamic range), the same size
// is allocated and freed through glibc once, untouched (an mmap and a munmap, no page), so
// that glibc's thresholds move as they would have had the block been its own.
void show_free_to_next(std::size_t usable) noexcept;

}  // namespace liveheap::engine
