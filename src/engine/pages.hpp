// Memory for the engine's own tables, straight from mmap: the engine runs inside malloc
// and must never call it. Every byte mapped here is counted as the tracker's own memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace liveheap::engine {

// Zeroed, page-rounded memory; nullptr on failure.
void* map_pages(std::size_t bytes) noexcept;
// What map_pages(bytes) returned; nothing for nullptr or 0 bytes (what was never mapped).
void unmap_pages(void* p, std::size_t bytes) noexcept;
// Gives the pages of [p, p + bytes) (page-aligned, within a map_pages() mapping) back to
// the kernel: they stay mapped and read zero again, so a lock-free reader may still read
// them. They count no more; the mapping must not be unmapped after.
void release_pages(void* p, std::size_t bytes) noexcept;
// Bytes currently mapped through map_pages.
std::int64_t mapped_bytes() noexcept;

}  // namespace liveheap::engine
