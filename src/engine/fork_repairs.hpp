// Repairs for a forked child, run first of all fork handlers, from the engine's own (a
// constructor registers it before the program's main). A module whose lock a liveheap
// thread may hold registers its repair here, not with pthread_atfork, before it first
// takes that lock: glibc runs no handler of a fork for handlers registered while that fork
// was under way, and liveheap's threads start the tracker, the history and the symbolizer
// just as a server forks its first workers (a PostgreSQL checkpointer forked then inherited
// the tracker's lock held by a thread it did not have, and never exited).
// Thread-safety: on_fork_child from any thread; the repairs run in the child only.
#pragma once

#include "shared.hpp"

namespace liveheap::engine {

// Runs `repair` in every child fork() makes after this call returns (once, however often
// it is registered). A repair runs with the engine's locks free, on the child's only thread:
// it makes its module's locks afresh and forgets the parent's threads. It must not allocate:
// it runs before the child handlers of the allocator beneath (jemalloc's, say), which may
// still hold that allocator's locks. Work that allocates in the child (the endpoint's,
// restarting a thread) stays in handlers that run later: boot::on_fork_child, or the
// module's own pthread_atfork handler. At most kForkRepairs.
LIVEHEAP_SHARED void on_fork_child(void (*repair)()) noexcept;
inline constexpr int kForkRepairs = 16;

// The engine's fork handler calls this in the child.
void run_fork_repairs() noexcept;

}  // namespace liveheap::engine
