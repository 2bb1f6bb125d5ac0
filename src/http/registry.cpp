// The private registry of process endpoints (see registry.hpp).
#include "registry.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "registry_dir.hpp"
#include "start_environment.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

// A socket that refuses connections is stale only once it is older than this: between
// bind and listen a starting process refuses too.
constexpr std::time_t kRefusingGraceSeconds = 5;

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Exited, though its parent has not reaped it yet: its descriptors are closed already.
bool zombie(pid_t pid) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[512];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  const char* end_of_name = std::strrchr(text, ')');  // "pid (name) state ...": the name may hold anything
  return end_of_name != nullptr && end_of_name[1] == ' ' && (end_of_name[2] == 'Z' || end_of_name[2] == 'X');
}

// No process of that pid runs: none exists, or it has exited and awaits its reaping.
bool gone(pid_t pid) { return !alive(pid) || zombie(pid); }

// A directory's listing, closed however the reading ends (an allocation may throw): the
// descriptor is the host's to have. Read with getdents64 on a descriptor liveheap opened
// itself (liveheap's own, boot/own_descriptors.hpp), not with opendir, whose open and close
// are glibc's own: a program closing every descriptor meanwhile would have had liveheap's
// closedir close what it opened under the number since.
class Listing {
 public:
  explicit Listing(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}
  ~Listing() {
    if (fd_ >= 0) ::close(fd_);
  }
  Listing(const Listing&) = delete;
  Listing& operator=(const Listing&) = delete;
  // The next entry's name, or nullptr at the end (or when the directory could not be opened).
  const char* next() {
    if (fd_ < 0) return nullptr;
    if (at_ >= filled_) {
      const long n = ::syscall(SYS_getdents64, fd_, buffer_, sizeof buffer_);
      if (n <= 0) return nullptr;
      filled_ = static_cast<std::size_t>(n);
      at_ = 0;
    }
    // glibc's dirent64 is the kernel's linux_dirent64, field for field.
    const char* entry = buffer_ + at_;
    unsigned short length = 0;
    std::memcpy(&length, entry + offsetof(dirent64, d_reclen), sizeof length);
    at_ += length;
    return entry + offsetof(dirent64, d_name);
  }

 private:
  int fd_;
  std::size_t at_ = 0, filled_ = 0;
  alignas(8) char buffer_[4096];
};

// The pid of "<pid><suffix>", or 0 when `name` is not that.
pid_t pid_in_name(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (!name.starts_with(prefix) || !name.ends_with(suffix) || name.size() <= prefix.size() + suffix.size())
    return 0;
  const std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  return ec == std::errc() && end == digits.data() + digits.size() && pid > 0 ? pid : 0;
}

// 0 when something accepts at `path`, else the errno of connect. `nonblocking`: a full
// backlog is EAGAIN at once instead of a wait for the server to accept.
int try_connect(const std::string& path, bool nonblocking = false) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) return errno;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int error = rc == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

bool old_enough(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime >= kRefusingGraceSeconds;
}

// The socket of process `pid` is left by a process that died without its exit handler
// (SIGKILL): the pid is gone (or a zombie) and nothing accepts on it. Whatever accepts, whoever serves it,
// stays; a socket whose pid lives is never connected to here (it may be starting, and a
// connection would wake its server for nothing).
bool abandoned_socket(const std::string& path, pid_t pid) {
  if (!gone(pid)) return false;
  const int error = try_connect(path, true);
  return error == ECONNREFUSED || error == ENOENT;
}

// Removes from the group directory `dir` what dead processes left there: sockets
// (abandoned_socket), a holder record naming a dead pid, a half-made one (holder.<pid>)
// of a process killed between its two steps.
void sweep_group(const std::string& dir) {
  Listing listing(dir);
  while (const char* name = listing.next()) {
    const std::string path = dir + "/" + name;
    if (const pid_t pid = pid_in_name(name, "", ".sock")) {
      if (abandoned_socket(path, pid)) ::unlink(path.c_str());
    } else if (const pid_t writer = pid_in_name(name, "holder.", "")) {
      if (!alive(writer)) ::unlink(path.c_str());
    }
  }
  forget_port_holder(dir, 0);  // only a dead one: no live process is pid 0
}

}  // namespace

void read_registry_environment() { boot::capture_start_environment(); }

std::string open_registry(std::string_view address) {
  boot::DirPath dir;
  boot::Reason why;
  if (!boot::open_group_dir(std::string(address).c_str(), dir, why)) throw std::runtime_error(why.text);
  return dir.text;
}

std::string socket_path(const std::string& dir, pid_t pid) {
  boot::SocketPath path;
  if (!boot::socket_path(dir.c_str(), pid, path))
    throw std::runtime_error("the registry path " + dir + "/" + std::to_string(pid) +
                             ".sock is too long for a Unix socket");
  return path.text;
}

std::vector<pid_t> list_registry(const std::string& dir) {
  std::vector<pid_t> pids;
  Listing listing(dir);
  while (const char* name = listing.next()) {
    const pid_t pid = pid_in_name(name, "", ".sock");
    if (pid == 0) continue;
    const std::string path = dir + "/" + name;
    if (gone(pid)) {
      if (abandoned_socket(path, pid)) ::unlink(path.c_str());
      continue;  // listed only while its process lives
    }
    // Refusing for longer than a start-up takes: the pid is another process's by now.
    const int error = try_connect(path);
    if (error == 0) pids.push_back(pid);
    else if (error == ECONNREFUSED && old_enough(path)) ::unlink(path.c_str());
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

void sweep_registry(const std::string& dir, bool other_groups) noexcept {
  try {
    sweep_group(dir);
    if (!other_groups) return;
    const std::string root = dir.substr(0, dir.rfind('/'));
    Listing listing(root);
    while (const char* name = listing.next()) {
      if (std::string_view(name) == "." || std::string_view(name) == "..") continue;
      const std::string group = root + "/" + name;
      struct stat st {};
      // Ours only (the registry is private: anything else is not liveheap's to touch).
      if (group == dir || ::lstat(group.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
          st.st_uid != ::geteuid())
        continue;
      sweep_group(group);
      // Gone only if empty: a process that just made it and binds in it next finds it
      // missing and makes it again (register_in_registry's second try).
      ::rmdir(group.c_str());
    }
  } catch (...) {
    // Out of memory: the next process that starts sweeps.
  }
}

std::string holder_path(const std::string& dir) { return dir + "/holder"; }

bool record_port_holder(const std::string& dir, pid_t pid) noexcept {
  return boot::record_port_holder(dir.c_str(), pid);
}

pid_t recorded_port_holder(const char* holder) noexcept { return boot::recorded_port_holder(holder); }

bool process_exists(pid_t pid) noexcept { return boot::process_exists(pid); }

void forget_port_holder(const std::string& dir, pid_t pid) noexcept {
  boot::forget_port_holder(dir.c_str(), pid);
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
