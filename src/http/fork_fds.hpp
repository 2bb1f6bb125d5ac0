// The admin sockets a forked child must not keep: after fork() without exec, the child
// holds copies of its parent's listening and client sockets that no thread of its own
// serves (clients would hang on them, and a restarted program could not bind the port).
// A pthread_atfork child handler closes them by number, then runs the registered hooks.
// Thread-safety: every function may be called from any thread; the table is lock-free so
// that a fork while another thread updates it cannot leave a lock held in the child.
#pragma once

#include "liveheap/export.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// Remember `fd` as an admin socket (a no-op when the table of 256 is full).
void track_fork_fd(int fd) noexcept;
// Forget it, before it is closed.
void untrack_fork_fd(int fd) noexcept;
// Run `hook` in every forked child, after the tracked sockets are closed. At most 8 hooks.
void on_fork_child(void (*hook)()) noexcept;

}  // namespace http
LIVEHEAP_NAMESPACE_END
