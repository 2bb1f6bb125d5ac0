// Helpers of the end-to-end tests: the real leaky_server and liveheap-watch as processes,
// the lines leak_stories.cpp marks, and the statistics of a /diff at those lines.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../http/child_process.hpp"
#include "../http/client.hpp"

namespace liveheap::e2e {

using http_test::Reply;

// How to start leaky_server beyond the defaults (127.0.0.1, a free port, exact mode, no
// token unless `env` sets LIVEHEAP_TOKEN).
struct Launch {
  std::vector<std::string> env;   // "NAME=value"
  std::vector<std::string> args;  // more command-line arguments
  bool read_stderr = false;       // join its stderr to the stdout that output_line reads
};

// samples/leaky_server as a process, killed when destroyed.
class LeakyServer {
 public:
  // Throws std::runtime_error when it does not print its port within a few seconds.
  explicit LeakyServer(Launch launch = {});
  // The next line it printed after the first, or std::nullopt after `timeout_ms`.
  std::optional<std::string> output_line(int timeout_ms) { return process_->read_line(timeout_ms); }
  std::uint16_t port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT/debug/memory"

  Reply get(std::string_view target) const;   // throws unless the reply is 200
  Reply post(std::string_view target) const;  // throws unless the reply is 200
  // GET one story route; its JSON body (what the request retained).
  nlohmann::json story(std::string_view target) const;
  // GET /debug/memory/diff as JSON; `query` is appended ("&cumulative=1").
  nlohmann::json diff(std::string_view query = "") const;

 private:
  std::unique_ptr<http_test::ChildProcess> process_;
  std::uint16_t port_ = 0;
};

// The line of leak_stories.cpp carrying the comment "// <mark>", e.g. "site: figure".
// Throws std::runtime_error if none does.
int marked_line(std::string_view mark);

// The statistic of `diff` for leak_stories.cpp:`line`, or null when the diff has none.
nlohmann::json stat_at(const nlohmann::json& diff, int line);

// Sums of the truth fields of story responses: "retained_bytes", "site_blocks", ...
std::int64_t sum(const std::vector<nlohmann::json>& responses, const char* field);

// What a liveheap-watch run printed (stdout and stderr together) and its exit status.
struct WatchRun {
  int exit_code = -1;
  std::string output;
};
WatchRun run_watch(const std::vector<std::string>& args, std::vector<std::string> env = {});

}  // namespace liveheap::e2e
