// liveheap-watch's command line: what to poll, how often, and when to fail.
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace liveheap::cli {

// A command line the tool cannot act on; main prints it with the usage and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where the liveheap routes of a server are: http://host:port/prefix.
struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  std::string prefix = "/debug/memory";  // "" when the routes are at the root

  // "127.0.0.1:8080", as error messages name a server.
  std::string authority() const;
  // "http://127.0.0.1:8080/debug/memory".
  std::string url() const;
};

struct WatchOptions {
  Endpoint endpoint;
  std::chrono::milliseconds interval{5000};  // between rounds, and before the first
  std::optional<std::uint64_t> rounds;       // std::nullopt: until interrupted
  std::string key = "line";
  unsigned limit = 10;
  std::vector<std::string> include;  // globs passed through to /diff
  std::vector<std::string> exclude;
  std::string token;                      // bearer token; empty: none
  bool json = false;                      // JSON lines instead of text
  bool baseline = false;                  // POST /baseline before the first round
  std::optional<std::int64_t> fail_over;  // bytes of total growth that fail the run
  // Bytes of growth since the baseline (size_diff) above which a callsite the server calls
  // "growing" fails the run.
  std::optional<std::int64_t> fail_on_growing;
  std::chrono::milliseconds timeout{30000};  // per request
  // "" (by default: every process, merged, when the program has several; else the process
  // holding the port), "port" (that one), a process id, or "all": sent as pid=.
  std::string pid;
};

// The usage text, for --help and after a UsageError.
std::string_view usage();

// Parses argv[1..] ("--flag value" or "--flag=value"); `token_from_env` is LIVEHEAP_TOKEN (or null), used when --token is not
// given. std::nullopt for --help. Throws UsageError naming the offending argument.
std::optional<WatchOptions> parse_command_line(int argc, const char* const argv[],
                                               const char* token_from_env);

// "1048576", "512KiB", "1.5 MiB", "2G": bytes (B, KiB/K, MiB/M, GiB/G; case-insensitive,
// powers of 1024). Throws UsageError for anything else, or a negative or absurd size.
std::int64_t parse_size(std::string_view text);

// "http://host:port/prefix" (port defaults to 80). Throws UsageError for other schemes,
// a query or fragment, or a bad port.
Endpoint parse_url(std::string_view url);

}  // namespace liveheap::cli
