// A program run by a test or a benchmark (see child_process.hpp): posix_spawnp with pipes,
// poll() for deadlines, SIGKILL for what will not stop.
#include "child_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace test_support {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

}  // namespace

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

std::string ChildExit::describe() const {
  if (timed_out) return "timed out (killed)";
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           ChildOptions options) {
  int in[2] = {-1, -1};
  int out[2];
  if ((options.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0) || ::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.stdin_pipe) posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);  // dup2 clears CLOEXEC on the copy
  if (options.with_stderr) posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = env;
  const int rc =
      ::posix_spawnp(&pid_, args[0].c_str(), &actions, nullptr, pointers(args).data(), pointers(envs).data());
  posix_spawn_file_actions_destroy(&actions);
  if (options.stdin_pipe) ::close(in[0]);
  ::close(out[1]);
  stdin_fd_ = in[1];
  output_fd_ = out[0];
  if (rc != 0) {
    pid_ = -1;
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    ::close(output_fd_);
    throw std::runtime_error("cannot start " + argv[0] + ": " + strerror(rc));
  }
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdin_fd_(std::exchange(other.stdin_fd_, -1)),
      output_fd_(std::exchange(other.output_fd_, -1)),
      pending_(std::move(other.pending_)),
      all_(std::move(other.all_)) {}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (output_fd_ >= 0) ::close(output_fd_);
}

void ChildProcess::write_line(const std::string& line) {
  const std::string text = line + "\n";
  if (stdin_fd_ < 0 || ::write(stdin_fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write to the child's stdin");
}

bool ChildProcess::read_some(Clock::time_point deadline) {
  if (output_fd_ < 0) return false;
  pollfd p{output_fd_, POLLIN, 0};
  const int ready = ::poll(&p, 1, remaining_ms(deadline));
  if (ready < 0 && errno == EINTR) return true;
  if (ready <= 0) return false;
  char buffer[4096];
  const ssize_t n = ::read(output_fd_, buffer, sizeof buffer);
  if (n <= 0) {
    ::close(output_fd_);
    output_fd_ = -1;
    return false;
  }
  pending_.append(buffer, static_cast<std::size_t>(n));
  all_.append(buffer, static_cast<std::size_t>(n));
  return true;
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
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

int ChildProcess::wait(std::chrono::milliseconds timeout) {
  if (stdin_fd_ >= 0) ::close(std::exchange(stdin_fd_, -1));
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;  // the destructor kills it
}

ChildExit ChildProcess::finish(int signal, std::chrono::milliseconds timeout) {
  ChildExit exit;
  if (signal != 0) ::kill(pid_, signal);
  const auto deadline = Clock::now() + timeout;
  while (read_some(deadline)) {
  }
  int status = 0;
  rusage usage{};
  pid_t reaped = 0;
  while ((reaped = ::wait4(pid_, &status, WNOHANG, &usage)) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (reaped == 0) {
    exit.timed_out = true;
    ::kill(pid_, SIGKILL);
    ::wait4(pid_, &status, 0, &usage);
  }
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  exit.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  exit.peak_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024;
  pid_ = -1;
  if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !exit.timed_out) exit.signal = WTERMSIG(status);
  exit.output = std::move(all_);
  return exit;
}

std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  std::vector<std::string> env = extra;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) ::close(fd);
  return bound ? ntohs(address.sin_port) : 0;
}

}  // namespace test_support
