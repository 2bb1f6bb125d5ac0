#include "reactor_guard.hpp"

#include <sys/epoll.h>

#include <cerrno>
#include <ctime>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {
thread_local bool t_reactor_thread = false;
}  // namespace

void mark_reactor_thread() noexcept { t_reactor_thread = true; }
bool is_reactor_thread() noexcept { return t_reactor_thread; }

}  // namespace http
LIVEHEAP_NAMESPACE_END

extern "C" int __real_epoll_wait(int epfd, epoll_event* events, int max_events, int timeout);

extern "C" int __wrap_epoll_wait(int epfd, epoll_event* events, int max_events, int timeout) {
  const int n = __real_epoll_wait(epfd, events, max_events, timeout);
  if (n < 0 && liveheap::http::is_reactor_thread() && (errno == EBADF || errno == EINVAL)) {
    // The reactor's descriptor is gone: nothing will ever be ready on it. No event, after a
    // second (so that a thread that calls again wakes at most once a second).
    timespec second{1, 0};
    while (::nanosleep(&second, &second) != 0 && errno == EINTR) {
    }
    return 0;
  }
  return n;
}
