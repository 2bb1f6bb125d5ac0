// A test-and-test-and-set lock that never allocates and is safe to reset after fork. Each
// thread counts the engine locks it holds: a fork from a signal handler that interrupted
// the engine finds its own thread holding one, and must not wait for it (engine.cpp).
// Used for the engine's short critical sections (a hash probe, an insert). One byte, not a
// line of its own: a lock that guards a few fields shares their line (a live-table shard's
// lock and its array, one line per insert or remove instead of two); a lock alone is
// declared alignas(64).
#pragma once

#include <atomic>
#include <sched.h>

#include "thread_state.hpp"

namespace liveheap::engine {

class SpinLock {
 public:
  // The count covers the lock at every instruction a signal could interrupt (it may
  // overcount for an instant, never undercount): raised before the lock is taken, lowered
  // after it is given back; the signal fences keep the compiler to that order.
  void lock() noexcept {
    ++t_thread.locks_held;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins > 64) sched_yield();  // 2 cores: let a preempted holder run
        else __builtin_ia32_pause();
      }
    }
  }
  bool try_lock() noexcept {
    ++t_thread.locks_held;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (!locked_.load(std::memory_order_relaxed) &&
        !locked_.exchange(true, std::memory_order_acquire))
      return true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    --t_thread.locks_held;
    return false;
  }
  void unlock() noexcept {
    locked_.store(false, std::memory_order_release);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    --t_thread.locks_held;
  }

 private:
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
