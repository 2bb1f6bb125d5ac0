// The bodies of the routes: the process's state read into the report layer's values, laid
// out as text or JSON. Thread-safety: functions of the process's state, callable from any
// thread under an IgnoreScope.
#pragma once

#include <string>

#include "liveheap/baseline_report.hpp"
#include "liveheap/history.hpp"
#include "liveheap/history_report.hpp"
#include "liveheap/route_report.hpp"
#include "liveheap/snapshot.hpp"
#include "liveheap/stats_report.hpp"
#include "liveheap/trim_report.hpp"
#include "liveheap/tracker.hpp"
#include "process_memory.hpp"
#include "query.hpp"
#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// A typed answer (StatsReport, BaselineReport, ...) laid out as the client asked.
template <typename Value>
Response typed_response(const ReplyTo& to, const Value& value) {
  if (to.format == Format::json)
    return make_response(to, Status::ok, to_json(value) + "\n", "application/json");
  return make_text(to, Status::ok, to_text(value));
}

// GET /stats: the tracker's and the process's state now, and `windows`: the ?seconds=
// windows open now on this handler.
StatsReport stats_now(unsigned windows);

// GET /top: statistics of `now` grouped by query.key, the top query.limit of them. `group`:
// the processes of this one's group; more than one, the answer says so (pid=all merges them).
Response top_report(const ReplyTo& to, const Snapshot& now, const Query& query, std::size_t group = 1);

// GET /diff: `now` against `old`; `against` says what `old` is, e.g. "the baseline".
Response diff_report(const ReplyTo& to, const Snapshot& now, const Snapshot& old, const Query& query,
                     const std::string& against, std::size_t group = 1);

// GET /tracebacks: the biggest stacks of `now`, each whole.
Response tracebacks_report(const ReplyTo& to, const Snapshot& now, const Query& query);

// GET /history: the points, and per key its series and verdict (the top query.limit by
// size at the last point).
Response history_report(const ReplyTo& to, const History& history, const Query& query);
// GET /routes: per route, what its requests allocated and left behind; `report` gets each
// route's verdict from the history here.
Response routes_report(const ReplyTo& to, RouteReport report);

// GET and POST /baseline: when it was taken and its totals (nothing symbolized). `group`:
// the processes of this one's group.
BaselineReport baseline_report_of(const StackSnapshot& baseline, std::size_t group = 1);

// POST /trim: asks the allocator (and liveheap's sampled region) to give free memory back,
// with RSS before and after.
TrimReport trim_now();

}  // namespace http
LIVEHEAP_NAMESPACE_END
