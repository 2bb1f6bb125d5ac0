// Child processes for the overhead benchmark: spawn a program with extra environment
// variables, capture its stdout+stderr, and never wait forever (a hang is a finding).
// Thread-safety: none needed; the driver is single-threaded.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// Variables to set in the child, on top of the driver's environment minus anything that
// would change what is measured (LD_PRELOAD, LIVEHEAP_*, MALLOC_CONF, DUMP_HEAPTRACK_*).
using Environment = std::vector<std::pair<std::string, std::string>>;

struct Outcome {
  int exit_code = -1;     // the exit status, or -1 when killed by a signal
  int signal = 0;         // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string output;     // stdout and stderr, interleaved
  double cpu_seconds = 0; // user + system CPU time of the child (not of its children)
  double peak_rss_bytes = 0;  // the child's peak resident set (ru_maxrss)

  bool ok() const noexcept { return exit_code == 0 && !timed_out; }
  // "exit 1", "killed by signal 11 (Segmentation fault)", "timed out (killed)".
  std::string describe() const;
};

// A running child. Move-only; the destructor kills and reaps a child still running.
class Child {
 public:
  // Throws std::runtime_error when the program cannot be started (e.g. not installed).
  Child(const std::vector<std::string>& argv, const Environment& env);
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();

  int pid() const noexcept { return pid_; }
  // The next line of output (without '\n'), or nullopt at end of output or on timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Sends `signal` (0: none), collects the rest of the output, waits up to `timeout`
  // before SIGKILL, and reaps the child.
  Outcome finish(int signal, std::chrono::milliseconds timeout);

 private:
  bool read_some(std::chrono::steady_clock::time_point deadline);

  int pid_ = -1;
  int fd_ = -1;        // read end of the output pipe
  std::string pending_;  // output read but not yet returned by read_line
  std::string all_;      // everything read so far
};

// Runs a program to completion (or the timeout) and returns what happened.
Outcome run(const std::vector<std::string>& argv, const Environment& env,
            std::chrono::milliseconds timeout);

// The driver's environment without the variables that would silently change what a row
// measures (LD_PRELOAD, LIVEHEAP_*, MALLOC_CONF, DUMP_HEAPTRACK_*), plus `extra`.
std::vector<std::string> child_environment(const Environment& extra);
// argv/envp for exec: pointers into `strings`, null-terminated.
std::vector<char*> pointers(std::vector<std::string>& strings);
// A TCP port on 127.0.0.1 that was free a moment ago; 0 when none could be had.
int free_port();

// "A=1 B=2 prog arg": how to reproduce a run by hand.
std::string command_line(const std::vector<std::string>& argv, const Environment& env);

}  // namespace bench
