// The bodies of the report routes, as text (tracemalloc's lines under a header of totals)
// or JSON (the same fields as numbers). Thread-safety: pure functions.
#pragma once

#include <string>

#include "liveheap/history.hpp"
#include "liveheap/snapshot.hpp"
#include "liveheap/tracker.hpp"
#include "process_memory.hpp"
#include "query.hpp"
#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// GET /stats: the tracker's and the process's state now (reads them itself), and `windows`:
// the ?seconds= windows open now on this handler.
Response stats_report(const ReplyTo& to, unsigned windows);

// GET /top: statistics of `now` grouped by query.key, the top query.limit of them. `group`:
// the processes of this one's group; more than one, the answer says so (pid=all merges them).
Response top_report(const ReplyTo& to, const Snapshot& now, const Query& query, std::size_t group = 1);

// GET /diff: `now` against `old`; `against` says what `old` is, e.g. "the baseline".
Response diff_report(const ReplyTo& to, const Snapshot& now, const Snapshot& old,
                     const Query& query, const std::string& against, std::size_t group = 1);

// GET /tracebacks: the biggest stacks of `now`, each whole.
Response tracebacks_report(const ReplyTo& to, const Snapshot& now, const Query& query);

// GET /history: the points, and per key its series and verdict (the top query.limit by
// size at the last point).
Response history_report(const ReplyTo& to, const History& history, const Query& query);
// GET /routes: per route, what its requests allocated and left behind; `report` gets each
// route's verdict from the history here.
Response routes_report(const ReplyTo& to, RouteReport report);
// The same laid out (pid=all: the merged report, verdicts already in).
Response route_report_response(const ReplyTo& to, const RouteReport& report);

// GET and POST /baseline: when it was taken and its totals (nothing symbolized).
Response baseline_report(const ReplyTo& to, const StackSnapshot& baseline, std::size_t group = 1);

// POST /trim: what the allocator was asked (`done`), RSS before and after, and the bytes of
// freed sampled blocks liveheap itself gave back.
Response trim_report(const ReplyTo& to, const ProcessMemory& before, const ProcessMemory& after,
                     const std::string& done, std::int64_t tracker_released);

}  // namespace http
LIVEHEAP_NAMESPACE_END
