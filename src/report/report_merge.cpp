// pid=all: the report documents of every process of a program summed into one (see
// merge in liveheap/report.hpp).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

#include "liveheap/report.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// What makes two processes' lines one: the key's text, or for whole tracebacks every
// frame's function, file and line (addresses differ between programs).
std::string merge_key(const ReportLine& line, KeyType key) {
  if (key != KeyType::traceback || !line.traceback) return line.key;
  std::string text;
  for (const Frame& f : *line.traceback)
    text += f.function + "\n" + f.file + ":" + std::to_string(f.line) + "\n";
  return text;
}

// Each process has its own cap: reached by any, its folds and drops summed.
void add_cap(TrackerMemoryCap& into, const TrackerMemoryCap& cap) {
  into.reached = into.reached || cap.reached;
  into.max_bytes = std::max(into.max_bytes, cap.max_bytes);
  into.folded_blocks += cap.folded_blocks;
  into.folded_bytes += cap.folded_bytes;
  into.dropped_blocks += cap.dropped_blocks;
  into.dropped_bytes += cap.dropped_bytes;
}

}  // namespace

Report merge(std::vector<ProcessReport> reports, std::vector<ReportFailure> failed, std::size_t limit,
             bool traceback) {
  Report merged = reports.at(0).report;
  merged.total = {};
  merged.lines.clear();
  merged.group_processes.reset();  // the merge is the group
  if (merged.diff) merged.diff->against = "the baseline";
  const bool diff = merged.diff.has_value();
  std::vector<long> pids;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    Report& report = reports[i].report;
    pids.push_back(reports[i].pid);
    merged.processes.push_back(
        {reports[i].pid, report.total, report.diff && report.diff->against == kAgainstNothing});
    if (i != 0) {
      merged.truncated = merged.truncated || report.truncated;  // a process left lines out
      add_cap(merged.cap, report.cap);
    }
    merged.total.size += report.total.size;
    merged.total.count += report.total.count;
    merged.total.size_diff += report.total.size_diff;
    merged.total.count_diff += report.total.count_diff;
    for (ReportLine& line : report.lines) {
      const auto [at, fresh] = index.try_emplace(merge_key(line, merged.request.key), merged.lines.size());
      if (fresh) {
        merged.lines.push_back(std::move(line));
        continue;
      }
      ReportLine& into = merged.lines[at->second];
      into.size += line.size;
      into.count += line.count;
      into.size_diff += line.size_diff;
      into.count_diff += line.count_diff;
      if (into.verdict && line.verdict) merge_verdicts(*into.verdict, *line.verdict);
    }
  }
  std::vector<ReportLine>& lines = merged.lines;
  for (ReportLine& line : lines)
    line.average = line.count == 0 ? 0.0 : static_cast<double>(line.size) / static_cast<double>(line.count);
  const auto rank = [diff](const ReportLine& s) {
    using Rank = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
    return diff ? Rank{std::abs(s.size_diff), s.size, std::abs(s.count_diff), s.count}
                : Rank{s.size, s.count, 0, 0};
  };
  std::stable_sort(lines.begin(), lines.end(),
                   [&](const ReportLine& a, const ReportLine& b) { return rank(a) > rank(b); });
  merged.keys = lines.size();
  lines.resize(std::min(lines.size(), limit));
  merged.request.limit = limit;
  merged.request.traceback = traceback;  // as a single process answers
  merged.pids = std::move(pids);
  merged.failed = std::move(failed);
  return merged;
}

LIVEHEAP_NAMESPACE_END
