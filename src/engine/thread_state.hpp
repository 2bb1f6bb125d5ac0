// Per-thread engine state: the reentrancy guard, the request's route, the ignore depth, the
// sampling countdown.
// Initial-exec TLS: a hook reads it on every call, and __tls_get_addr would cost 1-2 ns
// and may itself allocate on first use.
#pragma once

#include <cstdint>

namespace liveheap::engine {

class YoungTable;

struct ThreadState {
  bool in_hook = false;                 // set while the engine records; nested calls pass through
  std::uint16_t route = 0;              // the request being handled (request_route.hpp), 0: none
  std::uint32_t ignore_depth = 0;       // > 0 inside IgnoreScope: allocations are the tracker's own
  std::int64_t bytes_until_sample = 0;  // sampled mode: countdown to the next sample
  std::uint64_t rng = 0;                // sampled mode: xorshift state, 0 = not seeded yet
  std::uint64_t sampler_epoch = 0;      // sampled mode: reset when tracking restarts
  std::uint32_t slot = 0;               // this thread's counter slot + 1 (0: none yet)
  std::int64_t growth_since_peak_check = 0;
  YoungTable* young = nullptr;  // exact mode: the thread's young blocks (young_table.hpp), if it has a table
  // When it last asked for one: young_table_releases() + 1 then (0: never; an exiting
  // thread's kNoMoreYoung). A thread without one asks again after a table is released.
  std::uint32_t young_asked = 0;
  bool ask_repeated_walks = false;  // the thread keeps walks it repeats (stack_capture.hpp)
};

[[gnu::tls_model("initial-exec"),
  gnu::visibility("hidden")]] extern constinit thread_local ThreadState t_thread;

// t_thread's address, computed once: a path that uses it many times takes it here and passes
// it on (`self`). Each use of t_thread itself computes it anew (the thread pointer plus an
// offset read from the GOT, which the compiler reloads after any store it cannot rule out):
// an exact allocation did so six times. Opaque to the compiler, so it stays in a register.
[[gnu::always_inline]] inline ThreadState& this_thread() noexcept {
  ThreadState* self = &t_thread;
  asm("" : "+r"(self));
  return *self;
}

// Marks the current thread as inside the engine for its lifetime; the proof a caller holds
// it is passed on as a parameter (heaptrack's RecursionGuard).
// `self`: t_thread, where the caller has its address already.
class HookGuard {
 public:
  explicit HookGuard(ThreadState& self = t_thread) noexcept : self_(self), was_(self.in_hook) {
    self.in_hook = true;
  }
  ~HookGuard() { self_.in_hook = was_; }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
  bool reentered() const noexcept { return was_; }

 private:
  ThreadState& self_;
  bool was_;
};

}  // namespace liveheap::engine
