// The tests' child processes (tests/support/child_process.hpp) with this suite's calling
// conventions: extra environment variables on top of ours, timeouts in milliseconds.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "../support/child_process.hpp"

namespace http_test {

class ChildProcess : public test_support::ChildProcess {
 public:
  // Throws std::runtime_error when the program cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env)
      : test_support::ChildProcess(argv, test_support::environment_with(extra_env)) {}

  using test_support::ChildProcess::read_line;
  using test_support::ChildProcess::wait;
  std::optional<std::string> read_line(int timeout_ms) {
    return read_line(std::chrono::milliseconds(timeout_ms));
  }
  int wait(int timeout_ms) { return wait(std::chrono::milliseconds(timeout_ms)); }
};

using test_support::free_port;

}  // namespace http_test
