// Interposes the calls that change the effective user id (setuid, seteuid, setreuid,
// setresuid): a forked worker that drops privileges (nginx's `user nobody;`, Apache
// prefork, php-fpm, postfix) binds its registry socket first, while it can still enter
// its group's directory (endpoint.hpp, bind_before_uid_change). Linked or preloaded before
// libc, as the allocator hooks are; each forwards to the next definition (libc's) and
// returns exactly what it returns, with its errno.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "endpoint.hpp"

namespace {

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

// Never recurse into ourselves: without a next definition (cannot happen with glibc), fail.
int unavailable() noexcept {
  errno = ENOSYS;
  return -1;
}

}  // namespace

extern "C" {

[[gnu::visibility("default")]] int setuid(uid_t uid) noexcept {
  static std::atomic<int (*)(uid_t)> slot{nullptr};
  const auto real = next(slot, "setuid");
  if (real == nullptr) return unavailable();
  liveheap::http::bind_before_uid_change();
  return real(uid);
}

[[gnu::visibility("default")]] int seteuid(uid_t euid) noexcept {
  static std::atomic<int (*)(uid_t)> slot{nullptr};
  const auto real = next(slot, "seteuid");
  if (real == nullptr) return unavailable();
  liveheap::http::bind_before_uid_change();
  return real(euid);
}

[[gnu::visibility("default")]] int setreuid(uid_t ruid, uid_t euid) noexcept {
  static std::atomic<int (*)(uid_t, uid_t)> slot{nullptr};
  const auto real = next(slot, "setreuid");
  if (real == nullptr) return unavailable();
  liveheap::http::bind_before_uid_change();
  return real(ruid, euid);
}

[[gnu::visibility("default")]] int setresuid(uid_t ruid, uid_t euid, uid_t suid) noexcept {
  static std::atomic<int (*)(uid_t, uid_t, uid_t)> slot{nullptr};
  const auto real = next(slot, "setresuid");
  if (real == nullptr) return unavailable();
  liveheap::http::bind_before_uid_change();
  return real(ruid, euid, suid);
}

}  // extern "C"
