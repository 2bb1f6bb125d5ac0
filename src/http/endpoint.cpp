// A process's own endpoint: the port while it holds it, its socket in the registry always
// (see endpoint.hpp).
#include "endpoint.hpp"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/system_error.hpp>

#include "blocked_signals.hpp"
#include "fork_fds.hpp"
#include "liveheap/tracker.hpp"
#include "listen_address.hpp"
#include "process_exit_wait.hpp"
#include "own_lines.hpp"
#include "registry.hpp"
#include "serve.hpp"
#include "uid_change_hook.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace net = boost::asio;

constexpr auto kPortRetry = std::chrono::seconds(1);
// A process of the group that does not hold the port sleeps until the holder exits
// (process_exit_wait.hpp), then tries the port; and besides every kHolderCheck, for a record
// left by a killed holder whose pid another process now has. Without pidfds (kernels before
// 5.3) it tries the port every kPortRetry instead.
constexpr auto kHolderCheck = std::chrono::seconds(30);
// A process that finds the port taken and no live holder recorded looks once more after
// this: the holder of a group started a moment before may be between listen and its record.
constexpr auto kStartRetry = std::chrono::milliseconds(200);
// How many tries without a live holder before the port is left to whoever has it: once at
// start (above); after the holder of the group was seen, seconds enough for it to finish
// exiting (it removes its record before the kernel closes its socket).
constexpr int kStartTries = 1;
constexpr int kTakeoverTries = 5;
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
  std::string address;              // "host:port", the group's name
  net::ip::tcp::endpoint endpoint;  // resolved once, at start

  pid_t state_pid = 0;  // the process this state is set up for (not a vfork child of it)
  bool forked = false;  // state_pid is a child forked without exec
  std::mutex mutex;     // guards what follows
  Server* server = nullptr;
  // The registry's group directory: once registered, or in a forked child not yet
  // registered, its parent's (where bind_before_uid_change binds).
  std::string dir;
  std::string socket;        // our socket in it
  pid_t registered_pid = 0;  // the process that bound `socket`
  // A socket bound and listening before a uid change, for the server to adopt; or -1.
  int unadopted_fd = -1;
  boot::ForkFd unadopted_tracked;  // its fork_fds entry, handed to the server with it
  bool exiting = false;
  bool holding = false;  // this process listens on the port
  std::unique_ptr<net::steady_timer> retry;
  std::unique_ptr<net::steady_timer> recorders;
  ProcessExitWait holder_exit;  // the holder's, while another holds the port

  // The endpoint's thread's alone (and the forked child's before it has one).
  bool announce = true;      // a process the user started (not a fork): may say a line
  bool port_taken = false;   // the first try found the port taken
  bool seen_holder = false;  // a live holder of the group was recorded once
  int tries_without_holder = 0;
  std::string holder;  // holder_path(dir), once registered
};
State* g_state = nullptr;

// A configuration mistake: one line on stderr (boot/own_lines.hpp).
void say(const std::string& line) { boot::say_configuration_error(line.c_str()); }

// Listens on the port; the errno of a failure (EADDRINUSE while another process holds it),
// 0 on success. Never throws, formats nothing: it runs every second while the port is taken.
int listen_on_port(State& s, std::uint16_t* bound = nullptr) noexcept {
  boost::system::error_code ec;
  const std::uint16_t port = s.server->listen_tcp(s.endpoint, ec);
  if (bound != nullptr) *bound = port;
  return ec ? ec.value() : 0;
}

// The port is ours: recorded for the group once this process is registered (the first
// try is made before registering; register_socket records it then).
void hold(State& s) noexcept {
  std::lock_guard lock(s.mutex);
  s.holding = true;
  if (!s.exiting && s.registered_pid == ::getpid() && !s.dir.empty()) record_port_holder(s.dir, ::getpid());
}

void schedule_retry(State& s, std::chrono::milliseconds after) noexcept;
void wait_for_holder(State& s, pid_t holder) noexcept;

// What processes killed without their exit handlers left in the registry, removed (see
// sweep_registry): in our group, and with `other_groups` in the others. On the endpoint's
// thread, once registered. Throws std::bad_alloc only.
void sweep(State& s, bool other_groups) {
  std::string dir;
  {
    std::lock_guard lock(s.mutex);
    if (s.registered_pid != ::getpid() || s.exiting) return;
    dir = s.dir;
  }
  sweep_registry(dir, other_groups);
}

