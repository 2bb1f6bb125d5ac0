// Bounded runs of real programs, bare and under the preload library (program_run.hpp).
#include "program_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "../http/client.hpp"
#include "../support/wait.hpp"

extern char** environ;

namespace programs_test {
namespace {

// Reads what is ready on the pipes into `out` and `err`; false once both are at EOF.
bool drain(int& out_fd, int& err_fd, std::string& out, std::string& err, int timeout_ms) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  if (out_fd < 0 && err_fd < 0) return false;
  if (::poll(fds, 2, timeout_ms) <= 0) return true;
  std::string* into[2] = {&out, &err};
  int* fd[2] = {&out_fd, &err_fd};
  for (int i = 0; i < 2; ++i) {
    if (*fd[i] < 0 || fds[i].revents == 0) continue;
    char buffer[8192];
    const ssize_t n = ::read(*fd[i], buffer, sizeof buffer);
    if (n > 0) {
      into[i]->append(buffer, static_cast<std::size_t>(n));
    } else {
      ::close(*fd[i]);
      *fd[i] = -1;
    }
  }
  return out_fd >= 0 || err_fd >= 0;
}

}  // namespace

std::string ProgramRun::how() const {
  if (timed_out) return "timed out after " + std::to_string(took.count()) + " ms";
  if (signal != 0) return "killed by signal " + std::to_string(signal);
  return "exit " + std::to_string(exit_code);
}

std::vector<std::string> clean_env(std::vector<std::string> env) {
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("LD_PRELOAD=") && !entry.starts_with("LIVEHEAP_")) env.emplace_back(entry);
  }
  return env;
}

ProgramRun run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               std::chrono::milliseconds timeout, const std::string& cwd) {
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);  // a group of its own
  posix_spawnattr_setpgroup(&attributes, 0);

  std::vector<std::string> environment = clean_env(env);
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argp[0], &actions, &attributes, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out[1]);
  ::close(err[1]);
  ProgramRun result;
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  auto left_ms = [&] {
    return static_cast<int>(std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
               .count()));
  };
  // Until both pipes close (every process that had them is gone) or the deadline.
  int out_fd = out[0];
  int err_fd = err[0];
  while (left_ms() > 0 && drain(out_fd, err_fd, result.out, result.err, std::min(left_ms(), 100))) {
  }
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (left_ms() == 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  // A member of the group still holding the pipes past the deadline: end it too.
  if (out_fd >= 0 || err_fd >= 0) {
    result.timed_out = true;
    ::kill(-pid, SIGKILL);
    while (drain(out_fd, err_fd, result.out, result.err, 1000)) {
    }
  }
  result.took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  if (!result.timed_out) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  }
  return result;
}

testing::AssertionResult installed(const std::string& path, const std::string& package) {
  if (::access(path.c_str(), X_OK) == 0) return testing::AssertionSuccess();
  return testing::AssertionFailure() << path << " is missing: this test needs Debian's " << package
                                     << " (./build.sh test installs it)";
}

std::string Configuration::name() const {
  return mode + (holder ? ", holding the port" : ", reached through another process's port");
}

std::vector<std::string> preload_env(const std::string& mode, std::uint16_t port,
                                     const std::string& runtime_dir) {
  return {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY, "LIVEHEAP_MODE=" + mode,
          "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "XDG_RUNTIME_DIR=" + runtime_dir};
}

PortHolder::PortHolder(const std::string& mode, std::uint16_t port, const std::string& runtime_dir) {
  process_ = std::make_unique<http_test::ChildProcess>(std::vector<std::string>{"/bin/sleep", "600"},
                                                       clean_env(preload_env(mode, port, runtime_dir)));
  const auto serving = test_support::wait_until(test_support::kPatience, [&] {
    return http_test::get(port, "/debug/memory/processes?format=json").status == 200;
  });
  if (!serving)
    throw std::runtime_error("a preloaded sleep never served port " + std::to_string(port) + ": " +
                             serving.message());
}

void for_each_configuration(
    const std::string& runtime_dir,
    const std::function<void(const Configuration&, const std::vector<std::string>& env, std::uint16_t port)>&
        body) {
  for (const Configuration& configuration : kConfigurations) {
    SCOPED_TRACE(configuration.name());
    const std::uint16_t port = http_test::free_port();
    std::unique_ptr<PortHolder> holder;
    if (!configuration.holder) holder = std::make_unique<PortHolder>(configuration.mode, port, runtime_dir);
    body(configuration, preload_env(configuration.mode, port, runtime_dir), port);
  }
}

nlohmann::json get_json(std::uint16_t port, const std::string& target, int timeout_ms) {
  const std::string raw = http_test::send_raw(
      port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", false, timeout_ms);
  const int status = http_test::status_of(raw);
  const auto body = raw.find("\r\n\r\n");
  if (status != 200 || body == std::string::npos)
    throw std::runtime_error(
        "GET " + target + ": " +
        (status == 0 ? "no answer within " + std::to_string(timeout_ms) + " ms" : raw.substr(0, 300)));
  return nlohmann::json::parse(raw.substr(body + 4));
}

std::int64_t traced_bytes(const nlohmann::json& stats) {
  return stats.at("traced").at("current").get<std::int64_t>();
}

}  // namespace programs_test
