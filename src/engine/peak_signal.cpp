// The peak recorder's wake-up call (see peak_signal.hpp): a futex word and a pending flag.
#include "peak_signal.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace liveheap::engine::peak_signal {
namespace {

std::atomic<std::uint32_t> g_sent{0};  // the futex word the recorder sleeps on
std::atomic<bool> g_pending{false};    // sent, not taken yet

std::uint32_t* word() noexcept { return reinterpret_cast<std::uint32_t*>(&g_sent); }

}  // namespace

void signal() noexcept {
  // The caller's counting (relaxed stores) before the flag is read, as take() stores the
  // flag before the recorder reads the counts: one of the two sees the other.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_pending.load(std::memory_order_relaxed) || g_pending.exchange(true, std::memory_order_acq_rel))
    return;
  g_sent.fetch_add(1, std::memory_order_release);
  const int saved = errno;  // called from malloc, which leaves errno alone when it succeeds
  ::syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  errno = saved;
}

void take() noexcept {
  g_pending.store(false, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::uint32_t sent() noexcept { return g_sent.load(std::memory_order_acquire); }

std::uint32_t wait(std::uint32_t seen) noexcept {
  for (;;) {
    const std::uint32_t now = g_sent.load(std::memory_order_acquire);
    if (now != seen) return now;
    // Returns at once if the word moved since the load (EAGAIN); EINTR and spurious wakes
    // come back here.
    ::syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
  }
}

}  // namespace liveheap::engine::peak_signal