// The port is taken: retry when the live liveheap of this group that holds it exits (one of
// the group takes over), or a few times when none is recorded (it is exiting, or starting);
// else something else holds the port, and it is left alone. On the endpoint's thread: a
// readlink and a kill, no message.
void port_is_taken(State& s) noexcept {
  const pid_t holder = s.holder.empty() ? 0 : recorded_port_holder(s.holder.c_str());
  // A holder seen to exit is gone, though a zombie until its parent reaps it.
  if (holder != 0 && holder != ::getpid() && holder != s.holder_exit.exited() && process_exists(holder)) {
    s.seen_holder = true;
    s.tries_without_holder = 0;
    return wait_for_holder(s, holder);
  }
  s.holder_exit.stop();
  if (s.tries_without_holder < (s.seen_holder ? kTakeoverTries : kStartTries)) {
    ++s.tries_without_holder;
    return schedule_retry(s, s.seen_holder ? std::chrono::milliseconds(kPortRetry) : kStartRetry);
  }
  // Another program holds the port: it is left alone, silently (a line on the host's
  // stderr could break a tool that reads it; GET /processes through the registry, or the
  // port's own answer, tells the operator).
}

// The port once more: held from now on, or taken still.
void try_port(State& s) noexcept {
  IgnoreScope ignore;
  const int error = listen_on_port(s);
  if (error != EADDRINUSE) s.holder_exit.stop();
  if (error == 0) {
    hold(s);  // quietly: a child that takes over says nothing
    try {
      sweep(s, false);  // the holder before may have been killed: what it left goes
    } catch (...) {
    }
    return;
  }
  if (error == EADDRINUSE) port_is_taken(s);
  // Anything else (out of descriptors, say): no more tries, quietly.
}

void schedule_retry(State& s, std::chrono::milliseconds after) noexcept {
  try {
    s.retry->expires_after(after);
    s.retry->async_wait([&s](boost::system::error_code ec) {
      if (!ec) try_port(s);
    });
  } catch (...) {
    // Out of memory: no more tries.
  }
}

// Until `holder` exits, then the port (or every kHolderCheck); every kPortRetry where no
// pidfd can be had.
void wait_for_holder(State& s, pid_t holder) noexcept {
  if (s.holder_exit.waiting_for() != holder) {
    std::function<void()> on_exit;
    try {
      on_exit = [&s] {
        s.retry->cancel();
        try_port(s);
      };
    } catch (...) {
      return schedule_retry(s, kPortRetry);  // out of memory
    }
    if (!s.holder_exit.start(s.server->io(), holder, std::move(on_exit)))
      return schedule_retry(s, kPortRetry);
  }
  schedule_retry(s, kHolderCheck);
}

// The socket bound before a uid change, served from now on; false when this process has
// not registered yet. Quiet: only a forked child has such a socket.
bool adopt_bound_socket(State& s) noexcept {
  std::lock_guard lock(s.mutex);
  if (s.registered_pid != ::getpid()) return false;
  if (s.unadopted_fd >= 0 && s.server != nullptr) {
    const int fd = std::exchange(s.unadopted_fd, -1);
    boost::system::error_code ec;
    // On failure (out of memory) the entry is freed and the socket closed: not reachable.
    s.server->adopt_local(fd, std::move(s.unadopted_tracked), ec);
  }
  return true;
}

// Into the registry: in the inherited group directory (a forked child's), else the one
// open_registry finds. Throws std::bad_alloc only.
void register_in_registry(State& s) {
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
    std::string dir;
    std::string path;
    try {
      dir = in_inherited ? inherited : open_registry(s.address);
      path = socket_path(dir, ::getpid());
    } catch (const std::runtime_error& e) {
      if (in_inherited) continue;
      // A registry others could open, say: the user's configuration, said once by the
      // process the user started (a forked child's parent said it already).
      if (s.announce) say(std::string("this process is not reachable through the registry: ") + e.what());
      return;
    }
    std::lock_guard lock(s.mutex);
    if (s.exiting) return;                      // too late: nothing would remove it
    if (s.registered_pid == ::getpid()) break;  // bound meanwhile, before a uid change
    boost::system::error_code ec;
    s.server->listen_local(path, ec);
    if (!ec) {
      s.dir = std::move(dir);
      s.socket = std::move(path);
      s.registered_pid = ::getpid();
      return;
    }
    if (attempt == 1 && (ec.value() == ENOENT || in_inherited)) continue;
    return;  // quietly: a failure here is no configuration of the user's
  }
  adopt_bound_socket(s);
}

