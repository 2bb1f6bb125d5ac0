// glibc's dynamic mmap threshold, moved by sampled blocks as by its own.
#include "next_threshold.hpp"

#include <atomic>

#include "next_allocator.hpp"

namespace liveheap::engine {
namespace {

// glibc's defaults: the threshold starts at 128 KiB and follows freed mmapped chunks up to
// DEFAULT_MMAP_THRESHOLD_MAX (32 MiB on 64-bit); below the first, nothing is mapped.
constexpr std::size_t kFirstThreshold = 128 * 1024;
constexpr std::size_t kMaxThreshold = std::size_t{32} << 20;

std::atomic<std::size_t> g_shown{0};  // the largest size shown to glibc yet

}  // namespace

void show_free_to_next(std::size_t usable) noexcept {
  if (usable <= kFirstThreshold || usable > kMaxThreshold) return;
  std::size_t shown = g_shown.load(std::memory_order_relaxed);
  do {
    if (usable <= shown) return;
  } while (!g_shown.compare_exchange_weak(shown, usable, std::memory_order_relaxed));
  if (!next_is_glibc()) return;
  // glibc's own malloc and free: the block never reaches the hooks. Above the threshold and
  // with no room at the heap's top it is mapped, and its free raises the threshold to it;
  // with room at the top, it is carved there and goes back there, as the program's would.
  g_next.free(g_next.malloc(usable));
}

}  // namespace liveheap::engine
