// What a thread's stack walks keep between them: its previous walk and stack-id memo
// (walk_cache.hpp, 11.2 KiB), the whole walks it repeats and their spares
// (repeated_walks.hpp, 26.8 KiB, most of it touched only when used) and its recent frame
// rules (recent_rules.hpp, 2 KiB), in pages of the engine's own rather than in static
// TLS. glibc carves a thread's static TLS out of its stack: 17 KiB of it made
// pthread_create fail (EINVAL) for a thread asked for with PTHREAD_STACK_MIN (16 KiB), and
// left a thread asked for with 32 KiB only 15 KiB of stack to run in.
//
// A thread takes a state at its first walk and keeps it for its life. No hook runs when a
// thread exits, so a state is not given back: a later thread takes over the state of a
// thread the kernel no longer knows (its thread id gone from the process), else maps one.
// The thread id is the owner's mark; a forked child's thread gets its own id back on its
// state (after_fork_in_child), before it can start another thread that would take it.
//
// Thread-safety: a state is used by its owning thread only, one walk at a time (the walk
// cache's `busy` flag: a walk nested in a signal handler does not use it). Taking one is
// lock-free (a compare-and-swap on the owner mark); a walk nested in a signal handler while
// its thread takes a state gets none (the other unwinders walk it).
#pragma once

#include <cstdint>

#include "recent_rules.hpp"
#include "repeated_walks.hpp"
#include "walk_cache.hpp"

namespace liveheap::engine {

struct WalkState {
  WalkCache cache;
  RepeatedWalks repeated;
  RecentRules recent;
};

[[gnu::tls_model("initial-exec"),
  gnu::visibility("hidden")]] extern constinit thread_local WalkState* t_walk_state;

// Out of line: a thread's first walk, or one after a failed take. nullptr when no state
// can be had (no memory to map, or nested in the thread's own take).
WalkState* take_walk_state() noexcept;

// This thread's walk state, taken on first use; nullptr when none can be had.
[[gnu::always_inline]] inline WalkState* walk_state() noexcept {
  WalkState* s = t_walk_state;
  if (__builtin_expect(s == nullptr, 0)) s = take_walk_state();
  return s;
}

// In a forked child (the forking thread alone): marks this thread's state with its new id.
void walk_state_after_fork_in_child() noexcept;

// For tests and the tracker's own memory: states mapped so far, held or not.
std::uint64_t walk_states_mapped() noexcept;
// For tests: whether this thread's state carries this thread's id (true with none).
bool walk_state_marked_mine() noexcept;

}  // namespace liveheap::engine
