// Child processes for the overhead benchmark: the tests' helper
// (tests/support/child_process.hpp) with the benchmark's environment (the driver's minus
// what would change what is measured) and its output (stdout and stderr interleaved);
// never waited for forever (a hang is a finding). Thread-safety: none needed; the driver is
// single-threaded.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "../../tests/support/child_process.hpp"

namespace bench {

// Variables to set in the child, on top of the driver's environment minus anything that
// would change what is measured (LD_PRELOAD, LIVEHEAP_*, MALLOC_CONF, DUMP_HEAPTRACK_*).
using Environment = std::vector<std::pair<std::string, std::string>>;

using Outcome = test_support::ChildExit;

// The driver's environment without the variables that would silently change what a row
// measures (LD_PRELOAD, LIVEHEAP_*, MALLOC_CONF, DUMP_HEAPTRACK_*), plus `extra`.
std::vector<std::string> child_environment(const Environment& extra);

// A running child, its stdin the driver's, its stdout and stderr read as one.
class Child : public test_support::ChildProcess {
 public:
  // Throws std::runtime_error when the program cannot be started (e.g. not installed).
  Child(const std::vector<std::string>& argv, const Environment& env)
      : test_support::ChildProcess(argv, child_environment(env), {.stdin_pipe = false, .with_stderr = true}) {}
};

// Runs a program to completion (or the timeout) and returns what happened.
Outcome run(const std::vector<std::string>& argv, const Environment& env, std::chrono::milliseconds timeout);

using test_support::pointers;
// A TCP port on 127.0.0.1 that was free a moment ago; 0 when none could be had.
inline int free_port() { return test_support::free_port(); }

// "A=1 B=2 prog arg": how to reproduce a run by hand.
std::string command_line(const std::vector<std::string>& argv, const Environment& env);

}  // namespace bench
