// Snapshot: filtering, grouping by key, statistics and comparison, as tracemalloc does.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "liveheap/snapshot.hpp"

namespace liveheap {
namespace {

// A group: its key as a traceback (what reports show) and its totals.
struct Group {
  Traceback key;
  std::int64_t size = 0;
  std::int64_t count = 0;
};
using Groups = std::unordered_map<std::string, Group>;

void append_field(std::string* id, std::string_view field) {
  id->append(field);
  id->push_back('\0');  // fields cannot contain NUL: the id is unambiguous
}

// The identity of one frame under `key` and the frame a report shows for it.
std::string frame_id(const Frame& f, KeyType key, Frame* shown) {
  std::string id;
  switch (key) {
    case KeyType::line:
      // One group per source line, whatever the address; without debug info the
      // "module+offset" function text is the line.
      if (f.file.empty()) append_field(&id, f.function);
      else append_field(&id, f.file), append_field(&id, std::to_string(f.line));
      *shown = f;
      break;
    case KeyType::file:
      append_field(&id, f.file.empty() ? f.module : f.file);
      *shown = Frame{"", f.file.empty() ? f.module : f.file, 0, f.module, 0};
      break;
    case KeyType::function:
      append_field(&id, f.function);
      *shown = Frame{f.function, f.file, 0, f.module, 0};
      break;
    case KeyType::traceback:
      break;  // handled by traceback_id
  }
  return id;
}

std::string traceback_id(const Traceback& tb) {
  std::string id;
  for (const Frame& f : tb) {
    append_field(&id, f.file);
    append_field(&id, std::to_string(f.line));
    append_field(&id, f.file.empty() ? f.function : std::string_view{});
  }
  return id;
}

void add(Groups* groups, std::string id, Traceback key, const Trace& trace) {
  auto [it, inserted] = groups->try_emplace(std::move(id));
  if (inserted) it->second.key = std::move(key);
  it->second.size += trace.size;
  it->second.count += trace.count;
}

Groups group_by(const std::vector<Trace>& traces, KeyType key, bool cumulative) {
  if (cumulative && key == KeyType::traceback)
    throw std::invalid_argument("cumulative mode cannot be used with key 'traceback'");
  Groups groups;
  for (const Trace& trace : traces) {
    if (key == KeyType::traceback) {
      add(&groups, traceback_id(trace.traceback), trace.traceback, trace);
    } else if (!cumulative) {
      Frame shown;
      const Frame empty;
      const Frame& f = trace.traceback.empty() ? empty
                                                : trace.traceback[user_frame_index(trace.traceback)];
      std::string id = frame_id(f, key, &shown);
      add(&groups, std::move(id), Traceback{shown}, trace);
    } else {
      // Every frame counts the trace, but once per trace: unlike tracemalloc, recursion
      // (the same line twice in one stack) does not count a block twice.
      std::unordered_set<std::string> seen;
      for (const Frame& f : trace.traceback) {
        Frame shown;
        std::string id = frame_id(f, key, &shown);
        if (seen.insert(id).second) add(&groups, std::move(id), Traceback{shown}, trace);
      }
    }
  }
  return groups;
}

// Deterministic tie-break between groups: by their key frames.
bool key_less(const Traceback& a, const Traceback& b) {
  return std::lexicographical_compare(
      a.begin(), a.end(), b.begin(), b.end(), [](const Frame& x, const Frame& y) {
        return std::tie(x.file, x.line, x.function) < std::tie(y.file, y.line, y.function);
      });
}

}  // namespace

Snapshot::Snapshot(std::vector<Trace> traces, SnapshotInfo info)
    : traces_(std::move(traces)), info_(info) {}

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

Snapshot Snapshot::filter_traces(const std::vector<Filter>& filters) const {
  std::vector<Trace> kept;
  const bool any_inclusive =
      std::any_of(filters.begin(), filters.end(), [](const Filter& f) { return f.inclusive; });
  for (const Trace& trace : traces_) {
    bool included = !any_inclusive;
    bool excluded = false;
    for (const Filter& f : filters) {
      if (f.inclusive) included = included || f.matches(trace.traceback);
      else excluded = excluded || f.matches(trace.traceback);
    }
    if (included && !excluded) kept.push_back(trace);
  }
  return Snapshot(std::move(kept), info_);
}

std::vector<Statistic> Snapshot::statistics(KeyType key, bool cumulative) const {
  std::vector<Statistic> stats;
  for (auto& [id, g] : group_by(traces_, key, cumulative))
    stats.push_back({std::move(g.key), g.size, g.count});
  std::sort(stats.begin(), stats.end(), [](const Statistic& a, const Statistic& b) {
    if (a.size != b.size) return a.size > b.size;
    if (a.count != b.count) return a.count > b.count;
    return key_less(b.traceback, a.traceback);
  });
  return stats;
}

std::vector<StatisticDiff> Snapshot::compare_to(const Snapshot& old, KeyType key,
                                                bool cumulative) const {
  Groups now = group_by(traces_, key, cumulative);
  Groups before = group_by(old.traces_, key, cumulative);
  std::vector<StatisticDiff> diffs;
  for (auto& [id, g] : now) {
    StatisticDiff d{std::move(g.key), g.size, g.size, g.count, g.count};
    if (const auto it = before.find(id); it != before.end()) {
      d.size_diff -= it->second.size;
      d.count_diff -= it->second.count;
      before.erase(it);
    }
    diffs.push_back(std::move(d));
  }
  for (auto& [id, g] : before)  // vanished since `old`
    diffs.push_back({std::move(g.key), 0, -g.size, 0, -g.count});
  std::sort(diffs.begin(), diffs.end(), [](const StatisticDiff& a, const StatisticDiff& b) {
    const auto ka = std::make_tuple(std::llabs(a.size_diff), a.size, std::llabs(a.count_diff), a.count);
    const auto kb = std::make_tuple(std::llabs(b.size_diff), b.size, std::llabs(b.count_diff), b.count);
    if (ka != kb) return ka > kb;
    return key_less(b.traceback, a.traceback);
  });
  return diffs;
}

}  // namespace liveheap
