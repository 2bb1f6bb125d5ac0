// The heap over time as pure values: the tracker's history points, each stack's series, the
// series grouped under a report key, and the verdict on a series (growing, plateaued, ...).
// Thread-safety: immutable values once built; the functions are pure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

// One tick of the history.
struct HistoryPoint {
  std::int64_t t_ms = 0;    // unix time in milliseconds
  std::int64_t traced = 0;  // traced bytes now
  std::int64_t peak = 0;    // traced peak
  std::int64_t rss = 0;     // resident bytes; -1 when unknown
  // Live stacks smaller than the biggest History::stacks_per_point at this tick: not
  // recorded (their series read 0 here), and the bytes they held.
  std::int64_t stacks_dropped = 0;
  std::int64_t bytes_dropped = 0;
  // The allocator's own figures at this tick, in its names (as /stats "allocator"):
  // e.g. jemalloc's "allocated", "active", "resident", "retained", "mapped".
  std::vector<std::pair<std::string, std::int64_t>> allocator{};
  // The program's work: bytes and blocks the process allocated since it started (every
  // stack's cumulative totals, the figures behind /pprof/allocs; estimates in sampled mode).
  // The verdict's axis: an interval in which the process allocated no more than noise is idle.
  std::int64_t allocated = 0;
  std::int64_t allocations = 0;
  // Requests each route had handled by this tick, since the process started
  // (liveheap/request_scope.hpp): the axis of a route's verdict. Routes with none are absent.
  std::vector<std::pair<std::string, std::uint64_t>> route_requests{};

  friend bool operator==(const HistoryPoint&, const HistoryPoint&) = default;
};

// One stack's live bytes and blocks at each point (index = point index; 0 where the stack
// was not among the biggest at that tick), and the bytes and blocks it allocated since the
// process started (cumulative; where the stack was not recorded, the last value recorded
// before, or before its first record, that record less the blocks then live).
struct StackHistory {
  Traceback traceback;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> allocated;  // empty: not recorded (read as no allocation seen)
  std::vector<std::int64_t> allocations;
};

struct History {
  double interval_s = 0;             // 0: history is off
  std::vector<HistoryPoint> points;  // oldest first
  std::vector<StackHistory> stacks;
  std::size_t stacks_per_point = 0;  // the biggest stacks recorded per tick
  std::size_t max_points = 0;        // points kept; older ones are dropped
  std::uint64_t points_dropped = 0;  // ticks dropped for being older than the window
  std::uint64_t noise = 0;           // bytes one sample weighs (sampled mode), else 0
};

// A history's stack series grouped under a key, as Snapshot::statistics groups traces.
struct KeySeries {
  Traceback key;  // as Statistic::traceback
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> allocated;    // cumulative bytes the group's stacks allocated
  std::vector<std::int64_t> allocations;  // and blocks
};

// Groups `history.stacks` that pass `filters` under `key` (with `cumulative`, every frame
// counts its stack, as Snapshot::statistics). Throws std::invalid_argument as statistics.
// Thread-safety: none; lives for one report.
class HistoryIndex {
 public:
  HistoryIndex(const History& history, KeyType key, bool cumulative, const std::vector<Filter>& filters);
  ~HistoryIndex();
  HistoryIndex(const HistoryIndex&) = delete;
  HistoryIndex& operator=(const HistoryIndex&) = delete;

  // The series of the group a statistic's key (Statistic::traceback) belongs to; nullptr
  // when no recorded stack had that key.
  const KeySeries* find(const Traceback& key);
  // Every group, biggest last size first.
  const std::vector<KeySeries>& all() const noexcept { return series_; }

 private:
  struct Groups;
  Groups* groups_;
  std::vector<KeySeries> series_;
  std::vector<std::size_t> by_group_;  // group number -> index in series_
};

