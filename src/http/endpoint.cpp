// A process's own endpoint: the port while it holds it, its socket in the registry always
// (see endpoint.hpp).
#include "endpoint.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include "blocked_signals.hpp"
#include "fork_fds.hpp"
#include "liveheap/tracker.hpp"
#include "listen_address.hpp"
#include "registry.hpp"
#include "serve.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace net = boost::asio;

constexpr auto kPortRetry = std::chrono::seconds(1);
// A child forked without exec waits this long before registering: most children exec
// at once (a shell's commands, popen), and then there is nothing to register.
constexpr auto kForkChildDelay = std::chrono::milliseconds(50);
// The history and peak recorders' threads start once the process has served this long
// (Options::defer_recorders): a command that runs for milliseconds never pays for them.
constexpr auto kRecordersDelay = std::chrono::milliseconds(100);

// Everything lives as long as the process: never destroyed, since an exit handler and the
// endpoint's thread may still use it while static destructors run.
struct State {
  Config config;
  std::string host;
  std::uint16_t port = 0;
  std::string address;  // "host:port", the group's name

  pid_t state_pid = 0;   // the process this state is set up for (not a vfork child of it)
  bool forked = false;   // state_pid is a child forked without exec
  std::mutex mutex;      // guards what follows
  Server* server = nullptr;
  // The registry's group directory: once registered, or in a forked child not yet
  // registered, its parent's (where bind_before_uid_change binds).
  std::string dir;
  std::string socket;    // our socket in it
  pid_t registered_pid = 0;  // the process that bound `socket`
  // A socket bound and listening before a uid change, for the server to adopt; or -1.
  int unadopted_fd = -1;
  bool exiting = false;
  std::unique_ptr<net::steady_timer> retry;
  std::unique_ptr<net::steady_timer> recorders;
};
State* g_state = nullptr;

void say(const std::string& line) { std::fprintf(stderr, "liveheap: %s\n", line.c_str()); }

// Binds the port; false (quietly) while another process holds it.
bool try_port(State& s, bool announce_busy) {
  try {
    const std::uint16_t port = s.server->listen_tcp(resolve_tcp(s.host, s.port));
    say("serving http://" + host_header_name(s.host) + ":" + std::to_string(port) + s.config.prefix + "/");
    return true;
  } catch (const boost::system::system_error& e) {
    if (e.code() == boost::system::errc::address_in_use) {
      if (announce_busy)
        say(s.address + " is taken; this process (pid " + std::to_string(::getpid()) +
            ") is reached through its holder with ?pid=, and takes the port if it frees up");
      return false;
    }
    say("admin server not started: cannot serve on " + s.address + ": " + e.code().message());
    return true;  // nothing to retry
  }
}

void schedule_retry(State& s) {
  s.retry->expires_after(kPortRetry);
  s.retry->async_wait([&s](boost::system::error_code ec) {
    if (ec) return;
    IgnoreScope ignore;
    if (!try_port(s, false)) schedule_retry(s);
  });
}

// The socket bound before a uid change, served from now on; false when this process has
// not registered yet.
bool adopt_bound_socket(State& s) {
  std::lock_guard lock(s.mutex);
  if (s.registered_pid != ::getpid()) return false;
  if (s.unadopted_fd >= 0 && s.server != nullptr) {
    const int fd = std::exchange(s.unadopted_fd, -1);
    try {
      s.server->adopt_local(fd);
    } catch (const std::exception& e) {
      say(std::string("this process is not reachable through the registry: ") + e.what());
    }
  }
  return true;
}

void register_socket(State& s) {
  IgnoreScope ignore;
  if (adopt_bound_socket(s)) return;
  // A forked child registers where its parent did: the program may have changed its
  // environment since (nginx keeps only TZ), and with it where open_registry looks.
  std::string inherited;
  {
    std::lock_guard lock(s.mutex);
    inherited = s.dir;
  }
  // A second try when the group directory vanished between creating it and binding in it
  // (the last process of the group removes it as it exits, unregister_at_exit), or when
  // the inherited one is not ours to bind in: in the registry open_registry finds.
  for (int attempt = 1;; ++attempt) {
    const bool in_inherited = attempt == 1 && !inherited.empty();
    try {
      const std::string dir = in_inherited ? inherited : open_registry(s.address);
      const std::string path = socket_path(dir, ::getpid());
      std::lock_guard lock(s.mutex);
      if (s.exiting) return;  // too late: nothing would remove it
      if (s.registered_pid == ::getpid()) break;  // bound meanwhile, before a uid change
      s.server->listen_local(path);
      s.dir = dir;
      s.socket = path;
      s.registered_pid = ::getpid();
      return;
    } catch (const std::exception& e) {
      const auto* bind = dynamic_cast<const boost::system::system_error*>(&e);
      if (attempt == 1 && bind != nullptr &&
          (bind->code() == boost::system::errc::no_such_file_or_directory || in_inherited))
        continue;
      say(std::string("this process is not reachable through the registry: ") + e.what());
      return;
    }
  }
  adopt_bound_socket(s);
}

