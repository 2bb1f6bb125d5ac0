// Every descriptor liveheap's own objects make is liveheap's (boot/own_descriptors.hpp):
// the layers above the boot layer, and the Asio and Beast code compiled into them, are
// linked with --wrap for the calls that make or close descriptors (src/http/CMakeLists.txt),
// so that the listener, the sessions, the client's connections, the reactors' epoll,
// eventfd and timerfd descriptors and the files liveheap reads move above the program's
// numbers and stay open when the program closes "every" descriptor. liveheap closes them
// for real (close_own_descriptor). Sockets and accepted connections are made close-on-exec:
// none of them is ever meant for a child (Asio's own calls do not ask for it).
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cstdarg>

#include "own_descriptors.hpp"

using liveheap::boot::close_own_descriptor;
using liveheap::boot::own_descriptor;

extern "C" {

int __real_socket(int domain, int type, int protocol);
int __real_socketpair(int domain, int type, int protocol, int sv[2]);
int __real_accept4(int fd, sockaddr* address, socklen_t* length, int flags);
int __real_epoll_create(int size);
int __real_epoll_create1(int flags);
int __real_eventfd(unsigned initial, int flags);
int __real_timerfd_create(int clock, int flags);
int __real_pipe(int fds[2]);
int __real_pipe2(int fds[2], int flags);
int __real_open(const char* path, int flags, ...);

int __wrap_socket(int domain, int type, int protocol) {
  return own_descriptor(__real_socket(domain, type | SOCK_CLOEXEC, protocol));
}

int __wrap_socketpair(int domain, int type, int protocol, int sv[2]) {
  const int result = __real_socketpair(domain, type | SOCK_CLOEXEC, protocol, sv);
  if (result == 0) {
    sv[0] = own_descriptor(sv[0]);
    sv[1] = own_descriptor(sv[1]);
  }
  return result;
}

int __wrap_accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  return own_descriptor(__real_accept4(fd, address, length, flags | SOCK_CLOEXEC));
}

int __wrap_accept(int fd, sockaddr* address, socklen_t* length) {
  return own_descriptor(__real_accept4(fd, address, length, SOCK_CLOEXEC));
}

int __wrap_epoll_create(int size) { return own_descriptor(__real_epoll_create(size)); }
int __wrap_epoll_create1(int flags) { return own_descriptor(__real_epoll_create1(flags)); }
int __wrap_eventfd(unsigned initial, int flags) { return own_descriptor(__real_eventfd(initial, flags)); }
int __wrap_timerfd_create(int clock, int flags) {
  return own_descriptor(__real_timerfd_create(clock, flags));
}

int __wrap_pipe2(int fds[2], int flags) {
  const int result = __real_pipe2(fds, flags);
  if (result == 0) {
    fds[0] = own_descriptor(fds[0]);
    fds[1] = own_descriptor(fds[1]);
  }
  return result;
}

int __wrap_pipe(int fds[2]) { return __wrap_pipe2(fds, 0); }

int __wrap_open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list args;
    va_start(args, flags);
    mode = static_cast<mode_t>(va_arg(args, int));
    va_end(args);
  }
  return own_descriptor(__real_open(path, flags, mode));
}

int __wrap_close(int fd) { return close_own_descriptor(fd); }

}  // extern "C"