enum class Trend { growing, plateaued, stable, shrinking, unknown };
std::string_view to_string(Trend trend) noexcept;
// The inverse of to_string (a client reading the server's "verdict"); nullopt for any other text.
std::optional<Trend> parse_trend(std::string_view text) noexcept;

// The verdict on a series and the numbers behind it.
struct Verdict {
  Trend trend = Trend::unknown;
  double growth_per_min = 0;       // fitted over the recent window (or its rise, for a rise
                                   // that stopped), bytes per minute of work
  double since_last_growth_s = 0;  // from the last new high to the last point (wall time)
  std::size_t window = 0;          // points in the recent window (points with work)
  double tolerance = 0;            // bytes below which a change is noise
  // Why: of the bytes the series allocated over the history window, the fraction still live
  // (~1 a leak's signature, ~0 a callsite that frees what it allocates); nullopt where it
  // allocated nothing in the window.
  std::optional<double> retention;
  // Seconds from the last point at which the series had allocated more to the last point;
  // nullopt when the history never saw it allocate.
  std::optional<double> idle_s;
  double allocated = 0;         // bytes it allocated over the window (merges weigh retention)
  std::size_t work_points = 0;  // points whose interval had work (the rule's axis)

  friend bool operator==(const Verdict&, const Verdict&) = default;
};

// Constants of the rule (the only implementation: the dashboard and liveheap-watch show the
// server's verdicts).
inline constexpr std::size_t kVerdictMinPoints = 5;
inline constexpr std::size_t kVerdictMinWindow = 4;
inline constexpr std::size_t kVerdictMaxWindow = 20;
inline constexpr double kVerdictRelTolerance = 0.01;
inline constexpr double kVerdictMinTolerance = 64;
// An interval in which the whole process allocated no more than this (or the sampling
// interval, if larger) is idle: background noise, not work.
inline constexpr double kVerdictIdleBytes = 4096;
// Sampled mode: a difference within this many standard errors of the series' estimate is
// noise (two estimates a window apart differ by up to sqrt(2) of one): the band of levels,
// rises and steps.
inline constexpr double kVerdictEstimateErrors = 4;
// Sampled mode: a trend (the window's fitted change) within this many is noise. Wider than
// the band: a window spanning a turnover or two of what is sampled sees the estimate wander
// as its samples are replaced (an LRU at capacity sampled at 16 KiB, simulated in
// verdict_test.cpp: at 4, 0.8 % of its histories read a trend from their slope; at 5, none).
inline constexpr double kVerdictTrendErrors = 5;
// Sampled mode: a series holds its level while within this many standard errors of it.
inline constexpr double kVerdictHoldErrors = 2;
// Whether the process was idle from one point to a later one: it allocated no more than
// max(noise, kVerdictIdleBytes) per history interval elapsed between them (an idle stretch
// kept as one point spans several intervals). `interval_ms` 0: the points are one interval
// apart, whatever their times. The verdict, the history's "idle" flags and the recorder's
// folding of idle stretches all ask this.
inline bool idle_between(std::int64_t allocated_from, std::int64_t allocated_to, std::int64_t elapsed_ms,
                         std::int64_t interval_ms, std::uint64_t noise) noexcept {
  const double intervals =
      interval_ms > 0
          ? std::max(1.0, std::round(static_cast<double>(elapsed_ms) / static_cast<double>(interval_ms)))
          : 1.0;
  return static_cast<double>(allocated_to - allocated_from) <=
         std::max(static_cast<double>(noise), kVerdictIdleBytes) * intervals;
}

// A callsite that rose in steps is still growing until it has been flat for more than this
// many times the longest working time between its steps.
inline constexpr double kVerdictStepGapFactor = 2;

