// Finding, starting and asking liveheap-symbolizer (symbolizer_process.hpp).
#include "symbolizer_process.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "start_environment.hpp"

namespace liveheap::symbolize {
namespace {

constexpr const char* kExecutable = "liveheap-symbolizer";
constexpr std::chrono::seconds kStartTimeout{5};
constexpr int kSendTimeoutS = 10;
// The first answer about a big library (libpython's debug information) takes seconds.
constexpr int kReceiveTimeoutS = 60;
constexpr std::uint64_t kMaxReplyBytes = 1ull << 30;

// LIVEHEAP_SYMBOLIZER, read as the library loads: getenv on a liveheap thread later could
// race the host's setenv. The preload library's full part is loaded later, maybe on a
// thread of liveheap's beside the host's: it reads the copy of the variables the preload
// library made at start (boot/start_environment.hpp).
char g_override[4096];
bool g_override_too_long = false;
[[gnu::constructor]] void read_symbolizer_override() {
  const char* value = boot::start_environment_captured() ? boot::start_env("LIVEHEAP_SYMBOLIZER")
                                                         : std::getenv("LIVEHEAP_SYMBOLIZER");
  if (value == nullptr) return;
  if (std::strlen(value) < sizeof g_override) std::strcpy(g_override, value);
  else g_override_too_long = true;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// LIVEHEAP_SYMBOLIZER; else next to the library (or program) this code is in; else, in a
// build tree, the one built with it.
std::string find_executable() {
  if (g_override_too_long) throw std::runtime_error("LIVEHEAP_SYMBOLIZER is longer than a path may be");
  if (g_override[0] != '\0') {
    if (executable(g_override)) return g_override;
    throw std::runtime_error("LIVEHEAP_SYMBOLIZER=" + std::string(g_override) + " is not an executable file");
  }
  Dl_info info{};
  std::string next_to;
  if (dladdr(reinterpret_cast<void*>(&find_executable), &info) != 0 && info.dli_fname != nullptr) {
    next_to = directory_of(info.dli_fname);
    if (executable(next_to + "/" + kExecutable)) return next_to + "/" + kExecutable;
  }
#ifdef LIVEHEAP_SYMBOLIZER_IN_BUILD
  if (executable(LIVEHEAP_SYMBOLIZER_IN_BUILD)) return LIVEHEAP_SYMBOLIZER_IN_BUILD;
#endif
  throw std::runtime_error(std::string(kExecutable) + " is not in " + next_to +
                           " (LIVEHEAP_SYMBOLIZER may name it)");
}

// One per user, protocol and executable: every process of the user that uses this
// installation shares one, and another installation (another version, or the one
// LIVEHEAP_SYMBOLIZER names) has its own. The abstract namespace needs no file, and a
// symbolizer that exits leaves nothing behind.
std::string socket_name(const std::string& executable) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a: the same in every process
  for (const char c : executable) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%016llx", static_cast<unsigned long long>(hash));
  return "liveheap-symbolizer.1." + std::to_string(::geteuid()) + suffix;
}

// A connected socket, or -1 when nothing listens.
int connect_to(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  socklen_t length = 0;
  const sockaddr_un address = wire::abstract_address(name, length);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), length) == 0) return fd;
  ::close(fd);
  return -1;
}

struct Exec {
  const char* path;
  char* const* argv;
};

// The intermediate process (start()): shares the host's memory, has no exit signal, never
// execs. It makes the symbolizer with a raw fork (no atfork handler of the host or of
// liveheap runs; the copy only execs) and exits at once, leaving it to init.
int start_orphan(void* arg) {
  const auto* exec = static_cast<const Exec*>(arg);
  const long pid = ::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid == 0) {
    char* const no_environment[] = {nullptr};
    ::execve(exec->path, exec->argv, no_environment);
    ::_exit(127);
  }
  ::_exit(pid < 0 ? 1 : 0);
}

// Whether this process adopts orphans (PID 1 of a container, a subreaper): the symbolizer
// would be its child, and its exit a SIGCHLD the host never expected.
bool adopts_orphans() {
  int subreaper = 0;
  return ::getpid() == 1 || (::prctl(PR_GET_CHILD_SUBREAPER, &subreaper) == 0 && subreaper != 0);
}

