// The admin sockets a forked child closes (see fork_fds.hpp).
#include "fork_fds.hpp"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "own_descriptors.hpp"

namespace liveheap::boot {
namespace {

constexpr std::size_t kMaxFds = 256;
constexpr std::size_t kMaxHooks = 8;

// A slot's state: its fields are read only once `ready` is published (release/acquire).
enum : int { kFree = 0, kWriting = 1, kReady = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  std::atomic<int> fd{-1};
  std::atomic<std::uint64_t> dev{0};
  std::atomic<std::uint64_t> ino{0};
};

std::array<Slot, kMaxFds> g_fds{};
std::array<std::atomic<void (*)()>, kMaxHooks> g_hooks{};

// In the child, where only this thread exists: fstat and close are async-signal-safe, and
// nothing here locks, allocates or formats. Every slot is freed: the parent's owners are
// never destroyed here. The parent's descriptors are the child's from here on, to close as
// it likes (liveheap's own in the child are made and marked after this).
void close_in_child() {
  forget_own_descriptors();
  for (Slot& slot : g_fds) {
    if (slot.state.load(std::memory_order_acquire) == kReady) {
      const int fd = slot.fd.load(std::memory_order_relaxed);
      struct stat st {};
      if (::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
          static_cast<std::uint64_t>(st.st_dev) == slot.dev.load(std::memory_order_relaxed) &&
          static_cast<std::uint64_t>(st.st_ino) == slot.ino.load(std::memory_order_relaxed))
        ::close(fd);
    }
    // A slot another thread of the parent was filling at the fork is freed unread.
    slot.state.store(kFree, std::memory_order_relaxed);
  }
  for (auto& hook : g_hooks)
    if (void (*fn)() = hook.load()) fn();
}

void register_handler() noexcept { pthread_atfork(nullptr, nullptr, close_in_child); }

void register_once() noexcept {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_handler);
}

// The slot now holding the socket `fd` is (its identity), or -1.
int track(int fd) noexcept {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return -1;
  register_once();
  for (std::size_t i = 0; i < kMaxFds; ++i) {
    Slot& slot = g_fds[i];
    int expected = kFree;
    if (!slot.state.compare_exchange_strong(expected, kWriting, std::memory_order_acquire)) continue;
    slot.fd.store(fd, std::memory_order_relaxed);
    slot.dev.store(static_cast<std::uint64_t>(st.st_dev), std::memory_order_relaxed);
    slot.ino.store(static_cast<std::uint64_t>(st.st_ino), std::memory_order_relaxed);
    slot.state.store(kReady, std::memory_order_release);
    return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

ForkFd::ForkFd(int fd) noexcept : slot_(track(fd)) {}

ForkFd::ForkFd(ForkFd&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }

ForkFd& ForkFd::operator=(ForkFd&& other) noexcept {
  if (this != &other) {
    reset();
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

ForkFd::~ForkFd() { reset(); }

// The slot is this owner's alone: it holds exactly the triple recorded above.
void ForkFd::reset() noexcept {
  if (slot_ >= 0) g_fds[static_cast<std::size_t>(slot_)].state.store(kFree, std::memory_order_release);
  slot_ = -1;
}

bool ForkFd::still_tracks(int fd) const noexcept {
  if (slot_ < 0) return false;
  const Slot& slot = g_fds[static_cast<std::size_t>(slot_)];
  struct stat st {};
  return slot.fd.load(std::memory_order_relaxed) == fd && ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
         static_cast<std::uint64_t>(st.st_dev) == slot.dev.load(std::memory_order_relaxed) &&
         static_cast<std::uint64_t>(st.st_ino) == slot.ino.load(std::memory_order_relaxed);
}

void register_fork_handler() noexcept { register_once(); }

void on_fork_child(void (*hook)()) noexcept {
  register_once();
  for (auto& slot : g_hooks) {
    void (*expected)() = nullptr;
    if (slot.load() == hook || slot.compare_exchange_strong(expected, hook)) return;
  }
}

}  // namespace liveheap::boot