// The rule on the program's work (docs/history.md). `t_ms`, `sizes`: the series (same length,
// oldest first). `allocated`: the series' cumulative allocated bytes, `work`: the process's
// (both the same length, or empty: every interval then counts as work). `noise`: bytes one
// sample can be off by (sampled mode), else 0. `estimate_error`: one standard error of the
// series' estimate at its largest (sampled mode; classify(History, KeySeries) computes it from
// the series' sizes and counts), else 0.
//   - an interval is work when the process allocated more than max(noise, kVerdictIdleBytes)
//     per history interval in it (`interval_ms`; 0: one interval between points) or the
//     series itself allocated; idle intervals are taken out (the clock stops: what changed
//     while idle counts at the last point with work);
//   - no interval with work: unknown;
//   - the recent window is the last W = clamp(m / 3, 4, 20) of the m points with work (at
//     most m); its change is the least-squares slope over the window (by working time) times
//     its span;
//   - tolerance = max(noise, kVerdictEstimateErrors x estimate_error, 1% of the largest |size|,
//     64 bytes);
//   - with kVerdictMinPoints points of work or more: growing when change > the trend band,
//     shrinking when change < -the trend band (the tolerance with kVerdictTrendErrors
//     standard errors in place of kVerdictEstimateErrors);
//   - growing: the size rose in steps (3 or more, each over the last by more than tolerance)
//     and has been flat for at most kVerdictStepGapFactor x the longest working time between
//     steps;
//   - a series that rose (its last size more than 2 x tolerance above its lowest) and holds
//     its high (within the hold band: the tolerance with kVerdictHoldErrors standard errors
//     in place of kVerdictEstimateErrors) is plateaued only with evidence of a bound: since it reached its level it
//     allocated more than max(tolerance, 10% of its gain) while its size held (churn), or
//     the process worked at least as much after it reached its level as from its low to it;
//     without that evidence it is growing, however long it then idled;
//   - otherwise, with fewer than kVerdictMinPoints points of work: unknown;
//   - plateaued: every window point within tolerance of the window's mean, below an earlier
//     high and more than 2 x tolerance above the lowest size before the window;
//   - stable: anything else.
Verdict classify(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
                 const std::vector<std::int64_t>& allocated, const std::vector<std::int64_t>& work,
                 std::uint64_t noise, double estimate_error = 0, std::int64_t interval_ms = 0);
// The same without the program's work: every interval counts as work.
Verdict classify(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
                 std::uint64_t noise = 0);
// A key's series of `history` (from its HistoryIndex), judged on the history's work.
Verdict classify(const History& history, const KeySeries& series);
// A route's series (key=route) judged on the route's own requests, `requests` its cumulative
// count at each point (route_request_counts): an interval is work when the route handled a
// request in it or the series allocated, and "the program did as much work again" means as
// many requests again. A leak whose route went quiet stays growing however busy the rest of
// the process is; a full cache whose requests go on reads plateaued.
Verdict classify_on_requests(const History& history, const KeySeries& series,
                             const std::vector<std::int64_t>& requests);

// pid=all: `into`, a statistic summed so far, takes the verdict of `other`, the same key's
// verdict in another process. Each process judged its own history: when they agree the
// verdict stands (growth per minute summed, the most recent growth kept, retention weighed
// by what each allocated, the least idle kept); when they differ it is unknown.
void merge_verdicts(Verdict& into, const Verdict& other);

// " [growing, retains 100%, idle 620 s]" (" [unknown]" while unknown): appended to a text line
// with verdicts=1.
std::string verdict_text(const Verdict& verdict);

// The times of a history's points, for classify().
std::vector<std::int64_t> point_times(const History& history);
// The process's cumulative allocated bytes at each point, for classify().
std::vector<std::int64_t> point_work(const History& history);
// The requests `route` had handled at each point (HistoryPoint::route_requests; 0 before
// its first), for classify_on_requests().
std::vector<std::int64_t> route_request_counts(const History& history, std::string_view route);
// Whether the interval ending at each point was idle (the process allocated no more than
// noise in it); the first point is never idle. The dashboard draws idle stretches folded.
std::vector<bool> idle_points(const History& history);

LIVEHEAP_API_END
