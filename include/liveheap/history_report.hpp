// GET /history as one value: the history's points (with whether each interval was idle), and
// per key (grouped as the reports group) its series, allocated series and verdict, the
// biggest at the last point first. Built from a History, written as JSON or text (each
// held to a byte budget, as the report document is), read back strictly.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/history.hpp"
#include "liveheap/report.hpp"

LIVEHEAP_API_BEGIN

struct HistoryReport {
  double interval_s = 0;  // 0: history is off
  std::string allocator;  // the allocator's name; each point's figures are in its names
  std::size_t max_points = 0;
  std::uint64_t points_dropped = 0;
  std::size_t stacks_per_point = 0;
  // What was asked: key, limit, cumulative, include/exclude, traceback (the lines carry
  // their key's stack). cumulative is not in the JSON: read back, it is false.
  ReportRequest request;
  struct Point {
    HistoryPoint at;
    bool idle = false;  // the process allocated no more than noise in the interval to it
    friend bool operator==(const Point&, const Point&) = default;
  };
  std::vector<Point> points;
  std::size_t keys = 0;  // keys there were before `limit`
  // One value of a key's series: at a point's time, bytes and blocks (live, or allocated
  // since start-up for allocated_series).
  struct Sample {
    std::int64_t t_ms = 0;
    std::int64_t bytes = 0;
    std::int64_t blocks = 0;
    friend bool operator==(const Sample&, const Sample&) = default;
  };
  struct Line {
    ReportLine stat;  // its size and count at the last point, and the verdict on its series
    std::vector<Sample> series;
    std::vector<Sample> allocated_series;
    friend bool operator==(const Line&, const Line&) = default;
  };
  std::vector<Line> lines;  // at most request.limit, biggest at the last point first
  bool truncated = false;   // some lines were left out for size (see to_json)

  friend bool operator==(const HistoryReport&, const HistoryReport&) = default;
};

// The answer for `history` grouped as `request` asks (key, cumulative, include/exclude),
// the top request.limit keys; `allocator`: the allocator's name. Throws
// std::invalid_argument as Snapshot::statistics does.
HistoryReport make_history_report(const History& history, const ReportRequest& request,
                                  std::string allocator);

// {"interval_s", "allocator", "max_points", "points_dropped", "stacks_per_point", "key",
// "limit", "include", "exclude", "keys", "points": [{"t_ms", "traced", "peak", "rss",
// "allocator": {figures}, "stacks_dropped", "bytes_dropped", "allocated", "allocations",
// "idle"}], "stats": [a report line with "series" and "allocated_series": [[t_ms, bytes,
// blocks]]], "truncated"}, one line. Lines are written while they stay within `max_bytes`.
std::string to_json(const HistoryReport& report,
                    std::size_t max_bytes = std::numeric_limits<std::size_t>::max());
// Throws std::invalid_argument naming a missing or mistyped field ("history JSON:
// stats[0].series[3] is ...").
HistoryReport history_report_from_json(std::string_view text);
// "History: 12 points every 10 s over 110 s; last: traced=..., peak=..., rss=...", then
// "Top N of M lines by size now:" and a line each with its verdict, up to `max_bytes`.
std::string to_text(const HistoryReport& report,
                    std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

LIVEHEAP_API_END
