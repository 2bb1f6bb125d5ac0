// A test-and-test-and-set lock that never allocates and is safe to reset after fork.
// Used for the engine's short critical sections (a hash probe, an insert). One byte, not a
// line of its own: a lock that guards a few fields shares their line (a live-table shard's
// lock and its array, one line per insert or remove instead of two); a lock alone is
// declared alignas(64).
#pragma once

#include <atomic>
#include <sched.h>

namespace liveheap::engine {

// One turn of a wait for another thread (`spins`: turns so far): a pause, then, past 64
// turns, a yield (on 2 cores a preempted thread may be the one to wait for).
inline void spin_turn(int spins) noexcept {
  if (spins > 64) sched_yield();
  else __builtin_ia32_pause();
}

class SpinLock {
 public:
  // The wait out of line: the hooks inline the lock, and the loop's registers and call
  // would be saved and restored on every allocation and free that never waits.
  [[gnu::always_inline]] void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]]
      return;
    wait_and_lock();
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  // A fork from a signal handler asks, in a single-threaded process, whether the one thread
  // holds it (engine.cpp); no other use.
  bool is_locked() const noexcept { return locked_.load(std::memory_order_relaxed); }

 private:
  [[gnu::noinline, gnu::cold]] void wait_and_lock() noexcept {
    for (;;) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) spin_turn(spins);
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
    }
  }

  std::atomic<bool> locked_{false};
};

class SpinGuard {
 public:
  explicit SpinGuard(SpinLock& lock) noexcept : lock_(lock) { lock_.lock(); }
  ~SpinGuard() { lock_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace liveheap::engine
