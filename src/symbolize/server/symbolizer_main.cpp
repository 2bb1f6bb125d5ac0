// liveheap-symbolizer: names code addresses for the traced processes of one user, so that
// no traced process reads debug information itself (tens of megabytes each). A traced
// process starts it on demand (src/symbolize/symbolizer_process.cpp) and connects to it on
// an abstract Unix socket named after the user; it answers one request per connection,
// keeps what it read for the next ones, and exits after a minute without requests (or
// once it holds FileDebugInfo::kMaxFiles files, to be started afresh).
//
//   liveheap-symbolizer --socket NAME [--detach] [--stay-with PID] [--idle-exit SECONDS]
//
// --detach: started from inside a traced process, it keeps nothing of it (descriptors,
// signal mask, terminal). --stay-with PID: its parent PID adopts orphans (PID 1 of a
// container, a subreaper), so its exit would be a SIGCHLD that process never expected:
// while PID is its parent it never exits, and when idle it re-executes itself instead,
// which gives back what it read (--listen-fd passes its socket on).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "file_debug_info.hpp"
#include "wire.hpp"

namespace {

using namespace liveheap::symbolize;

constexpr std::uint64_t kMaxRequestBytes = 64u << 20;
constexpr int kClientTimeoutS = 10;

struct Settings {
  std::string socket;
  bool detach = false;
  pid_t stay_with = 0;
  int listen_fd = -1;
  int idle_exit_s = 60;
};

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--detach") {
      s.detach = true;
    } else if (flag == "--stay-with" && i + 1 < argc) {
      s.stay_with = std::atoi(argv[++i]);
      if (s.stay_with <= 0) throw std::invalid_argument("--stay-with takes a process id");
    } else if (flag == "--listen-fd" && i + 1 < argc) {
      s.listen_fd = std::atoi(argv[++i]);
      if (s.listen_fd < 3) throw std::invalid_argument("--listen-fd takes a descriptor past 2");
    } else if (flag == "--socket" && i + 1 < argc) {
      s.socket = argv[++i];
    } else if (flag == "--idle-exit" && i + 1 < argc) {
      s.idle_exit_s = std::atoi(argv[++i]);
      if (s.idle_exit_s <= 0) throw std::invalid_argument("--idle-exit takes a positive number of seconds");
    } else {
      throw std::invalid_argument("unknown argument '" + std::string(flag) + "'");
    }
  }
  if (s.socket.empty() || s.socket.size() > sizeof(sockaddr_un::sun_path) - 1)
    throw std::invalid_argument("--socket NAME is required (at most 107 bytes)");
  return s;
}

// Started by liveheap from inside someone else's process: nothing of it is ours to keep. Its signal
// mask (liveheap's threads block the host's signals), its descriptors, its terminal.
void leave_the_host() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGPIPE}) signal(sig, SIG_DFL);
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    if (null > 2) ::close(null);
  }
  ::close_range(3, ~0u, 0);
}

std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

wire::Reply answer(server::FileDebugInfo& info, std::string_view body) {
  wire::Reply reply;
  try {
    const wire::Request request = wire::decode_request(body);
    reply.answers.reserve(request.queries.size());
    for (const wire::Query& q : request.queries)
      reply.answers.push_back(info.resolve(request.objects[q.object], q.pc));
  } catch (const std::exception& e) {
    reply.answers.clear();
    reply.error = e.what();
  }
  reply.pid = ::getpid();
  reply.rss_bytes = resident_bytes();
  reply.files = static_cast<std::int64_t>(info.files());
  return reply;
}

// Only the user the symbolizer runs as may ask it: it reads files with that user's rights.
bool same_user(int fd) {
  ucred peer{};
  socklen_t length = sizeof peer;
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 && peer.uid == ::geteuid();
}

void serve_one(server::FileDebugInfo& info, int client) {
  const timeval timeout{kClientTimeoutS, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (!same_user(client)) return;
  const std::optional<std::string> body = wire::read_message(client, kMaxRequestBytes);
  if (!body) return;
  wire::write_message(client, wire::encode(answer(info, *body)));
}

// The listening socket: bound here, or passed on by the process this one re-executed.
// -1 when another symbolizer holds the name (two processes started one at once).
int listening_socket(const Settings& s) {
  if (s.listen_fd >= 0) return s.listen_fd;
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return -1;
  socklen_t length = 0;
  const sockaddr_un address = wire::abstract_address(s.socket, length);
  if (::bind(listener, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 64) != 0) {
    ::close(listener);
    return -1;
  }
  return listener;
}

// --stay-with: the same process, afresh, with the same socket.
[[noreturn]] void reexecute(const Settings& s, int listener) {
  ::fcntl(listener, F_SETFD, 0);
  std::string fd = std::to_string(listener), parent = std::to_string(s.stay_with),
              idle = std::to_string(s.idle_exit_s);
  std::string a[] = {"liveheap-symbolizer", "--socket", s.socket,      "--stay-with", parent,
                     "--listen-fd",         fd,         "--idle-exit", idle};
  char* argv[std::size(a) + 1] = {};
  for (std::size_t i = 0; i < std::size(a); ++i) argv[i] = a[i].data();
  ::execv("/proc/self/exe", argv);
  std::_Exit(1);  // the socket goes with it; the next request starts another
}

int serve(const Settings& s) {
  const int listener = listening_socket(s);
  if (listener < 0) return 0;
  server::FileDebugInfo info;
  for (;;) {
    pollfd ready{listener, POLLIN, 0};
    const int n = ::poll(&ready, 1, s.idle_exit_s * 1000);
    if (n == 0) {  // idle: what it read is given back
      if (s.stay_with == 0 || ::getppid() != s.stay_with) return 0;
      if (info.files() > 0) reexecute(s, listener);
      continue;
    }
    if (n < 0) continue;
    const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    serve_one(info, client);
    ::close(client);
    if (info.files() >= server::FileDebugInfo::kMaxFiles) {
      if (s.stay_with != 0 && ::getppid() == s.stay_with) reexecute(s, listener);
      return 0;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  try {
    settings = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "liveheap-symbolizer: %s\n", e.what());
    return 2;
  }
  if (settings.detach) {
    leave_the_host();
    ::setsid();  // the host's terminal and process group are not ours
  }
  return serve(settings);
}
