// Runs Debian's programs bare and under the preload library, each run bounded by a timeout,
// and the four ways a user meets liveheap: exact or sampled, holding LIVEHEAP_ADDR's port
// or reached through the process that holds it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../http/child_process.hpp"

namespace programs_test {

using namespace std::chrono_literals;

// How a bounded run ended, with everything it wrote.
struct ProgramRun {
  int exit_code = -1;      // when it exited
  int signal = 0;          // when a signal ended it
  bool timed_out = false;  // then its process group was killed
  std::string out;
  std::string err;
  std::chrono::milliseconds took{0};

  // "exit 0", "killed by signal 15", "timed out after N ms": for failure messages.
  std::string how() const;
};

// Runs argv[0] (a path) in a process group of its own, with `env` ("NAME=value") on top of
// a copy of ours without LD_PRELOAD and LIVEHEAP_*, in `cwd` (ours when empty), stdin from
// /dev/null. Past `timeout` the whole group is killed: a hang fails a test, never stalls it.
ProgramRun run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               std::chrono::milliseconds timeout, const std::string& cwd = "");

// A test fails (not skips) when a program is missing: ./build.sh test installs them all.
testing::AssertionResult installed(const std::string& path, const std::string& package);

// Our environment without LD_PRELOAD and LIVEHEAP_*, so that a developer's shell cannot
// change what a test runs; `env` first (ChildProcess keeps the first of duplicates).
std::vector<std::string> clean_env(std::vector<std::string> env);

// One way of running under the preload library.
struct Configuration {
  std::string mode;  // "exact" or "sampled"
  bool holder;       // the program takes LIVEHEAP_ADDR's port, or another process has it
  std::string name() const;
};
inline const Configuration kConfigurations[] = {
    {"exact", true}, {"exact", false}, {"sampled", true}, {"sampled", false}};

// LD_PRELOAD, LIVEHEAP_MODE, LIVEHEAP_ADDR=127.0.0.1:port and XDG_RUNTIME_DIR (the test's own
// process registry, so that parallel tests never see each other's processes).
std::vector<std::string> preload_env(const std::string& mode, std::uint16_t port,
                                     const std::string& runtime_dir);

// A `sleep` under the preload library holding `port` for as long as it lives, so that the
// program under test is reached through it. Throws when it does not serve within patience.
class PortHolder {
 public:
  PortHolder(const std::string& mode, std::uint16_t port, const std::string& runtime_dir);
  pid_t pid() const { return process_->pid(); }

 private:
  std::unique_ptr<http_test::ChildProcess> process_;
};

// Calls `body` once per configuration with its environment, a free port and a runtime
// directory, with a PortHolder in place for the configurations that do not hold the port.
// Each call is traced with the configuration's name.
void for_each_configuration(
    const std::string& runtime_dir,
    const std::function<void(const Configuration&, const std::vector<std::string>& env, std::uint16_t port)>&
        body);

// GET `target` on 127.0.0.1:port; its JSON body, or throws (status and body in the message).
// A report over many processes symbolizes each of them: seconds on a loaded machine.
nlohmann::json get_json(std::uint16_t port, const std::string& target, int timeout_ms = 15000);

// The current traced bytes a /stats answer reports.
std::int64_t traced_bytes(const nlohmann::json& stats);

}  // namespace programs_test
