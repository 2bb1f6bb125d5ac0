// A program run by a test or a benchmark: started with posix_spawnp and an environment of
// its caller's making, its stdout (and, when asked, stderr) read line by line with
// deadlines, its stdin a pipe when asked; killed and reaped (by its pid) if still running
// when the object goes. The tests (tests/*) and the overhead benchmark (samples/bench) both
// use it. Thread-safety: none; one owner.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace test_support {

struct ChildOptions {
  bool stdin_pipe = true;    // else the child reads the caller's stdin
  bool with_stderr = false;  // stderr into the same pipe as stdout
};

// How a child ended (ChildProcess::finish).
struct ChildExit {
  int exit_code = -1;  // the exit status, or -1 when killed by a signal
  int signal = 0;      // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string output;         // everything it wrote to the pipe
  double cpu_seconds = 0;     // user + system CPU time of the child (not of its children)
  double peak_rss_bytes = 0;  // its peak resident set (ru_maxrss)

  bool ok() const noexcept { return exit_code == 0 && !timed_out; }
  // "exit 1", "killed by signal 11 (Segmentation fault)", "timed out (killed)".
  std::string describe() const;
};

class ChildProcess {
 public:
  // `env`: the child's whole environment ("NAME=value"). Throws std::runtime_error when the
  // program cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               ChildOptions options = {});
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();

  pid_t pid() const noexcept { return pid_; }
  // Writes `line` and a newline to its stdin (ChildOptions::stdin_pipe).
  void write_line(const std::string& line);
  // The next line of its output (without '\n'), or std::nullopt at its end or on timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Closes its stdin and waits for it to exit, reading nothing more: its exit status, or -1
  // if it did not exit normally within `timeout` (then it is killed when this object goes).
  int wait(std::chrono::milliseconds timeout);
  // Sends `signal` (0: none), reads the rest of its output, waits up to `timeout` before
  // SIGKILL, and reaps it with its CPU time and peak RSS.
  ChildExit finish(int signal, std::chrono::milliseconds timeout);

 private:
  bool read_some(std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int output_fd_ = -1;
  std::string pending_;  // read but not yet returned by read_line
  std::string all_;      // everything read so far
};

// argv/envp for exec: pointers into `strings`, null-terminated.
std::vector<char*> pointers(std::vector<std::string>& strings);
// `extra` ("NAME=value") before this process's own environment: the first of a name wins.
std::vector<std::string> environment_with(const std::vector<std::string>& extra);
// A TCP port on 127.0.0.1 that was free a moment ago; 0 when none could be had.
std::uint16_t free_port();

}  // namespace test_support
