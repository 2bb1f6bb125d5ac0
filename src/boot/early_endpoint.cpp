// A process's endpoint before the full library is loaded (see early_endpoint.hpp). The
// steps are the full library's (http/endpoint.cpp), in libc-only code: the same sockets,
// files and lines, so that the full library can go on from wherever this one stopped.
#include "early_endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <new>
#include <utility>

#include "blocked_signals.hpp"
#include "engine.hpp"
#include "full_library.hpp"
#include "own_descriptors.hpp"
#include "own_lines.hpp"
#include "uid_change_hook.hpp"

namespace liveheap::boot {
namespace {

// As the full library's endpoint: a forked child registers after 50 ms (most exec at once),
// and the recorders start once the process has served for 100 ms.
constexpr std::int64_t kForkChildDelayNs = 50'000'000;
constexpr std::int64_t kRecordersDelayNs = 100'000'000;

enum class Phase {
  early,        // served here: sockets made, nothing else loaded
  taking_over,  // the full library is being loaded and handed the sockets
  taken_over,   // the full library's from now on (its own fork, exit and uid handlers)
  closed,       // not reachable (the full library could not be loaded)
};

struct State {
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t changed = PTHREAD_COND_INITIALIZER;  // phase left taking_over
  Phase phase = Phase::early;
  bool exiting = false;
  pid_t state_pid = 0;              // the process this state is set up for (not a vfork child)
  bool holding = false;             // listens on the port
  std::int64_t register_at_ns = 0;  // a forked child's thread registers then
  EarlyEndpoint e;
};

// Never destroyed: the exit handler and the thread may use it while static destructors run.
alignas(State) unsigned char g_storage[sizeof(State)];
State* g_state = nullptr;

// A configuration mistake: one line on stderr (own_lines.hpp).
void say(const char* format, auto... args) noexcept {
  char line[768];
  std::snprintf(line, sizeof line, format, args...);
  say_configuration_error(line);
}

std::int64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until(std::int64_t when_ns) noexcept {
  for (std::int64_t left = when_ns - now_ns(); left > 0; left = when_ns - now_ns()) {
    const timespec ts{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }
}

struct Guard {
  explicit Guard(State& s) noexcept : s(s) { pthread_mutex_lock(&s.lock); }
  ~Guard() { pthread_mutex_unlock(&s.lock); }
  State& s;
};

bool is_v6(const EarlyAddress& a) noexcept { return std::strchr(a.host, ':') != nullptr; }

// Listens on the port, close-on-exec (a program that execs would hand it to the new image,
// where no thread serves it); the descriptor, or -errno. As the full library's listener:
// plain system calls, no message (a forked child tries too).
int listen_on_port(const EarlyAddress& a, std::uint16_t* bound) noexcept {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (is_v6(a)) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(a.port);
    if (inet_pton(AF_INET6, a.host, &in6->sin6_addr) != 1) return -EINVAL;
    length = sizeof *in6;
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&storage);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(a.port);
    if (inet_pton(AF_INET, a.host, &in4->sin_addr) != 1) return -EINVAL;
    length = sizeof *in4;
  }
  // Made liveheap's (moved, marked) once it listens: most processes of a group find the
  // port taken, and their try costs no more system calls than before.
  const int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return -errno;
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      ::bind(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int error = errno;
    close_own_descriptor(fd);
    return -error;
  }
  sockaddr_storage local{};
  socklen_t local_length = sizeof local;
  *bound = a.port;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0)
    *bound = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  return own_descriptor(fd);
}

// Listens on a Unix-domain socket at `path` (a file an earlier process with our pid left
// there is replaced); the descriptor, or -errno.
int listen_local(const char* path) noexcept {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  const int fd = own_descriptor(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd < 0) return -errno;
  ::unlink(path);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    const int error = errno;
    close_own_descriptor(fd);
    return -error;
  }
  return fd;
}

// The port's try: listens, or notes that it is taken; a process the user started says
// which (the full library's words). Under the lock.
void try_port(State& s) noexcept {
  EarlyEndpoint& e = s.e;
  std::uint16_t bound = 0;
  const int fd = listen_on_port(e.listen, &bound);
  if (fd >= 0) {
    e.tcp_fd = fd;
    e.tcp_tracked = ForkFd(fd);
    s.holding = true;
    if (e.announce) {  // news, not a mistake: only where LIVEHEAP_LOG says
      char line[768];
      std::snprintf(
          line, sizeof line,
          is_v6(e.listen) ? "serving http://[%s]:%u/debug/memory/" : "serving http://%s:%u/debug/memory/",
          e.listen.host, static_cast<unsigned>(bound));
      log_line(line);
    }
  } else if (fd == -EADDRINUSE) {
    e.port_taken = true;
  } else if (e.announce) {  // a port this user may not bind
    say("admin server not started: cannot serve on %s: %s", e.address, std::strerror(-fd));
  }
}

