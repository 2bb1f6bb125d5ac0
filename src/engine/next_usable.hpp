// The usable size the next allocator gives a request: what malloc_usable_size of a sampled
// block reports, so that a program sees the same room whether its block was sampled or not.
// Thread-safety: any thread; lock-free (a cache of single-word entries).
#pragma once

#include <cstddef>

namespace liveheap::engine {

// What malloc_usable_size(malloc(size)) would return under the next allocator, at least
// `size`. Asked of the allocator itself: for a size not seen yet, a malloc, a
// malloc_usable_size and a free of the next allocator (then cached by size). Sizes of
// kProbeLimit and more are not probed: the answer is `size`.
std::size_t next_usable_size(std::size_t size) noexcept;

// Probing a large size could cost system calls (mmap, munmap) and would move glibc's
// dynamic mmap threshold (raised by the free of an mmapped chunk); below this every
// allocator here serves from its heap and the probe is a small malloc and free.
inline constexpr std::size_t kProbeLimit = 64 * 1024;

}  // namespace liveheap::engine
