// HistoryIndex: a history's stack series grouped under a report key, with the grouping
// Snapshot::statistics uses (GroupIndex), so that a statistic finds its own series.
#include <algorithm>

#include "grouping.hpp"
#include "liveheap/history.hpp"

LIVEHEAP_NAMESPACE_BEGIN

struct HistoryIndex::Groups {
  report::GroupIndex index;
};

HistoryIndex::HistoryIndex(const History& history, KeyType key, bool cumulative,
                           const std::vector<Filter>& filters)
    : groups_(new Groups{report::GroupIndex(key, cumulative)}) {
  const std::size_t n = history.points.size();
  std::vector<Trace> traces;
  for (const StackHistory& s : history.stacks) traces.push_back({s.traceback, 0, 0, 0, 0});
  const std::vector<bool> kept = report::passes_filters(traces, filters);
  std::vector<std::size_t> kept_stacks;
  std::vector<Trace> kept_traces;
  for (std::size_t i = 0; i < traces.size(); ++i)
    if (kept[i]) kept_stacks.push_back(i), kept_traces.push_back(std::move(traces[i]));
  // One sum per point: the group numbers are shared by every call.
  std::vector<std::vector<report::Totals>> per_point(n);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t k = 0; k < kept_stacks.size(); ++k) {
      const StackHistory& s = history.stacks[kept_stacks[k]];
      kept_traces[k].size = s.sizes[p];
      kept_traces[k].count = s.counts[p];
      kept_traces[k].alloc_size = p < s.allocated.size() ? s.allocated[p] : 0;
      kept_traces[k].alloc_count = p < s.allocations.size() ? s.allocations[p] : 0;
    }
    per_point[p] = groups_->index.sum(kept_traces);
  }
  // Biggest last size first; by_group_ remembers where each group went.
  const std::size_t groups = groups_->index.size();
  auto size_at = [&](std::size_t g, std::size_t p) {
    return g < per_point[p].size() ? per_point[p][g] : report::Totals{};
  };
  std::vector<std::size_t> order(groups);
  for (std::size_t g = 0; g < groups; ++g) order[g] = g;
  if (n > 0)
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return size_at(a, n - 1).size > size_at(b, n - 1).size;
    });
  series_.resize(groups);
  by_group_.resize(groups);
  for (std::size_t i = 0; i < groups; ++i) {
    const std::size_t g = order[i];
    by_group_[g] = i;
    series_[i].key = groups_->index.take_key(g);
    for (std::size_t p = 0; p < n; ++p) {
      series_[i].sizes.push_back(size_at(g, p).size);
      series_[i].counts.push_back(size_at(g, p).count);
      series_[i].allocated.push_back(size_at(g, p).alloc_size);
      series_[i].allocations.push_back(size_at(g, p).alloc_count);
    }
  }
}

HistoryIndex::~HistoryIndex() { delete groups_; }

const KeySeries* HistoryIndex::find(const Traceback& key) {
  const std::size_t before = groups_->index.size();
  const std::vector<report::Totals> totals = groups_->index.sum({Trace{key, 1, 1, 0, 0}});
  for (std::size_t g = 0; g < totals.size(); ++g)
    if (totals[g].count != 0) return g < before ? &series_[by_group_[g]] : nullptr;
  return nullptr;
}

LIVEHEAP_NAMESPACE_END
