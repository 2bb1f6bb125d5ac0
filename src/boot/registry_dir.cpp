// The registry's directories and the holder's record (see registry_dir.hpp).
#include "registry_dir.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "start_environment.hpp"

namespace liveheap::boot {
namespace {

// How many alternatives to a registry directory another user took (registry_root).
constexpr int kFallbacks = 8;

// snprintf into `out`; false when it did not fit.
template <std::size_t N>
bool format(char (&out)[N], const char* format, auto... args) noexcept {
  const int n = std::snprintf(out, N, format, args...);
  return n >= 0 && static_cast<std::size_t>(n) < N;
}

// The reason, and false (a reason too long for its buffer is cut, never lost).
bool fail(Reason& why, const char* format, auto... args) noexcept {
  std::snprintf(why.text, sizeof why.text, format, args...);
  return false;
}

// mkdir -m 0700 unless it exists; then insist it is ours and private.
bool make_private_dir(const char* dir, Reason& why) noexcept {
  if (::mkdir(dir, 0700) != 0 && errno != EEXIST)
    return fail(why, "cannot create the registry directory %s: %s", dir, std::strerror(errno));
  struct stat st {};
  if (::lstat(dir, &st) != 0) return fail(why, "cannot inspect %s: %s", dir, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return fail(why, "the registry %s is not a directory", dir);
  if (st.st_uid != ::geteuid())
    return fail(why, "the registry directory %s belongs to uid %u, not to this user", dir,
                static_cast<unsigned>(st.st_uid));
  if ((st.st_mode & 077) != 0)
    return fail(why,
                "the registry directory %s has mode %04o: others could reach this process's "
                "heap; chmod 700 it",
                dir, static_cast<unsigned>(st.st_mode & 07777));
  return true;
}

// Where the user's registry would be without anyone in the way.
bool registry_base(DirPath& base) noexcept {
  const char* runtime = start_env("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') {
    struct stat st {};
    if (::stat(runtime, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
        ::access(runtime, W_OK | X_OK) == 0)
      return format(base.text, "%s/liveheap", runtime);
  }
  return format(base.text, "/tmp/liveheap-%u", static_cast<unsigned>(::geteuid()));
}

// The registry: the base, or where another user took it (in /tmp anyone may create any
// name first), the first of "<base>.1" ... "<base>.<kFallbacks>" that is or can be made
// ours and private. Every process of the user walks the same list in the same order, so
// they still meet. A foreign or open directory is skipped, never "fixed".
bool registry_root(DirPath& root, Reason& why) noexcept {
  DirPath base;
  if (!registry_base(base)) return fail(why, "the registry path is too long");
  Reason first;
  for (int k = 0; k <= kFallbacks; ++k) {
    const bool fits = k == 0 ? format(root.text, "%s", base.text) : format(root.text, "%s.%d", base.text, k);
    Reason reason;
    if (fits && make_private_dir(root.text, reason)) return true;
    if (k == 0) first = reason;
  }
  return fail(why, "%s (and %s.1 to .%d are taken too)", first.text, base.text, kFallbacks);
}

// "127.0.0.1:8080" -> "127.0.0.1-8080": a file name whatever the host is spelled with.
bool group_name(const char* address, char (&name)[128]) noexcept {
  std::size_t n = 0;
  if (address[0] == '\0' || address[0] == '.') name[n++] = '_';
  for (const char* c = address; *c != '\0'; ++c) {
    if (n + 1 >= sizeof name) return false;
    const bool plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                       *c == '.' || *c == '-';
    name[n++] = *c == ':' ? '-' : plain ? *c : '_';
  }
  name[n] = '\0';
  return true;
}

bool alive(pid_t pid) noexcept { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

bool open_group_dir(const char* address, DirPath& dir, Reason& why) noexcept {
  DirPath root;
  char name[128];
  if (!registry_root(root, why)) return false;
  if (!group_name(address, name) || !format(dir.text, "%s/%s", root.text, name))
    return fail(why, "the registry path for %s is too long", address);
  return make_private_dir(dir.text, why);
}

bool socket_path(const char* dir, pid_t pid, SocketPath& path) noexcept {
  return format(path.text, "%s/%d.sock", dir, static_cast<int>(pid));
}

bool record_port_holder(const char* dir, pid_t pid) noexcept {
  // A link beside it first, renamed over the record: readers never see a half-made one.
  char target[24], temporary[sizeof(DirPath::text) + 32], holder[sizeof(DirPath::text) + 8];
  if (!format(target, "%d", static_cast<int>(pid)) || !format(temporary, "%s/holder.%s", dir, target) ||
      !format(holder, "%s/holder", dir))
    return false;
  ::unlink(temporary);
  if (::symlink(target, temporary) != 0) return false;
  if (::rename(temporary, holder) == 0) return true;
  ::unlink(temporary);
  return false;
}

pid_t recorded_port_holder(const char* holder) noexcept {
  char target[24];
  const ssize_t n = ::readlink(holder, target, sizeof target);
  if (n <= 0 || n >= static_cast<ssize_t>(sizeof target)) return 0;
  pid_t pid = 0;
  for (ssize_t i = 0; i < n; ++i) {
    if (target[i] < '0' || target[i] > '9' || pid > 400000000) return 0;
    pid = pid * 10 + (target[i] - '0');
  }
  return pid > 0 ? pid : 0;
}

bool process_exists(pid_t pid) noexcept { return pid > 0 && alive(pid); }

void forget_port_holder(const char* dir, pid_t pid) noexcept {
  char holder[sizeof(DirPath::text) + 8];
  if (!format(holder, "%s/holder", dir)) return;
  const pid_t recorded = recorded_port_holder(holder);
  if (recorded != 0 && (recorded == pid || !alive(recorded))) ::unlink(holder);
}

}  // namespace liveheap::boot