// Into the registry: the inherited group directory (a forked child's: the program may have
// changed its environment since), else the one open_group_dir finds; a second try there
// when the first directory vanished meanwhile (its group's last process removes it as it
// exits) or is not ours to bind in. Under the lock.
void register_socket(State& s) noexcept {
  EarlyEndpoint& e = s.e;
  const pid_t pid = ::getpid();
  e.registry_tried = true;
  if (e.registered_pid != pid) {
    const bool inherited = e.dir.text[0] != '\0';
    for (int attempt = 1; attempt <= 2; ++attempt) {
      const bool in_inherited = attempt == 1 && inherited;
      DirPath dir;
      SocketPath path;
      Reason why;
      if (in_inherited) dir = e.dir;
      else if (!open_group_dir(e.address, dir, why)) {
        // The user's configuration, said once by the process the user started.
        if (e.announce) say("this process is not reachable through the registry: %s", why.text);
        return;
      }
      if (!socket_path(dir.text, pid, path)) {
        if (in_inherited) continue;
        if (e.announce)
          say("this process is not reachable through the registry: the registry path %s/%d.sock "
              "is too long for a Unix socket",
              dir.text, static_cast<int>(pid));
        return;
      }
      const int fd = listen_local(path.text);
      if (fd >= 0) {
        e.dir = dir;
        e.socket = path;
        e.registered_pid = pid;
        e.local_fd = fd;
        e.local_tracked = ForkFd(fd);
        break;
      }
      if (attempt == 1 && (fd == -ENOENT || in_inherited)) continue;
      return;  // quietly: a failure here is no configuration of the user's
    }
    if (e.registered_pid != pid) return;
  }
  if (s.holding) record_port_holder(e.dir.text, pid);
}

// Whether the recorders are due at all: with tracing on, or to retry a taken port (the
// full library's every second); a process that cannot be reached, or traces nothing,
// loads the full library only when a connection comes.
bool recorders_due(const State& s) noexcept { return engine::active() || s.e.port_taken; }

