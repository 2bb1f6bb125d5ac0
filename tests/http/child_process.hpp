// Runs a program for an end-to-end test: its stdin and stdout are pipes, extra environment
// variables on top of ours; killed (by its pid) if the test ends first.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace http_test {

class ChildProcess {
 public:
  // Throws std::runtime_error when the program cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void write_line(const std::string& line);
  // The next line of its stdout (without '\n'), or std::nullopt at EOF or after timeout_ms.
  std::optional<std::string> read_line(int timeout_ms);
  // Closes its stdin and waits for it to exit; the exit status, or -1 if it did not exit
  // normally within timeout_ms (then it is killed).
  int wait(int timeout_ms);

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string pending_;  // read but not yet returned
};

// A TCP port on 127.0.0.1 that was free a moment ago.
std::uint16_t free_port();

}  // namespace http_test
