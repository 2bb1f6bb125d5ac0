// Child processes for the overhead benchmark (see child_process.hpp): posix_spawnp with a
// pipe for stdout+stderr, poll() for deadlines, SIGKILL for what will not stop.
#include "child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

}  // namespace

// Inherited values of these would silently change what a row measures.
bool is_measurement_variable(const std::string& entry) {
  for (const char* prefix : {"LD_PRELOAD=", "LIVEHEAP_", "MALLOC_CONF=", "DUMP_HEAPTRACK_"})
    if (entry.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> child_environment(const Environment& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (!is_measurement_variable(*e)) env.emplace_back(*e);
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// A TCP port on 127.0.0.1 that was free a moment ago; 0 when none could be had.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  const bool bound = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0;
  if (fd >= 0) close(fd);
  return bound ? ntohs(addr.sin_port) : 0;
}

std::string Outcome::describe() const {
  if (timed_out) return "timed out (killed)";
  if (signal != 0)
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

Child::Child(const std::vector<std::string>& argv, const Environment& env) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);  // dup2 clears CLOEXEC on 1 and 2
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = child_environment(env);
  const int rc = posix_spawnp(&pid_, args[0].c_str(), &actions, nullptr, pointers(args).data(),
                              pointers(envs).data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("cannot start " + argv[0] + ": " + strerror(rc));
  }
  fd_ = fds[0];
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)),
      pending_(std::move(other.pending_)), all_(std::move(other.all_)) {}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

bool Child::read_some(Clock::time_point deadline) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  const int ready = poll(&p, 1, remaining_ms(deadline));
  if (ready < 0 && errno == EINTR) return true;
  if (ready <= 0) return false;
  char buffer[4096];
  const ssize_t n = read(fd_, buffer, sizeof buffer);
  if (n <= 0) {
    close(fd_);
    fd_ = -1;
    return false;
  }
  pending_.append(buffer, static_cast<std::size_t>(n));
  all_.append(buffer, static_cast<std::size_t>(n));
  return true;
}

std::optional<std::string> Child::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto newline = pending_.find('\n'); newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    if (!read_some(deadline)) return std::nullopt;
  }
}

Outcome Child::finish(int signal, std::chrono::milliseconds timeout) {
  Outcome outcome;
  if (signal != 0) kill(pid_, signal);
  const auto deadline = Clock::now() + timeout;
  while (read_some(deadline)) {
  }
  int status = 0;
  rusage usage{};
  pid_t reaped = 0;
  while ((reaped = wait4(pid_, &status, WNOHANG, &usage)) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (reaped == 0) {
    outcome.timed_out = true;
    kill(pid_, SIGKILL);
    wait4(pid_, &status, 0, &usage);
  }
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  outcome.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  outcome.peak_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024;
  pid_ = -1;
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !outcome.timed_out) outcome.signal = WTERMSIG(status);
  outcome.output = std::move(all_);
  return outcome;
}

Outcome run(const std::vector<std::string>& argv, const Environment& env,
            std::chrono::milliseconds timeout) {
  return Child(argv, env).finish(0, timeout);
}

std::string command_line(const std::vector<std::string>& argv, const Environment& env) {
  std::string text;
  for (const auto& [name, value] : env) text += name + "=" + value + " ";
  for (const std::string& arg : argv) text += arg + " ";
  if (!text.empty()) text.pop_back();
  return text;
}

}  // namespace bench
