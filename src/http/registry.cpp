// The private registry of process endpoints (see registry.hpp).
#include "registry.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
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

// 0 when something accepts at `path`, else the errno of connect.
int try_connect(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return pids;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (!name.ends_with(".sock")) continue;
    pid_t pid = 0;
    const auto digits = name.substr(0, name.size() - 5);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) continue;
    const std::string path = dir + "/" + std::string(name);
    const int error = alive(pid) ? try_connect(path) : ENOENT;
    if (error == 0) pids.push_back(pid);
    else if (error == ENOENT || (error == ECONNREFUSED && old_enough(path))) ::unlink(path.c_str());
  }
  ::closedir(listing);
  std::sort(pids.begin(), pids.end());
  return pids;
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
