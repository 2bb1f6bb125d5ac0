// Building the report document from snapshots: filter, group, sort, keep the top lines.
#include "liveheap/report.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "grouping.hpp"
#include "report_lines.hpp"
#include "liveheap/format.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using report::filters_of;
using report::includes_every_frame;
using report::line_of;

// `snapshot` itself without filters, else the filtered copy, kept in `storage`.
const Snapshot& filtered(const Snapshot& snapshot, const std::vector<Filter>& filters,
                         const std::vector<std::string>& routes, Snapshot& storage) {
  if (filters.empty() && routes.empty()) return snapshot;
  storage = snapshot.filter_routes(routes).filter_traces(filters);
  return storage;
}

Report empty_report(const SnapshotInfo& info, const ReportRequest& request) {
  Report report;
  report.mode = info.mode;
  report.sample_interval = info.sample_interval;
  report.max_frames = info.max_frames;
  report.taken_at_ms = info.taken_at_ms;
  report.cap = info.cap;
  report.request = request;
  return report;
}

// The statistics a report shows: with includes_every_frame, those whose line an include
// glob matches.
template <typename Stats>
Stats shown_lines(Stats stats, const std::vector<Filter>& filters, const ReportRequest& request) {
  if (!includes_every_frame(request)) return stats;
  std::erase_if(stats, [&](const auto& stat) {
    return stat.traceback.empty() || std::none_of(filters.begin(), filters.end(), [&](const Filter& f) {
             return f.inclusive && f.matches(stat.traceback.front());
           });
  });
  return stats;
}

// traceback=1 with a key of one frame (line, file, function): each line gets a whole stack,
// the first of `stacks` (biggest first) that was counted in it, so that the answer says
// where the line was called from. A line no stack reaches keeps its one frame.
void attach_whole_stacks(std::vector<ReportLine>& lines, const std::vector<Traceback>& stacks,
                         const ReportRequest& request) {
  if (!request.traceback || request.key == KeyType::traceback || lines.empty()) return;
  std::unordered_map<std::string, std::size_t> line_of_id;
  for (std::size_t i = 0; i < lines.size(); ++i)
    line_of_id.try_emplace(report::group_id(lines[i].frame, request.key), i);

  std::vector<bool> done(lines.size(), false);
  std::size_t left = lines.size();
  const auto take = [&](const Traceback& stack, const Frame& frame) {
    const auto it = line_of_id.find(report::group_id(frame, request.key));
    if (it == line_of_id.end() || done[it->second]) return;
    lines[it->second].traceback = stack;
    done[it->second] = true;
    --left;
  };
  for (const Traceback& stack : stacks) {
    if (left == 0) break;
    if (stack.empty()) continue;
    if (request.key == KeyType::route) take(stack, route_frame(route_of(stack)));  // its route's line
    else if (!request.cumulative) take(stack, stack[user_frame_index(stack)]);
    else
      for (std::size_t i = 0; i < stack.size() && left > 0; ++i) take(stack, stack[i]);
  }
}

template <typename Stats>
std::vector<Traceback> stacks_of(const Stats& stats) {
  std::vector<Traceback> stacks;
  stacks.reserve(stats.size());
  for (const auto& s : stats) stacks.push_back(s.traceback);
  return stacks;
}

}  // namespace

Report make_report(const Snapshot& now, const ReportRequest& request, const VerdictOf& verdict_of) {
  Snapshot storage;
  const std::vector<Filter> filters = filters_of(request);
  const Snapshot& snapshot = filtered(now, filters, request.routes, storage);
  const std::vector<Statistic> stats =
      shown_lines(snapshot.statistics(request.key, request.cumulative), filters, request);
  Report report = empty_report(snapshot.info(), request);
  report.total = {snapshot.total_size(), snapshot.total_count(), 0, 0};
  report.keys = stats.size();
  const std::size_t shown = std::min(stats.size(), request.limit);
  report.lines.reserve(shown);
  for (std::size_t i = 0; i < shown; ++i) {
    ReportLine line = line_of(stats[i].traceback, request.key, stats[i].size, stats[i].count);
    if (verdict_of) line.verdict = verdict_of(stats[i].traceback);
    report.lines.push_back(std::move(line));
  }
  if (request.traceback && request.key != KeyType::traceback)
    attach_whole_stacks(report.lines, stacks_of(snapshot.statistics(KeyType::traceback)), request);
  return report;
}

Report make_diff_report(const Snapshot& now, const Snapshot& old, std::string against,
                        const ReportRequest& request, const VerdictOf& verdict_of) {
  const std::vector<Filter> filters = filters_of(request);
  Snapshot now_storage;
  Snapshot old_storage;
  const Snapshot& current = filtered(now, filters, request.routes, now_storage);
  const Snapshot& previous = filtered(old, filters, request.routes, old_storage);
  const std::vector<StatisticDiff> diffs =
      shown_lines(current.compare_to(previous, request.key, request.cumulative), filters, request);
  Report report = empty_report(current.info(), request);
  report.diff = ReportAgainst{std::move(against), previous.info().taken_at_ms};
  report.total = {current.total_size(), current.total_count(), current.total_size() - previous.total_size(),
                  current.total_count() - previous.total_count()};
  report.keys = diffs.size();
  const std::size_t shown = std::min(diffs.size(), request.limit);
  report.lines.reserve(shown);
  for (std::size_t i = 0; i < shown; ++i) {
    const StatisticDiff& d = diffs[i];
    ReportLine line = line_of(d.traceback, request.key, d.size, d.count);
    line.size_diff = d.size_diff;
    line.count_diff = d.count_diff;
    if (verdict_of) line.verdict = verdict_of(d.traceback);
    report.lines.push_back(std::move(line));
  }
  if (request.traceback && request.key != KeyType::traceback)
    attach_whole_stacks(report.lines, stacks_of(current.compare_to(previous, KeyType::traceback)), request);
  return report;
}

LIVEHEAP_NAMESPACE_END
