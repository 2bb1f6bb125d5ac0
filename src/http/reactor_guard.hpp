// Asio's reactor calls epoll_wait in a loop and ignores its failures. A program that
// closes every descriptor (a daemon as it starts) closes the reactor's epoll descriptor
// too; a reactor thread that was not inside epoll_wait just then gets EBADF (or EINVAL,
// the number being a file of the program's by then) at once on every later call, and
// would spin at full speed for the rest of the process. liveheap's own objects are linked
// with --wrap=epoll_wait (src/http/CMakeLists.txt): on a thread that runs one of
// liveheap's io_contexts, such a failure waits a second and reports no event instead. Every
// other thread's epoll_wait (the host's own Asio, say) is passed through untouched.
#pragma once

#include "liveheap/export.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// Marks the calling thread as one that runs a liveheap io_context, for its whole life.
void mark_reactor_thread() noexcept;
// Whether it is one.
bool is_reactor_thread() noexcept;

}  // namespace http
LIVEHEAP_NAMESPACE_END
