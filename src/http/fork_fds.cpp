// The admin sockets a forked child closes (see fork_fds.hpp).
#include "fork_fds.hpp"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

constexpr int kFree = 0;  // slots hold fd + 1: zero-initialized means empty
constexpr std::size_t kMaxFds = 256;
constexpr std::size_t kMaxHooks = 8;

std::array<std::atomic<int>, kMaxFds> g_fds{};
std::array<std::atomic<void (*)()>, kMaxHooks> g_hooks{};

void close_in_child() {
  for (auto& slot : g_fds) {
    const int entry = slot.exchange(kFree);
    if (entry != kFree) ::close(entry - 1);
  }
  for (auto& hook : g_hooks)
    if (void (*fn)() = hook.load()) fn();
}

void register_once() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, close_in_child); });
}

}  // namespace

void track_fork_fd(int fd) noexcept {
  register_once();
  for (auto& slot : g_fds) {
    int expected = kFree;
    if (slot.compare_exchange_strong(expected, fd + 1)) return;
  }
}

void untrack_fork_fd(int fd) noexcept {
  for (auto& slot : g_fds) {
    int expected = fd + 1;
    if (slot.compare_exchange_strong(expected, kFree)) return;
  }
}

void on_fork_child(void (*hook)()) noexcept {
  register_once();
  for (auto& slot : g_hooks) {
    void (*expected)() = nullptr;
    if (slot.load() == hook || slot.compare_exchange_strong(expected, hook)) return;
  }
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
