// The private registry of process endpoints (see registry.hpp).
#include "registry.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

// A socket that refuses connections is stale only once it is older than this: between
// bind and listen a starting process refuses too.
constexpr std::time_t kRefusingGraceSeconds = 5;
// How many alternatives to a registry directory another user took (registry_root).
constexpr int kFallbacks = 8;

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// mkdir -m 0700 unless it exists; then insist it is ours and private.
void make_private_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create the registry directory " + dir + ": " +
                             std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    throw std::runtime_error("cannot inspect " + dir + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw std::runtime_error("the registry " + dir + " is not a directory");
  if (st.st_uid != ::geteuid())
    throw std::runtime_error("the registry directory " + dir + " belongs to uid " +
                             std::to_string(st.st_uid) + ", not to this user");
  if ((st.st_mode & 077) != 0)
    throw std::runtime_error("the registry directory " + dir + " has mode " + octal(st.st_mode) +
                             ": others could reach this process's heap; chmod 700 it");
}

// XDG_RUNTIME_DIR as it was at start. Read once, before main (read_registry_environment):
// getenv on liveheap's thread beside the host's setenv reads a freed environment (git
// crashed so), and a forked child that clears its environment still meets its group.
const std::string& runtime_dir() {
  static const std::string dir = [] {
    const char* value = std::getenv("XDG_RUNTIME_DIR");
    return std::string(value != nullptr ? value : "");
  }();
  return dir;
}

// Where the user's registry would be without anyone in the way.
std::string registry_base() {
  const char* runtime = runtime_dir().c_str();
  if (runtime[0] == '/') {
    struct stat st {};
    if (::stat(runtime, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
        ::access(runtime, W_OK | X_OK) == 0)
      return std::string(runtime) + "/liveheap";
  }
  return "/tmp/liveheap-" + std::to_string(::geteuid());
}

// The registry: the base, or where another user took it (in /tmp anyone may create any
// name first), the first of "<base>.1" ... "<base>.<kFallbacks>" that is or can be made
// ours and private. Every process of the user walks the same list in the same order, so
// they still meet. A foreign or open directory is skipped, never "fixed".
std::string registry_root() {
  const std::string base = registry_base();
  std::string first_reason;
  for (int k = 0; k <= kFallbacks; ++k) {
    const std::string dir = k == 0 ? base : base + "." + std::to_string(k);
    try {
      make_private_dir(dir);
      return dir;
    } catch (const std::runtime_error& e) {
      if (k == 0) first_reason = e.what();
    }
  }
  throw std::runtime_error(first_reason + " (and " + base + ".1 to ." +
                           std::to_string(kFallbacks) + " are taken too)");
}

// "127.0.0.1:8080" -> "127.0.0.1-8080": a file name whatever the host is spelled with.
std::string group_name(std::string_view address) {
  std::string name;
  for (const char c : address) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c == '.' || c == '-';
    name += c == ':' ? '-' : plain ? c : '_';
  }
  if (name.empty() || name.front() == '.') name.insert(0, "_");
  return name;
}

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
// descriptor is the host's to have.
class Listing {
 public:
  explicit Listing(const std::string& dir) : dir_(::opendir(dir.c_str())) {}
  ~Listing() {
    if (dir_ != nullptr) ::closedir(dir_);
  }
  Listing(const Listing&) = delete;
  Listing& operator=(const Listing&) = delete;
  // The next entry's name, or nullptr at the end (or when the directory could not be opened).
  const char* next() {
    const dirent* entry = dir_ == nullptr ? nullptr : ::readdir(dir_);
    return entry == nullptr ? nullptr : entry->d_name;
  }

 private:
  DIR* dir_;
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

void read_registry_environment() { (void)runtime_dir(); }

std::string open_registry(std::string_view address) {
  const std::string root = registry_root();
  const std::string dir = root + "/" + group_name(address);
  make_private_dir(dir);
  return dir;
}

std::string socket_path(const std::string& dir, pid_t pid) {
  std::string path = dir + "/" + std::to_string(pid) + ".sock";
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    throw std::runtime_error("the registry path " + path + " is too long for a Unix socket");
  return path;
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
  try {
    // A link beside it first, renamed over the record: readers never see a half-made one.
    const std::string target = std::to_string(pid);
    const std::string temporary = dir + "/holder." + target;
    ::unlink(temporary.c_str());
    if (::symlink(target.c_str(), temporary.c_str()) != 0) return false;
    if (::rename(temporary.c_str(), holder_path(dir).c_str()) == 0) return true;
    ::unlink(temporary.c_str());
  } catch (...) {
    // Out of memory: no record, and the others stop retrying once it is missed.
  }
  return false;
}

pid_t recorded_port_holder(const char* holder) noexcept {
  char target[24];
  const ssize_t n = ::readlink(holder, target, sizeof target);
  if (n <= 0 || n >= static_cast<ssize_t>(sizeof target)) return 0;
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(target, target + n, pid);
  return ec == std::errc() && end == target + n && pid > 0 ? pid : 0;
}

bool process_exists(pid_t pid) noexcept { return pid > 0 && alive(pid); }

void forget_port_holder(const std::string& dir, pid_t pid) noexcept {
  try {
    const std::string holder = holder_path(dir);
    const pid_t recorded = recorded_port_holder(holder.c_str());
    if (recorded != 0 && (recorded == pid || !alive(recorded))) ::unlink(holder.c_str());
  } catch (...) {
  }
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
