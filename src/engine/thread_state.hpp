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
  bool young_asked = false;     // whether it asked for one
};

[[gnu::tls_model("initial-exec"),
  gnu::visibility("hidden")]] extern constinit thread_local ThreadState t_thread;

// Marks the current thread as inside the engine for its lifetime; the proof a caller holds
// it is passed on as a parameter (heaptrack's RecursionGuard).
class HookGuard {
 public:
  HookGuard() noexcept : was_(t_thread.in_hook) { t_thread.in_hook = true; }
  ~HookGuard() { t_thread.in_hook = was_; }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
  bool reentered() const noexcept { return was_; }

 private:
  bool was_;
};

}  // namespace liveheap::engine
