// What the routes of one Handler share: its configuration, the baseline, and the places of
// the ?seconds= windows waiting now. Thread-safety: each member is safe to share.
#pragma once

#include <atomic>
#include <string>
#include <variant>

#include "baseline.hpp"
#include "liveheap/http.hpp"

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

}  // namespace http
LIVEHEAP_NAMESPACE_END
