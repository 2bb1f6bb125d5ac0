// Interposes the calls that close descriptors or take a number over (close, close_range,
// closefrom, dup2, dup3), linked or preloaded before libc as the allocator hooks are: a
// number marked as liveheap's (own_descriptors.hpp) stays open when the program closes it,
// and the call returns as if it had closed it. Every other number, flag and error passes
// on as it is, to the next definition of the call (another preloaded library that watches
// descriptors, proxychains' or torsocks', still sees the program's closes), else libc's.
// Each is async-signal-safe, as libc's are: the next definitions are looked up once, when
// the library is loaded, never from a call.
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include "own_descriptors.hpp"
#include "real_calls.hpp"

namespace {

using namespace liveheap::boot;

// The next definitions: libc's own until the library's constructor finds them (another
// preloaded tool's, or libc's again).
struct NextCalls {
  int (*close)(int);
  int (*close_range)(unsigned, unsigned, int);
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
};
NextCalls g_next{real_close, real_close_range, real_dup2, real_dup3};

template <class Fn>
void take_next_definition(Fn& slot, const char* name) noexcept {
  if (const auto fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name))) slot = fn;
}

[[gnu::constructor]] void find_next_calls() noexcept {
  take_next_definition(g_next.close, "close");
  take_next_definition(g_next.close_range, "close_range");
  take_next_definition(g_next.dup2, "dup2");
  take_next_definition(g_next.dup3, "dup3");
}

// close_range without liveheap's numbers: the runs between them closed one by one.
// Unshared (CLOSE_RANGE_UNSHARE: the caller's own copy of the table, not the one
// liveheap's threads use) or only marked close-on-exec (CLOSE_RANGE_CLOEXEC: liveheap's
// are already), the call passes as it is.
int close_range_but_own(unsigned first, unsigned last, int flags) noexcept {
  if (first > last || (flags & (CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) != 0 ||
      next_own_descriptor(first, last) < 0)
    return g_next.close_range(first, last, flags);
  unsigned from = first;
  for (;;) {
    const int own = next_own_descriptor(from, last);
    if (own < 0) return g_next.close_range(from, last, flags);
    const auto skip = static_cast<unsigned>(own);
    if (skip > from && g_next.close_range(from, skip - 1, flags) != 0) return -1;
    if (skip >= last) return 0;
    from = skip + 1;
  }
}

// A dup2 or dup3 onto one of liveheap's numbers: the program takes the number (it asked
// for that one), so liveheap no longer keeps it. A vfork child, which shares the marks
// with its parent but has a table of its own, changes nothing.
template <class Dup>
int dup_onto(int fd, int fd2, Dup&& dup) noexcept {
  const bool taken = fd != fd2 && is_own_descriptor(fd2) && ::getpid() == own_descriptors_pid();
  const int result = dup();
  if (taken && result >= 0) disown_descriptor(fd2);
  return result;
}

}  // namespace

extern "C" {

[[gnu::visibility("default")]] int close(int fd) {
  if (is_own_descriptor(fd)) return 0;
  return g_next.close(fd);
}

[[gnu::visibility("default")]] int close_range(unsigned first, unsigned last, int flags) noexcept {
  return close_range_but_own(first, last, flags);
}

[[gnu::visibility("default")]] void closefrom(int lowest) noexcept {
  const unsigned first = lowest < 0 ? 0u : static_cast<unsigned>(lowest);
  if (close_range_but_own(first, ~0u, 0) == 0 || errno != ENOSYS) return;
  // A kernel without close_range (before 5.9): each number up to the limit (65536 at most).
  rlimit limit{};
  const rlim_t end =
      ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 65536 ? limit.rlim_cur : 65536;
  for (rlim_t fd = first; fd < end; ++fd)
    if (!is_own_descriptor(static_cast<int>(fd))) g_next.close(static_cast<int>(fd));
}

[[gnu::visibility("default")]] int dup2(int fd, int fd2) noexcept {
  return dup_onto(fd, fd2, [&] { return g_next.dup2(fd, fd2); });
}

[[gnu::visibility("default")]] int dup3(int fd, int fd2, int flags) noexcept {
  return dup_onto(fd, fd2, [&] { return g_next.dup3(fd, fd2, flags); });
}

}  // extern "C"