// On the endpoint's thread: into the registry, then (the holder known) retry the port or not.
void register_socket(State& s) {
  IgnoreScope ignore;
  try {
    register_in_registry(s);
    {
      std::lock_guard lock(s.mutex);
      if (s.registered_pid == ::getpid()) {
        s.holder = holder_path(s.dir);
        if (s.holding && !s.exiting) record_port_holder(s.dir, ::getpid());
      }
    }
    // A process the user started also sweeps the other groups (a forked child's parent
    // did): groups whose processes were all killed leave nothing behind for long.
    sweep(s, !s.forked);
  } catch (...) {
    // Out of memory: not reachable through the registry.
  }
  if (s.port_taken) port_is_taken(s);
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
  std::string path = socket_path(s.dir, pid);
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
  // Nothing from here on throws: the socket and its entry are the state's before the post.
  s.unadopted_tracked = boot::ForkFd(fd);
  s.unadopted_fd = fd;
  s.socket = std::move(path);
  s.registered_pid = pid;
  // A server already running (its registration failed or is still queued) adopts it now;
  // a child's server, started after the fork delay, adopts it as it registers.
  if (s.server != nullptr)
    net::post(s.server->io(), [&s] {
      IgnoreScope ignore;
      adopt_bound_socket(s);
    });
}

void unregister_at_exit() {
  State& s = *g_state;
  std::lock_guard lock(s.mutex);
  s.exiting = true;
  if (s.registered_pid != ::getpid()) return;
  // The holder's record (the others take over once its socket closes with the process), or
  // one a killed holder left, which would keep the group's directory.
  forget_port_holder(s.dir, ::getpid());
  ::unlink(s.socket.c_str());
  // The group's directory goes with its last process (rmdir fails while others are in it).
  ::rmdir(s.dir.c_str());
}

// The Server and its timers; the recorders start after `recorders_delay`.
void make_server(State& s, std::chrono::nanoseconds recorders_delay) {
  std::lock_guard lock(s.mutex);
  s.server = new Server(s.config);  // never deleted: see State
  s.retry = std::make_unique<net::steady_timer>(s.server->io());
  s.recorders = std::make_unique<net::steady_timer>(s.server->io(), recorders_delay);
}

