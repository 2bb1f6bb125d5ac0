// The heap over time as pure values: the tracker's history points, each stack's series, the
// series grouped under a report key, and the verdict on a series (growing, plateaued, ...).
// Thread-safety: immutable values once built; the functions are pure.
#pragma once

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
  std::int64_t t_ms = 0;     // unix time in milliseconds
  std::int64_t traced = 0;   // traced bytes now
  std::int64_t peak = 0;     // traced peak
  std::int64_t rss = 0;      // resident bytes; -1 when unknown
  // Live stacks smaller than the biggest History::stacks_per_point at this tick: not
  // recorded (their series read 0 here), and the bytes they held.
  std::int64_t stacks_dropped = 0;
  std::int64_t bytes_dropped = 0;
  // The allocator's own figures at this tick, in its names (as /stats "allocator"):
  // e.g. jemalloc's "allocated", "active", "resident", "retained", "mapped".
  std::vector<std::pair<std::string, std::int64_t>> allocator;
};

// One stack's live bytes and blocks at each point (index = point index; 0 where the stack
// was not among the biggest at that tick).
struct StackHistory {
  Traceback traceback;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> counts;
};

struct History {
  double interval_s = 0;          // 0: history is off
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
};

// Groups `history.stacks` that pass `filters` under `key` (with `cumulative`, every frame
// counts its stack, as Snapshot::statistics). Throws std::invalid_argument as statistics.
// Thread-safety: none; lives for one report.
class HistoryIndex {
 public:
  HistoryIndex(const History& history, KeyType key, bool cumulative,
               const std::vector<Filter>& filters);
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
  double growth_per_min = 0;        // fitted over the recent window, bytes per minute
  double since_last_growth_s = 0;   // from the last new high to the last point
  std::size_t window = 0;           // points in the recent window
  double tolerance = 0;             // bytes below which a change is noise
};

// Constants of the rule (the only implementation: the dashboard and liveheap-watch show the
// server's verdicts).
inline constexpr std::size_t kVerdictMinPoints = 5;
inline constexpr std::size_t kVerdictMinWindow = 4;
inline constexpr std::size_t kVerdictMaxWindow = 20;
inline constexpr double kVerdictRelTolerance = 0.01;
inline constexpr double kVerdictMinTolerance = 64;

// The rule, on sizes at times t_ms (same length, oldest first; `noise`: bytes one sample can
// be off by). See docs/history.md:
//   - fewer than kVerdictMinPoints points: unknown;
//   - the recent window is the last W = clamp(n / 3, 4, 20) points; its change is the
//     least-squares slope over the window times its span (by time);
//   - tolerance = max(noise, 1% of the largest |size|, 64 bytes);
//   - growing: change > tolerance; shrinking: change < -tolerance;
//   - plateaued: every window point within tolerance of the window's mean, and the size at
//     the window's start exceeds the lowest earlier size by more than 2 x tolerance;
//   - stable: anything else.
Verdict classify(const std::vector<std::int64_t>& t_ms, const std::vector<std::int64_t>& sizes,
                 std::uint64_t noise = 0);

// " [growing, +1.2 KiB/min, last grew 0 s ago]": appended to a text line with verdicts=1.
std::string verdict_text(const Verdict& verdict);

// The times of a history's points, for classify().
std::vector<std::int64_t> point_times(const History& history);

LIVEHEAP_API_END
