// epoll_wait as liveheap's objects call it (src/http/reactor_guard.hpp): on a thread that
// runs a liveheap io_context, a descriptor the program closed costs a second and no event
// instead of a failure at once (which Asio would repeat at full speed); on every other
// thread, and on a live descriptor, it is the system call as it was.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "reactor_guard.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Call {
  int result = 0;
  int error = 0;
  Clock::duration took{};
};

Call wait_on(int epoll_fd, int timeout_ms) {
  epoll_event events[4];
  const auto start = Clock::now();
  errno = 0;
  Call c;
  c.result = ::epoll_wait(epoll_fd, events, 4, timeout_ms);
  c.error = errno;
  c.took = Clock::now() - start;
  return c;
}

TEST(ReactorGuard, AReactorThreadWaitsASecondOnAClosedDescriptorOthersFailAtOnce) {
  const int closed = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(closed, 0);
  ::close(closed);

  const Call host = wait_on(closed, -1);
  EXPECT_EQ(host.result, -1);
  EXPECT_TRUE(host.error == EBADF || host.error == EINVAL) << host.error;  // EINVAL: reused
  EXPECT_LT(host.took, std::chrono::milliseconds(500));

  Call reactor;
  std::thread([&] {
    liveheap::http::mark_reactor_thread();
    reactor = wait_on(closed, -1);
  }).join();
  EXPECT_EQ(reactor.result, 0);
  EXPECT_GE(reactor.took, std::chrono::milliseconds(900));
}

TEST(ReactorGuard, ALiveDescriptorPassesThroughOnAReactorThread) {
  const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  const int event_fd = ::eventfd(1, EFD_CLOEXEC);  // readable
  ASSERT_GE(epoll_fd, 0);
  ASSERT_GE(event_fd, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ASSERT_EQ(::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, event_fd, &ev), 0);
  Call ready, none;
  std::thread([&] {
    liveheap::http::mark_reactor_thread();
    ready = wait_on(epoll_fd, -1);
    std::uint64_t value = 0;
    (void)!::read(event_fd, &value, sizeof value);
    none = wait_on(epoll_fd, 0);
  }).join();
  EXPECT_EQ(ready.result, 1);
  EXPECT_EQ(none.result, 0);
  EXPECT_LT(none.took, std::chrono::milliseconds(500));
  ::close(event_fd);
  ::close(epoll_fd);
}

}  // namespace
