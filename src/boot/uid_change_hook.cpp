// Interposes the calls that change the effective user id (setuid, seteuid, setreuid,
// setresuid): a forked worker that drops privileges (nginx's `user nobody;`, Apache
// prefork, php-fpm, postfix) binds its registry socket first, while it can still enter
// its group's directory (http/endpoint.hpp, bind_before_uid_change). Linked or preloaded
// before libc, as the allocator hooks are; each forwards to the next definition (libc's)
// and returns exactly what it returns, with its errno.
#include "uid_change_hook.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace {

// What runs before each change; nullptr until an endpoint sets it.
std::atomic<void (*)()> g_before_uid_change{nullptr};

// The next definition of `name`, resolved once; nullptr where there is none.
template <class Fn>
Fn next(std::atomic<Fn>& slot, const char* name) noexcept {
  Fn real = slot.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    slot.store(real, std::memory_order_release);
  }
  return real;
}

// The next definition of `name` called with `ids`, once this process's socket is made; its
// result and errno as they are. Never recurses into ourselves: without a next definition
// (cannot happen with glibc), fails with ENOSYS.
template <class... Ids>
int bind_then_forward(std::atomic<int (*)(Ids...)>& slot, const char* name, Ids... ids) noexcept {
  const auto real = next(slot, name);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if (void (*before)() = g_before_uid_change.load(std::memory_order_acquire)) before();
  return real(ids...);
}

}  // namespace

namespace liveheap::boot {

void set_before_uid_change(void (*fn)()) noexcept {
  g_before_uid_change.store(fn, std::memory_order_release);
}

void (*before_uid_change_function() noexcept)() {
  return g_before_uid_change.load(std::memory_order_acquire);
}

}  // namespace liveheap::boot

extern "C" {

[[gnu::visibility("default")]] int setuid(uid_t uid) noexcept {
  static std::atomic<int (*)(uid_t)> slot{nullptr};
  return bind_then_forward(slot, "setuid", uid);
}

[[gnu::visibility("default")]] int seteuid(uid_t euid) noexcept {
  static std::atomic<int (*)(uid_t)> slot{nullptr};
  return bind_then_forward(slot, "seteuid", euid);
}

[[gnu::visibility("default")]] int setreuid(uid_t ruid, uid_t euid) noexcept {
  static std::atomic<int (*)(uid_t, uid_t)> slot{nullptr};
  return bind_then_forward(slot, "setreuid", ruid, euid);
}

[[gnu::visibility("default")]] int setresuid(uid_t ruid, uid_t euid, uid_t suid) noexcept {
  static std::atomic<int (*)(uid_t, uid_t, uid_t)> slot{nullptr};
  return bind_then_forward(slot, "setresuid", ruid, euid, suid);
}

}  // extern "C"
