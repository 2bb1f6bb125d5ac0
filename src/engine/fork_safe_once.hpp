// A value made on first use, once per process, as a function-local static is, but safe
// across fork(): when the host forks while one of liveheap's threads is making the value,
// the child makes it again on its own first use. A function-local static's guard
// (__cxa_guard_acquire) would stay "in progress" in the child forever, and the child's first
// use would hang: a PostgreSQL checkpointer forked while liveheap's history thread was naming
// the allocator never exited. glibc's pthread_once restarts an initialization a fork
// interrupted.
// Thread-safety: as pthread_once; the value is never destroyed (reports may run at exit).
#pragma once

#include <pthread.h>

namespace liveheap::engine {

// One value of type T per `Make` (a function returning a T made with new).
template <typename T, T* (*Make)()>
T& fork_safe_once() noexcept {
  static pthread_once_t once = PTHREAD_ONCE_INIT;  // constant-initialized: no guard
  static T* value = nullptr;                       // zero-initialized: no guard
  pthread_once(&once, [] { value = Make(); });
  return *value;
}

}  // namespace liveheap::engine
