// A route report judged on the history: each route's verdict on its own requests, and,
// without a baseline, what its requests left behind over the history window.
#include <algorithm>

#include "liveheap/history.hpp"
#include "liveheap/route_report.hpp"

LIVEHEAP_NAMESPACE_BEGIN

void judge_on_history(RouteReport& report, const History& history) {
  if (history.points.empty()) return;
  HistoryIndex index(history, KeyType::route, false, {});
  const bool over_window = !report.since_baseline && history.points.size() >= 2;
  for (RouteLine& line : report.routes) {
    const KeySeries* series = index.find(Traceback{route_frame(line.route)});
    const std::vector<std::int64_t> requests = route_request_counts(history, line.route);
    // Blocks allocated outside any request have no requests to judge by: the process's work.
    const bool has_requests = !requests.empty() && requests.back() > 0;
    if (series != nullptr)
      line.verdict = std::string(to_string(
          (has_requests ? classify_on_requests(history, *series, requests) : classify(history, *series))
              .trend));
    if (!over_window) continue;
    line.retained_bytes = line.live_bytes - (series != nullptr ? series->sizes.front() : 0);
    const auto before = static_cast<std::uint64_t>(std::max<std::int64_t>(0, requests.front()));
    line.retained_requests = line.requests > before ? line.requests - before : 0;
  }
  if (over_window) report.since_ms = history.points.front().t_ms;
  finish(report);
}

LIVEHEAP_NAMESPACE_END