// In a forked child that has no socket yet: binds one in the group directory of its
// parent's user. Throws std::runtime_error, std::bad_alloc.
void bind_inherited(State& s) {
  const pid_t pid = ::getpid();
  if (!s.forked || s.state_pid != pid) return;  // not forked, or a vfork child of this one
  std::lock_guard lock(s.mutex);
  if (s.exiting || s.registered_pid == pid) return;
  // The parent's directory; where it had not registered yet, the one it registers in,
  // since until the change this process has its parent's user ids.
  if (s.dir.empty()) s.dir = open_registry(s.address);
  const std::string path = socket_path(s.dir, pid);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());  // a socket file left by an earlier process with our pid
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    ::close(fd);
    return;  // the endpoint's thread registers the usual way
  }
  // Until the server adopts it, a connection waits in the backlog: the holder lists us.
  track_fork_fd(fd);
  s.unadopted_fd = fd;
  s.socket = path;
  s.registered_pid = pid;
  // A server already running (its registration failed or is still queued) adopts it now;
  // a child's server, started after the fork delay, adopts it as it registers.
  if (s.server != nullptr) net::post(s.server->io(), [&s] {
    IgnoreScope ignore;
    adopt_bound_socket(s);
  });
}

void unregister_at_exit() {
  State& s = *g_state;
  std::lock_guard lock(s.mutex);
  s.exiting = true;
  if (s.registered_pid != ::getpid()) return;
  ::unlink(s.socket.c_str());
  // The group's directory goes with its last process (rmdir fails while others are in it).
  ::rmdir(s.dir.c_str());
}

// In this process: a Server, the port (or a retry), the socket (on the server's thread).
void serve(State& s, bool announce_busy) {
  IgnoreScope ignore;
  {
    std::lock_guard lock(s.mutex);
    s.server = new Server(s.config);  // never deleted: see State
    s.retry = std::make_unique<net::steady_timer>(s.server->io());
    s.recorders = std::make_unique<net::steady_timer>(s.server->io(), kRecordersDelay);
  }
  if (!try_port(s, announce_busy)) schedule_retry(s);
  net::post(s.server->io(), [&s] { register_socket(s); });
  s.recorders->async_wait([](boost::system::error_code ec) {
    if (ec) return;
    IgnoreScope ignore;
    try {
      start_recorders();
    } catch (...) {
      // Out of threads or memory: no history or peak in this process, it runs on.
    }
  });
}

// fork() without exec: the parent's server is the parent's (its threads do not exist
// here, its sockets are closed); this process gets its own after a moment.
void after_fork_in_child() {
  State& s = *g_state;
  new (&s.mutex) std::mutex;  // a thread of the parent may have held it
  s.server = nullptr;         // leaked with its io_context
  (void)s.retry.release();    // belongs to that io_context
  (void)s.recorders.release();
  // The parent's directory stays: a child that drops privileges binds in it first
  // (bind_before_uid_change), so that the group's holder still reaches it.
  s.state_pid = ::getpid();
  s.forked = true;
  s.unadopted_fd = -1;  // the parent's, closed by fork_fds
  try {
    // Made on the thread that forked, which may be the host's: the mask is set here.
    const engine::BlockedSignals quiet;
    std::thread([] {
      std::this_thread::sleep_for(kForkChildDelay);
      try {
        serve(*g_state, false);
      } catch (...) {
        // Out of threads or memory: this child is simply not reachable.
      }
    }).detach();
  } catch (...) {
  }
}

}  // namespace

void start_process_endpoint(Config config, const std::string& host, std::uint16_t port) {
  IgnoreScope ignore;
  try {
    // The bound address is a Host a browser may use for us; an IPv6 one is written "[addr]".
    config.allowed_hosts.push_back(host_header_name(host));
    if (config.metrics_path.empty()) config.metrics_path = "/metrics";  // where scrapers look
    g_state = new State;
    g_state->config = std::move(config);
    g_state->host = host;
    g_state->port = port;
    g_state->address = host_header_name(host) + ":" + std::to_string(port);
    g_state->state_pid = ::getpid();
    std::atexit(unregister_at_exit);
    on_fork_child(after_fork_in_child);
    serve(*g_state, true);
  } catch (const std::exception& e) {
    say(std::string("admin server not started: ") + e.what());
  }
}

std::optional<std::string> process_registry() {
  if (g_state == nullptr) return std::nullopt;
  std::lock_guard lock(g_state->mutex);
  if (g_state->registered_pid != ::getpid() || g_state->dir.empty()) return std::nullopt;
  return g_state->dir;
}

void bind_before_uid_change() noexcept {
  State* s = g_state;
  if (s == nullptr) return;
  // Once per process: later calls (setgid, setuid, setgroups in a row) cost one load.
  static std::atomic<pid_t> tried{0};
  const pid_t pid = ::getpid();
  if (tried.load(std::memory_order_relaxed) == pid || tried.exchange(pid) == pid) return;
  const int saved = errno;
  try {
    IgnoreScope ignore;
    bind_inherited(*s);
  } catch (...) {
    // Out of memory, or a path too long for a socket: registered the usual way, or not.
  }
  errno = saved;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
