// The route table: which path and method does what, with which parameters, and the one
// place where a failure becomes a response. Thread-safety: answer() may run on any number
// of threads at once; RouteState's members are each safe to share.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <variant>

#include "baseline.hpp"
#include "liveheap/http.hpp"
#include "local_client.hpp"
#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// What the routes of one Handler share.
struct RouteState {
  explicit RouteState(Config c);
  const Config config;
  // /metrics' callsite gauges (Config::metrics_callsites, else LIVEHEAP_METRICS_CALLSITES),
  // read here on the thread that makes the handler, the host's: getenv on liveheap's threads
  // races the host's setenv. An invalid value is kept as its error, answered on each scrape.
  const std::variant<unsigned, std::string> metrics_callsites;
  BaselineStore baseline;
  std::atomic<unsigned> windows{0};  // ?seconds=N requests waiting now
};

// Holds one of Config::max_windows places while a window waits (here, or forwarded to
// another process: each costs a connection and a wait all the same). Throws RequestError
// (429) when every place is taken.
class WindowSlot {
 public:
  explicit WindowSlot(RouteState& state);
  ~WindowSlot() { count_.fetch_sub(1); }
  WindowSlot(const WindowSlot&) = delete;
  WindowSlot& operator=(const WindowSlot&) = delete;

 private:
  std::atomic<unsigned>& count_;
};

// A report that needs the heap again later (?seconds=N): wait `wait`, then `finish()`,
// which never throws.
struct Window {
  std::chrono::seconds wait;
  std::function<Response()> finish;
};

// A request other processes answer (forward.hpp): every ask goes out at once, and
// `finish` makes the answer of theirs (it never throws). None of it waits on a thread:
// the Handler runs the exchanges asynchronously on its worker's io_context.
struct Forward {
  std::vector<PeerAsk> asks;
  std::function<Response(std::vector<PeerAnswer>)> finish;
  // A forwarded ?seconds= window: it holds a window place (in `finish`), is cancelled when
  // its client leaves, and Handler::handle refuses it as it refuses a Window.
  bool window = false;
};

using Outcome = std::variant<Response, Window, Forward>;

// The response for the exception being handled (a 4xx for a RequestError, 503 out of
// memory, else 500 with its reason); call only inside a catch.
Response failure_response(const ReplyTo& to);

// The route below the prefix that `path` (outside it) stands for: "/pprof/heap" for
// {pprof_prefix}/heap, "/metrics" for metrics_path; "" for none.
std::string_view alias_of(const Config& config, std::string_view path) noexcept;

// "" or "/a/b" from a Config path (prefix, pprof_prefix, metrics_path), its trailing slashes
// dropped. Throws std::invalid_argument, naming `what`, for one that does not start with '/'
// or is not a plain path.
std::string checked_prefix(std::string prefix, std::string_view what);

// Whether the request is one of the cheap reads that never wait behind reports: GET of
// /stats or of the dashboard's page and files, for this process (no pid=).
bool is_cheap_request(const Config& config, const Request& req) noexcept;

// The answer to a request under the prefix (or at an alias); every failure is a response, never an
// exception. The caller holds a liveheap::IgnoreScope.
Outcome answer(RouteState& state, const Request& req);

}  // namespace http
LIVEHEAP_NAMESPACE_END