// Starts `path --socket NAME --detach` as nobody's child the host knows. A process cloned
// with no exit signal sends its parent no SIGCHLD and is invisible to wait()/waitpid(-1)
// without __WALL, but exec gives every process SIGCHLD back; so the clone does not exec:
// it forks the symbolizer and exits (reaped here), and the symbolizer, orphaned, is init's.
// Where the host adopts orphans, it would be the host's again: it is told so (--stay-with)
// and never exits while the host lives, re-executing itself when idle to give its memory
// back instead.
void start(const std::string& path, const std::string& name) {
  std::string stay = std::to_string(::getpid());
  std::string a0 = path, a1 = "--socket", a2 = name, a3 = "--detach", a4 = "--stay-with";
  char* const argv[] = {a0.data(),   a1.data(), a2.data(), a3.data(), adopts_orphans() ? a4.data() : nullptr,
                        stay.data(), nullptr};
  const Exec exec{path.c_str(), argv};
  constexpr std::size_t kStack = 64 * 1024;
  void* stack =
      ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) throw std::runtime_error("no memory to start " + path);
  // The clone shares this memory: no signal handler of the host may run in it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::clone(start_orphan, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK,
                            const_cast<Exec*>(&exec));
  const int clone_errno = errno;
  int status = 0;
  if (pid > 0)
    while (::waitpid(pid, &status, __WCLONE) < 0 && errno == EINTR) {
    }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::munmap(stack, kStack);
  if (pid < 0) throw std::runtime_error("could not start " + path + ": " + std::strerror(clone_errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("could not fork to start " + path);
}

int connect_starting(const std::string& executable, const std::string& name) {
  if (const int fd = connect_to(name); fd >= 0) return fd;
  start(executable, name);
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  for (;;) {
    if (const int fd = connect_to(name); fd >= 0) return fd;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(std::string(kExecutable) + " was started but did not listen within 5 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// The abstract namespace has no permissions: whoever listens first has the name.
void check_peer(int fd, const std::string& name) {
  ucred peer{};
  socklen_t length = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0)
    throw std::runtime_error("cannot tell who holds @" + name);
  if (peer.uid != ::geteuid())
    throw std::runtime_error("@" + name + " is held by uid " + std::to_string(peer.uid) + ", not this user");
}

struct Descriptor {
  int fd;
  ~Descriptor() { ::close(fd); }
};

}  // namespace

wire::Reply ask_symbolizer_process(const wire::Request& request) {
  const std::string executable = find_executable();
  const std::string name = socket_name(executable);
  const std::string body = wire::encode(request);
  // Twice: a symbolizer that was exiting (idle) or was killed may close a connection it took.
  for (int attempt = 0;; ++attempt) {
    const Descriptor connection{connect_starting(executable, name)};
    check_peer(connection.fd, name);
    const timeval send_timeout{kSendTimeoutS, 0}, receive_timeout{kReceiveTimeoutS, 0};
    ::setsockopt(connection.fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    ::setsockopt(connection.fd, SOL_SOCKET, SO_RCVTIMEO, &receive_timeout, sizeof receive_timeout);
    std::optional<std::string> reply;
    errno = 0;
    if (wire::write_message(connection.fd, body)) reply = wire::read_message(connection.fd, kMaxReplyBytes);
    const bool timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
    if (reply) {
      wire::Reply decoded = wire::decode_reply(*reply);
      if (!decoded.error.empty())
        throw std::runtime_error(std::string(kExecutable) + " refused: " + decoded.error);
      if (decoded.answers.size() != request.queries.size())
        throw std::runtime_error(std::string(kExecutable) + " answered " +
                                 std::to_string(decoded.answers.size()) + " of " +
                                 std::to_string(request.queries.size()) + " addresses");
      return decoded;
    }
    if (timed_out) throw std::runtime_error(std::string(kExecutable) + " did not answer within 60 s");
    if (attempt > 0)
      throw std::runtime_error(std::string(kExecutable) + " closed the connection without answering");
  }
}

}  // namespace liveheap::symbolize
