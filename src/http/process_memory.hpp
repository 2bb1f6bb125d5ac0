// The process's memory as the kernel and glibc see it: RSS beside the traced heap shows
// memory the allocator keeps but no longer uses. Thread-safety: functions of the process.
#pragma once

#include <cstdint>

#include "liveheap/allocator.hpp"
#include "liveheap/export.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

struct ProcessMemory {
  std::int64_t rss = 0;       // bytes resident now (VmRSS); -1 when unknown
  std::int64_t peak_rss = 0;  // highest resident (VmHWM); -1 when unknown
};
ProcessMemory read_process_memory() noexcept;

// glibc's mallinfo2(): arena = bytes from sbrk, hblkhd = from mmap, uordblks = in use,
// fordblks = free in the arenas, keepcost = releasable from the top of the main arena.
struct MallocInfo {
  std::uint64_t arena = 0;
  std::uint64_t hblkhd = 0;
  std::uint64_t uordblks = 0;
  std::uint64_t fordblks = 0;
  std::uint64_t keepcost = 0;
};
// glibc's mallinfo2() now. It walks every free chunk under the arenas' locks: where glibc
// serves malloc, take malloc_info_of(read_allocator()) instead, which is rate-limited.
MallocInfo read_malloc_info() noexcept;
// The same figures from glibc's AllocatorInfo (its names: arena, hblkhd, ...).
MallocInfo malloc_info_of(const AllocatorInfo& glibc) noexcept;

}  // namespace http
LIVEHEAP_NAMESPACE_END
