// mmap-backed memory for the engine's tables, counted as tracker memory.
#include "pages.hpp"

#include <atomic>
#include <sys/mman.h>
#include <unistd.h>

namespace liveheap::engine {
namespace {

std::atomic<std::int64_t> g_mapped{0};

std::size_t round_to_pages(std::size_t bytes) noexcept {
  const std::size_t page = 4096;
  return (bytes + page - 1) & ~(page - 1);
}

}  // namespace

void* map_pages(std::size_t bytes) noexcept {
  bytes = round_to_pages(bytes);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  g_mapped.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  return p;
}

void unmap_pages(void* p, std::size_t bytes) noexcept {
  if (p == nullptr || bytes == 0) return;
  bytes = round_to_pages(bytes);
  munmap(p, bytes);
  g_mapped.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
}

void release_pages(void* p, std::size_t bytes) noexcept {
  if (bytes == 0 || madvise(p, bytes, MADV_DONTNEED) != 0) return;
  g_mapped.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
}

std::int64_t mapped_bytes() noexcept { return g_mapped.load(std::memory_order_relaxed); }

}  // namespace liveheap::engine