// On the server's thread: into the registry, then the recorders when due.
void register_then_record(State& s) {
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

// In this process: a Server, the port (or a retry), the socket (on the server's thread).
// The first try is made here, on the caller's thread, so that the port answers as soon as
// the process runs; whether to retry is decided once registered (the registry says who holds).
void serve(State& s) {
  IgnoreScope ignore;
  make_server(s, kRecordersDelay);
  std::uint16_t bound = 0;
  const int error = listen_on_port(s, &bound);
  if (error == 0) {
    hold(s);
    if (s.announce)  // news, not a mistake: only where LIVEHEAP_LOG says
      boot::log_line(
          ("serving http://" + host_header_name(s.host) + ":" + std::to_string(bound) + s.config.prefix + "/")
              .c_str());
  } else if (error == EADDRINUSE) {
    s.port_taken = true;
  } else if (s.announce) {  // a port this user may not bind, an address not of this host
    say("admin server not started: cannot serve on " + s.address + ": " +
        boost::system::error_code(error, boost::system::system_category()).message());
  }
  register_then_record(s);
}

// What the preload library's early endpoint made (boot/early_endpoint.hpp), served from
// here on as serve() would have gone on: its port (if it holds it, else the retries a
// taken port gets), its socket in the registry (adopted as one bound before a uid change
// is), the recorders when they were due.
void serve_taken_over(State& s, boot::EarlyEndpoint& e) {
  IgnoreScope ignore;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const std::int64_t left =
      e.recorders_due_ns - (static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec);
  make_server(s, std::chrono::nanoseconds(std::max<std::int64_t>(left, 0)));
  if (e.tcp_fd >= 0) {
    boost::system::error_code ec;
    s.server->adopt_tcp(std::exchange(e.tcp_fd, -1), std::move(e.tcp_tracked), ec);
    if (!ec) hold(s);
  }
  if (e.local_fd >= 0) {
    std::lock_guard lock(s.mutex);
    s.unadopted_fd = std::exchange(e.local_fd, -1);
    s.unadopted_tracked = std::move(e.local_tracked);
  }
  register_then_record(s);
}

void* serve_in_child(void*) {
  ::usleep(std::chrono::duration_cast<std::chrono::microseconds>(kForkChildDelay).count());
  try {
    serve(*g_state);
  } catch (...) {
    // Out of threads or memory: this child is simply not reachable.
  }
  return nullptr;
}

// fork() without exec, in the child's atfork handler: the parent's server is the parent's
// (its threads do not exist here, its sockets are closed); this process gets its own after
// a moment. Nothing here throws, allocates or formats: a thread of the parent may have held
// any lock.
void after_fork_in_child() {
  State& s = *g_state;
  new (&s.mutex) std::mutex;  // a thread of the parent may have held it
  s.server = nullptr;         // leaked with its io_context
  (void)s.retry.release();    // belongs to that io_context
  (void)s.recorders.release();
  // The parent's pidfd stays open here, as that io_context's own descriptors do (all
  // close-on-exec): nothing here may read /proc to tell it from what the program opened
  // under its number since.
  s.holder_exit.abandon();
  // The parent's directory stays: a child that drops privileges binds in it first
  // (bind_before_uid_change), so that the group's holder still reaches it.
  s.state_pid = ::getpid();
  s.forked = true;
  s.unadopted_fd = -1;                      // the parent's, closed by fork_fds
  new (&s.unadopted_tracked) boot::ForkFd;  // its entry is free here already: abandoned, not reset
  s.holder.clear();
  s.holding = false;
  s.announce = false;  // the parent said whatever was to be said
  s.port_taken = false;
  s.seen_holder = false;
  s.tries_without_holder = 0;
  // Made on the thread that forked, which may be the host's: the mask is set here.
  const engine::BlockedSignals quiet;
  pthread_t thread;
  if (::pthread_create(&thread, nullptr, serve_in_child, nullptr) == 0) ::pthread_detach(thread);
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
    read_registry_environment();  // before the endpoint's thread runs: see registry.hpp
    // Resolved and checked once: the tries that follow (a retry every second, a forked
    // child's) only bind.
    try {
      g_state->endpoint = resolve_tcp(host, port);
    } catch (const boost::system::system_error& e) {
      throw std::runtime_error("cannot serve on " + g_state->address + ": " + e.code().message());
    }
    check_listen_policy(g_state->config, g_state->endpoint.address(), g_state->endpoint.address().to_string(),
                        port);
    std::atexit(unregister_at_exit);
    boot::on_fork_child(after_fork_in_child);
    boot::set_before_uid_change(bind_before_uid_change);
    serve(*g_state);
  } catch (const std::exception& e) {
    say(std::string("admin server not started: ") + e.what());
  }
}

void take_over_process_endpoint(Config config, boot::EarlyEndpoint& early) {
  IgnoreScope ignore;
  try {
    config.allowed_hosts.push_back(host_header_name(early.listen.host));
    if (config.metrics_path.empty()) config.metrics_path = "/metrics";
    g_state = new State;
    State& s = *g_state;
    s.config = std::move(config);
    s.host = early.listen.host;
    s.port = early.listen.port;
    s.address = early.address;
    s.state_pid = ::getpid();
    s.forked = early.forked;
    s.announce = false;  // the early endpoint said whatever was to be said
    s.port_taken = early.port_taken;
    s.dir = early.dir.text;
    if (early.registered_pid == ::getpid()) {
      s.socket = early.socket.text;
      s.registered_pid = early.registered_pid;
    }
    s.endpoint = resolve_tcp(s.host, s.port);  // a loopback literal: nothing to look up
    std::atexit(unregister_at_exit);
    boot::on_fork_child(after_fork_in_child);
    boot::set_before_uid_change(bind_before_uid_change);
    serve_taken_over(s, early);
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