// Until a connection waits on either socket, or the recorders are due; false when neither
// can ever happen (no socket, nothing to record).
bool wait_for_first_need(State& s) noexcept {
  pollfd fds[2];
  nfds_t n = 0;
  bool due = false;
  {
    Guard guard(s);
    for (const int fd : {s.e.tcp_fd, s.e.local_fd})
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    due = recorders_due(s);
  }
  if (n == 0 && !due) return false;  // nothing can ever reach it: nothing to load
  for (;;) {
    const std::int64_t left = s.e.recorders_due_ns - now_ns();
    if (due && left <= 0) return true;
    const int timeout = due ? static_cast<int>((left + 999'999) / 1'000'000) : -1;
    const int ready = ::poll(fds, n, timeout);
    if (ready > 0) return true;  // a connection (or a socket gone: the take-over checks)
    if (ready < 0 && errno != EINTR) return true;
  }
}

// A descriptor of ours the host may have closed (and reused) since: kept only while it is
// still the socket we made; else dropped, never closed (its number may be the host's now).
void keep_if_ours(int& fd, ForkFd& tracked) noexcept {
  if (fd >= 0 && !tracked.still_tracks(fd)) {
    tracked.reset();
    fd = -1;
  }
}

// Hands the endpoint to the full library, once: from the endpoint's thread, or from the
// thread about to change its user ids. The library is loaded outside the lock.
void take_over(State& s) noexcept {
  {
    Guard guard(s);
    if (s.phase != Phase::early || s.exiting || s.state_pid != ::getpid()) return;
    s.phase = Phase::taking_over;
    keep_if_ours(s.e.tcp_fd, s.e.tcp_tracked);
    keep_if_ours(s.e.local_fd, s.e.local_tracked);
  }
  const auto fn = reinterpret_cast<TakeOver>(full_library_function(kTakeOverFunction));
  if (fn != nullptr) fn(s.e);  // takes the descriptors (and leaves -1 in their place)
  Guard guard(s);
  // What it did not take (it said why) is closed: no client may hang on a socket no one serves.
  for (auto [fd, tracked] :
       {std::pair{&s.e.tcp_fd, &s.e.tcp_tracked}, std::pair{&s.e.local_fd, &s.e.local_tracked}})
    if (*fd >= 0) {
      tracked->reset();
      close_own_descriptor(std::exchange(*fd, -1));
    }
  if (fn == nullptr) {
    // Not reachable after all: not listed in the group either.
    if (s.e.registered_pid == ::getpid()) {
      forget_port_holder(s.e.dir.text, ::getpid());
      ::unlink(s.e.socket.text);
    }
    s.phase = Phase::closed;
  } else {
    s.phase = Phase::taken_over;
  }
  pthread_cond_broadcast(&s.changed);
}

// The endpoint's thread: registers (a forked child after its delay, trying the port too),
// waits for the first need, hands over.
void* run(void*) {
  engine::begin_ignore();  // for the thread's whole life: the endpoint is never the host's growth
  State& s = *g_state;
  sleep_until(s.register_at_ns);
  {
    Guard guard(s);
    if (s.phase != Phase::early || s.exiting || s.state_pid != ::getpid()) return nullptr;
    if (s.e.forked) try_port(s);
    register_socket(s);
  }
  if (wait_for_first_need(s)) take_over(s);
  return nullptr;
}

void start_thread() noexcept {
  // Made on a thread that may be the host's: the mask is set here.
  const engine::BlockedSignals quiet;
  pthread_t thread;
  if (::pthread_create(&thread, nullptr, run, nullptr) == 0) ::pthread_detach(thread);
}

void wait_while_taking_over(State& s) noexcept {
  while (s.phase == Phase::taking_over) pthread_cond_wait(&s.changed, &s.lock);
}

// exit() or a return from main: the socket and the holder's record go with the process, the
// group's directory with its last one (rmdir fails while others are in it).
void at_exit() {
  State& s = *g_state;
  Guard guard(s);
  s.exiting = true;
  wait_while_taking_over(s);  // then the full library's own exit handler does it
  if (s.phase != Phase::early || s.e.registered_pid != ::getpid()) return;
  forget_port_holder(s.e.dir.text, ::getpid());
  ::unlink(s.e.socket.text);
  ::rmdir(s.e.dir.text);
}

// Just before fork(), in the forking thread: a child forked while the full library takes
// the endpoint over would inherit it half handed over (its locks held by a thread it does
// not have) and could not be reached; a postmaster forks its background processes about
// when that happens. So the fork waits for the takeover to end (a few milliseconds), and
// holds the lock until the fork is done, so that none starts meanwhile. At most
// kForkWaitNs: a takeover that waits for a lock another prepare handler took for this
// fork would wait for it forever; the child then gives up on its endpoint.
constexpr std::int64_t kForkWaitNs = 200'000'000;

void before_fork() noexcept {
  State& s = *g_state;
  pthread_mutex_lock(&s.lock);
  if (s.phase != Phase::taking_over || s.state_pid != ::getpid()) return;
  const std::int64_t until = now_ns() + kForkWaitNs;
  const timespec deadline{static_cast<time_t>(until / 1'000'000'000),
                          static_cast<long>(until % 1'000'000'000)};
  while (s.phase == Phase::taking_over &&
         pthread_cond_clockwait(&s.changed, &s.lock, CLOCK_MONOTONIC, &deadline) == 0) {
  }
}

void after_fork_in_parent() noexcept { pthread_mutex_unlock(&g_state->lock); }

// fork() without exec, in the child (after fork_fds closed the parent's sockets): this
// process registers its own endpoint after a moment, in its parent's group directory.
// Nothing here locks or allocates: a thread of the parent may have held any lock.
void after_fork_in_child() {
  State& s = *g_state;
  pthread_mutex_init(&s.lock, nullptr);
  pthread_cond_init(&s.changed, nullptr);
  if (s.phase == Phase::taking_over) s.phase = Phase::closed;  // half handed over: given up
  if (s.phase != Phase::early) return;
  EarlyEndpoint& e = s.e;
  s.state_pid = ::getpid();
  s.holding = false;
  e.forked = true;
  e.announce = false;  // the parent said whatever was to be said
  e.port_taken = false;
  e.registry_tried = false;
  e.tcp_fd = e.local_fd = -1;   // the parent's, closed by fork_fds
  new (&e.tcp_tracked) ForkFd;  // their entries are free here already: abandoned, not reset
  new (&e.local_tracked) ForkFd;
  e.socket = SocketPath{};
  s.register_at_ns = now_ns() + kForkChildDelayNs;
  e.recorders_due_ns = s.register_at_ns + kRecordersDelayNs;
  start_thread();
}

// Just before this process changes its user ids: a forked child that has no socket yet
// binds one in its parent's group directory while it still has its parent's ids (its
// thread adopts it), and the full library is loaded while its file is still readable.
// Once per process; keeps errno.
void before_uid_change() noexcept {
  State& s = *g_state;
  static std::atomic<pid_t> tried{0};
  const pid_t pid = ::getpid();
  if (tried.load(std::memory_order_relaxed) == pid || tried.exchange(pid) == pid) return;
  const int saved = errno;
  bool load = false;
  {
    Guard guard(s);
    wait_while_taking_over(s);
    EarlyEndpoint& e = s.e;
    if (s.phase == Phase::early && s.state_pid == pid && !s.exiting) {
      load = true;
      if (e.forked && e.registered_pid != pid) {
        Reason why;
        SocketPath path;
        if ((e.dir.text[0] != '\0' || open_group_dir(e.address, e.dir, why)) &&
            socket_path(e.dir.text, pid, path)) {
          const int fd = listen_local(path.text);
          if (fd >= 0) {
            e.socket = path;
            e.registered_pid = pid;
            e.local_fd = fd;
            e.local_tracked = ForkFd(fd);
          }
        }
      }
    }
  }
  if (load) (void)full_library_function(kTakeOverFunction);
  // Taken over meanwhile (or before): the full library's endpoint binds for itself.
  else if (void (*now)() = before_uid_change_function(); now != nullptr && now != before_uid_change) now();
  errno = saved;
}

// "host:port", an IPv6 host in brackets: the group's name, as the full library writes it.
void group_address(const EarlyAddress& a, char (&out)[80]) noexcept {
  std::snprintf(out, sizeof out, is_v6(a) ? "[%s]:%u" : "%s:%u", a.host, static_cast<unsigned>(a.port));
}

bool is_loopback(const char* host) noexcept {
  in_addr v4{};
  if (inet_pton(AF_INET, host, &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace

bool parse_early_address(const char* text, EarlyAddress& address) noexcept {
  const char* port = text;
  std::size_t host_length = 0;
  const char* host = "127.0.0.1";
  if (text[0] == '[') {  // "[v6]:port"
    const char* close = std::strchr(text, ']');
    if (close == nullptr || close == text + 1 || close[1] != ':') return false;
    host = text + 1;
    host_length = static_cast<std::size_t>(close - host);
    port = close + 2;
  } else if (const char* colon = std::strrchr(text, ':')) {
    if (std::memchr(text, ':', static_cast<std::size_t>(colon - text)) != nullptr) return false;
    if (colon != text) {
      host = text;
      host_length = static_cast<std::size_t>(colon - text);
    }
    port = colon + 1;
  }
  if (host_length == 0) host_length = std::strlen(host);
  if (host_length >= sizeof address.host) return false;
  std::memcpy(address.host, host, host_length);
  address.host[host_length] = '\0';
  unsigned value = 0;
  if (*port == '\0') return false;
  for (const char* c = port; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') return false;
    value = value * 10 + static_cast<unsigned>(*c - '0');
    if (value > 65535) return false;
  }
  address.port = static_cast<std::uint16_t>(value);
  return is_loopback(address.host);
}

void start_early_endpoint(const EarlyAddress& address) noexcept {
  State& s = *(g_state = new (g_storage) State);
  EarlyEndpoint& e = s.e;
  e.listen = address;
  group_address(address, e.address);
  s.state_pid = ::getpid();
  std::atexit(at_exit);
  on_fork_child(after_fork_in_child);  // which makes the lock before_fork() held anew
  pthread_atfork(before_fork, after_fork_in_parent, nullptr);
  set_before_uid_change(before_uid_change);
  {
    Guard guard(s);
    // The first try here, on the loading thread: the port answers as soon as the process
    // runs. Registering waits for the thread.
    try_port(s);
    e.recorders_due_ns = now_ns() + kRecordersDelayNs;
  }
  start_thread();
}

}  // namespace liveheap::boot
