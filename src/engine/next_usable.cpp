// The next allocator's usable size of a request, asked of it once per size and cached.
#include "next_usable.hpp"

#include <atomic>
#include <cstdint>

#include "next_allocator.hpp"

namespace liveheap::engine {
namespace {

// Direct-mapped by size: one word an entry, (size << kSlackBits) | (usable - size), so a
// reader never pairs one size with another's answer. 0: empty. A size that collides with
// another is probed again (sampled allocations are rare: ~1 per sample interval).
constexpr int kSlackBits = 24;
constexpr std::size_t kEntries = 1024;
std::atomic<std::uint64_t> g_cache[kEntries];

std::size_t slot_of(std::size_t size) noexcept {
  return static_cast<std::size_t>((size * 0x9e3779b97f4a7c15ull) >> 54) & (kEntries - 1);
}

}  // namespace

std::size_t next_usable_size(std::size_t size) noexcept {
  if (size == 0 || size >= kProbeLimit) return size;
  std::atomic<std::uint64_t>& entry = g_cache[slot_of(size)];
  const std::uint64_t cached = entry.load(std::memory_order_relaxed);
  if (cached >> kSlackBits == size) return size + (cached & ((1u << kSlackBits) - 1));
  // The next allocator's own malloc and free: the block never reaches the hooks.
  if (g_next.malloc_usable_size == nullptr) return size;
  void* p = g_next.malloc(size);
  if (p == nullptr) return size;
  std::size_t usable = g_next.malloc_usable_size(p);
  g_next.free(p);
  if (usable < size) usable = size;  // not an allocator's answer: the request alone
  if (usable - size < (std::size_t{1} << kSlackBits))
    entry.store((std::uint64_t{size} << kSlackBits) | (usable - size), std::memory_order_relaxed);
  return usable;
}

}  // namespace liveheap::engine
