// Snapshot: filtering, statistics and comparison, as tracemalloc does (grouping.cpp groups).
#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "frame_memo.hpp"
#include "grouping.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// Deterministic tie-break between groups: by their key frames.
bool key_less(const Traceback& a, const Traceback& b) {
  return std::lexicographical_compare(
      a.begin(), a.end(), b.begin(), b.end(), [](const Frame& x, const Frame& y) {
        return std::tie(x.file, x.line, x.function) < std::tie(y.file, y.line, y.function);
      });
}

}  // namespace

Snapshot::Snapshot(std::vector<Trace> traces, SnapshotInfo info) : traces_(std::move(traces)), info_(info) {}

std::int64_t Snapshot::total_size() const noexcept {
  std::int64_t total = 0;
  for (const Trace& t : traces_) total += t.size;
  return total;
}

std::int64_t Snapshot::total_count() const noexcept {
  std::int64_t total = 0;
  for (const Trace& t : traces_) total += t.count;
  return total;
}

LIVEHEAP_NAMESPACE_END

namespace liveheap::report {

std::vector<bool> passes_filters(const std::vector<Trace>& traces, const std::vector<Filter>& filters) {
  // Each filter tests each distinct frame once.
  UserFrames user_frames;
  std::vector<FrameMemo<bool>> matched(filters.size());
  auto passes = [&](std::size_t k, const Traceback& tb) {
    return traceback_matches(
        filters[k], tb, [&](const Traceback& t) { return user_frames.index(t); },
        [&](std::size_t i) {
          return matched[k].get(tb, i,
                                [&](const Traceback& t, std::size_t j) { return filters[k].matches(t[j]); });
        });
  };
  const bool any_inclusive =
      std::any_of(filters.begin(), filters.end(), [](const Filter& f) { return f.inclusive; });
  std::vector<bool> kept(traces.size());
  for (std::size_t t = 0; t < traces.size(); ++t) {
    bool included = !any_inclusive;
    bool excluded = false;
    for (std::size_t k = 0; k < filters.size(); ++k) {
      if (filters[k].inclusive) included = included || passes(k, traces[t].traceback);
      else excluded = excluded || passes(k, traces[t].traceback);
    }
    kept[t] = included && !excluded;
  }
  return kept;
}

}  // namespace liveheap::report

LIVEHEAP_NAMESPACE_BEGIN

Snapshot Snapshot::filter_traces(const std::vector<Filter>& filters) const {
  // Kept traces share this snapshot's table.
  const std::vector<bool> passes = report::passes_filters(traces_, filters);
  std::vector<Trace> kept;
  for (std::size_t t = 0; t < traces_.size(); ++t)
    if (passes[t]) kept.push_back(traces_[t]);
  return Snapshot(std::move(kept), info_);
}

Snapshot Snapshot::filter_routes(const std::vector<std::string>& globs) const {
  if (globs.empty()) return *this;
  route_matches("", globs);  // throws for a malformed glob, even without traces
  std::vector<Trace> kept;
  for (const Trace& trace : traces_)
    if (route_matches(route_of(trace.traceback), globs)) kept.push_back(trace);
  return Snapshot(std::move(kept), info_);
}

std::vector<Statistic> Snapshot::statistics(KeyType key, bool cumulative) const {
  report::GroupIndex groups(key, cumulative);
  const std::vector<report::Totals> totals = groups.sum(traces_);
  std::vector<Statistic> stats;
  stats.reserve(totals.size());
  for (std::size_t g = 0; g < totals.size(); ++g)
    stats.push_back({groups.take_key(g), totals[g].size, totals[g].count});
  std::sort(stats.begin(), stats.end(), [](const Statistic& a, const Statistic& b) {
    if (a.size != b.size) return a.size > b.size;
    if (a.count != b.count) return a.count > b.count;
    return key_less(b.traceback, a.traceback);
  });
  return stats;
}

std::vector<StatisticDiff> Snapshot::compare_to(const Snapshot& old, KeyType key, bool cumulative) const {
  // One numbering for both snapshots: a group seen in either is new, vanished or changed,
  // and `now - before` with a missing side at zero covers all three.
  report::GroupIndex groups(key, cumulative);
  std::vector<report::Totals> now = groups.sum(traces_);
  const std::vector<report::Totals> before = groups.sum(old.traces_);
  now.resize(groups.size());
  std::vector<StatisticDiff> diffs;
  diffs.reserve(now.size());
  for (std::size_t g = 0; g < now.size(); ++g)
    diffs.push_back({groups.take_key(g), now[g].size, now[g].size - before[g].size, now[g].count,
                     now[g].count - before[g].count});
  std::sort(diffs.begin(), diffs.end(), [](const StatisticDiff& a, const StatisticDiff& b) {
    const auto ka = std::make_tuple(std::llabs(a.size_diff), a.size, std::llabs(a.count_diff), a.count);
    const auto kb = std::make_tuple(std::llabs(b.size_diff), b.size, std::llabs(b.count_diff), b.count);
    if (ka != kb) return ka > kb;
    return key_less(b.traceback, a.traceback);
  });
  return diffs;
}

LIVEHEAP_NAMESPACE_END
