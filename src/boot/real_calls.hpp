// libc's descriptor calls as they are, past liveheap's own definitions of them
// (descriptor_hooks.cpp): glibc's exported aliases where it has them (close and dup2 stay
// cancellation points for the program), the system calls otherwise (glibc's dup3 and
// close_range are those system calls and nothing more).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

extern "C" int __close(int fd);
extern "C" int __dup2(int fd, int fd2);

namespace liveheap::boot {

inline int real_close(int fd) noexcept { return __close(fd); }
inline int real_dup2(int fd, int fd2) noexcept { return __dup2(fd, fd2); }
inline int real_dup3(int fd, int fd2, int flags) noexcept {
  return static_cast<int>(::syscall(SYS_dup3, fd, fd2, flags));
}
inline int real_close_range(unsigned first, unsigned last, int flags) noexcept {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}

}  // namespace liveheap::boot
