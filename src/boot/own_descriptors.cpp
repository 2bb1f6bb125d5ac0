// liveheap's own descriptors: the marks and the move above the program's numbers (see
// own_descriptors.hpp).
#include "own_descriptors.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "fork_fds.hpp"
#include "real_calls.hpp"

namespace liveheap::boot {
namespace {

constexpr int kWordBits = 64;
std::atomic<std::uint64_t> g_marks[kMaxOwnDescriptor / kWordBits]{};
std::atomic<int> g_marking_pid{0};

void mark(int fd) noexcept {
  if (fd < 0 || fd >= kMaxOwnDescriptor) return;
  g_marks[fd / kWordBits].fetch_or(std::uint64_t{1} << (fd % kWordBits), std::memory_order_release);
}

void unmark(int fd) noexcept {
  if (fd < 0 || fd >= kMaxOwnDescriptor) return;
  g_marks[fd / kWordBits].fetch_and(~(std::uint64_t{1} << (fd % kWordBits)), std::memory_order_release);
}

// Where liveheap's descriptors go: 7/8 of the soft limit, counted up to 1024; 0 (stay
// where they are) under a limit too small to spare the room. Read once: a limit the
// program raises later still has room there (one it lowers below makes the move fail, and
// the descriptor stays where it is).
std::atomic<int> g_high_base_plus_one{0};

int high_base() noexcept {
  if (const int known = g_high_base_plus_one.load(std::memory_order_relaxed)) return known - 1;
  rlimit limit{};
  int base = 0;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    const rlim_t cap = limit.rlim_cur < 1024 ? limit.rlim_cur : 1024;
    base = cap < 64 ? 0 : static_cast<int>(cap - cap / 8);
  }
  g_high_base_plus_one.store(base + 1, std::memory_order_relaxed);
  return base;
}

}  // namespace

int own_descriptor(int fd) noexcept {
  if (fd < 0) return fd;
  const int saved_errno = errno;
  register_fork_handler();  // a forked child unmarks them before it closes anything
  // Once a process (a forked child forgets it with the marks): getpid is a system call.
  if (g_marking_pid.load(std::memory_order_relaxed) == 0)
    g_marking_pid.store(static_cast<int>(::getpid()), std::memory_order_relaxed);
  mark(fd);  // the first number is liveheap's until the copy above replaces it
  int kept = fd;
  const int base = high_base();
  const int flags = base > fd ? ::fcntl(fd, F_GETFD) : -1;
  if (flags >= 0) {
    const int high = ::fcntl(fd, (flags & FD_CLOEXEC) != 0 ? F_DUPFD_CLOEXEC : F_DUPFD, base);
    if (high >= 0 && high < kMaxOwnDescriptor) {
      mark(high);
      close_own_descriptor(fd);
      kept = high;
    } else if (high >= 0) {
      real_close(high);  // no room for it up there that a mark covers: stays where it is
    }
  }
  errno = saved_errno;
  return kept;
}

int close_own_descriptor(int fd) noexcept {
  // Closed before it is unmarked: between the two, a program's close of the number (its
  // own by then only if the kernel handed it out again) is left undone, never a close of
  // the program's descriptor by liveheap.
  const int result = real_close(fd);
  const int saved_errno = errno;
  unmark(fd);
  errno = saved_errno;
  return result;
}

bool is_own_descriptor(int fd) noexcept {
  if (fd < 0 || fd >= kMaxOwnDescriptor) return false;
  return (g_marks[fd / kWordBits].load(std::memory_order_acquire) >> (fd % kWordBits) & 1) != 0;
}

void disown_descriptor(int fd) noexcept { unmark(fd); }

int next_own_descriptor(unsigned from, unsigned to) noexcept {
  if (to >= static_cast<unsigned>(kMaxOwnDescriptor)) to = kMaxOwnDescriptor - 1;
  for (unsigned fd = from; fd <= to;) {
    const std::uint64_t word = g_marks[fd / kWordBits].load(std::memory_order_acquire) >> (fd % kWordBits);
    if (word != 0) {
      const unsigned found = fd + static_cast<unsigned>(__builtin_ctzll(word));
      return found <= to ? static_cast<int>(found) : -1;
    }
    fd = (fd / kWordBits + 1) * kWordBits;
  }
  return -1;
}

void forget_own_descriptors() noexcept {
  for (auto& word : g_marks) word.store(0, std::memory_order_relaxed);
  g_marking_pid.store(0, std::memory_order_relaxed);
}

int own_descriptors_pid() noexcept { return g_marking_pid.load(std::memory_order_relaxed); }

}  // namespace liveheap::boot
