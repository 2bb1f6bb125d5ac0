// The report document as text: a header line of totals and how the report was made, then
// tracemalloc's lines (byte for byte), with verdicts and whole stacks where asked.
#include <nlohmann/json.hpp>

#include "liveheap/format.hpp"
#include "liveheap/report.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

std::string plural(KeyType key) { return std::string(to_string(key)) + "s"; }

std::string signed_count(std::int64_t n) { return (n >= 0 ? "+" : "") + std::to_string(n); }

std::string size(std::int64_t bytes, bool sign = false) {
  return format_size(static_cast<double>(bytes), sign);
}

// "(mode=sampled, one sample per 512.0 KiB, cumulative, include=*.cpp)".
std::string how_made(const Report& report) {
  std::string text = "(mode=" + std::string(to_string(report.mode));
  if (report.mode == Mode::sampled)
    text += ", one sample per " + size(static_cast<std::int64_t>(report.sample_interval));
  if (report.request.cumulative) text += ", cumulative";
  for (const std::string& glob : report.request.include) text += ", include=" + glob;
  for (const std::string& glob : report.request.exclude) text += ", exclude=" + glob;
  if (const std::string cap = format_cap(report.cap); !cap.empty()) text += ", " + cap;
  return text + ")";
}

// "size=X (+Y), count=C (+D)" for a diff, "size=X, count=C" otherwise.
std::string totals(const Report& report) {
  const ReportTotal& t = report.total;
  if (!report.diff) return "size=" + size(t.size) + ", count=" + std::to_string(t.count);
  return "size=" + size(t.size) + " (" + size(t.size_diff, true) + "), count=" + std::to_string(t.count) +
         " (" + signed_count(t.count_diff) + ")";
}

std::string truncation_note(std::size_t max_bytes, std::size_t shown, std::size_t wanted) {
  return "(truncated at " + format_size(static_cast<double>(max_bytes), false) + ": " +
         std::to_string(shown) + " of " + std::to_string(wanted) +
         " rows shown; ask for a smaller limit= or narrow with include=)\n";
}

// pid=all: the processes summed, those that did not answer, then the lines (as far as
// style.max_bytes, as one process's report).
std::string merged_text(const Report& report, const TextStyle& style) {
  nlohmann::json pids = *report.pids;
  std::string text = "Top " + std::to_string(report.lines.size()) + " of " + std::to_string(report.keys) +
                     " " + plural(report.request.key) + (report.diff ? " against the baselines" : "") +
                     " of " + std::to_string(report.pids->size()) + " processes: " + totals(report) +
                     " (mode=" + std::string(to_string(report.mode)) + ", pids " + pids.dump() + ")\n";
  for (const ReportFailure& f : report.failed)
    text += "pid " + std::to_string(f.pid) + " did not answer: " + f.error + "\n";
  if (report.diff)  // each process's share, so the one that grows is seen at a glance
    for (const Report::Process& p : report.processes) text += to_text(p) + "\n";
  const std::size_t wanted = report.lines.size();
  for (std::size_t i = 0; i < wanted; ++i) {
    const std::string row = to_text(report.lines[i], report.diff.has_value()) + "\n";
    if (text.size() + row.size() > style.max_bytes) {
      text += truncation_note(style.max_bytes, i, wanted);
      break;
    }
    text += row;
  }
  return text;
}

}  // namespace

std::string to_text(const ReportLine& line, bool diff) {
  return diff ? format_statistic_diff(line.key, line.size, line.size_diff, line.count, line.count_diff)
              : format_statistic(line.key, line.size, line.count);
}

std::string to_text(const Report::Process& p) {
  return "  pid " + std::to_string(p.pid) + ": " + size(p.total.size_diff, true) + " (" +
         signed_count(p.total.count_diff) + " blocks)" +
         (p.joined ? ", new since the baseline: its whole heap counted" : "");
}

std::string to_text(const Report& report, const TextStyle& style) {
  if (report.pids) return merged_text(report, style);
  std::string text = "Top " + std::to_string(report.lines.size()) + " of " + std::to_string(report.keys) +
                     " " + plural(report.request.key) +
                     (report.diff ? " against " + report.diff->against : "") + ": " + totals(report) + " " +
                     how_made(report) + "\n";
  if (report.group_processes)
    text += "(this is 1 of the " + std::to_string(*report.group_processes) +
            " processes of this program: pid=all merges them all)\n";
  const std::size_t wanted = report.lines.size();
  for (std::size_t i = 0; i < wanted; ++i) {
    const ReportLine& line = report.lines[i];
    std::string row = (style.stacks ? "\n" : "") + to_text(line, report.diff.has_value());
    if (style.verdicts) row += verdict_text(line.verdict.value_or(Verdict{}));
    row += "\n";
    if (style.stacks)
      for (const std::string& frame : format_traceback(line.traceback.value_or(Traceback{line.frame})))
        row += frame + "\n";
    if (text.size() + row.size() > style.max_bytes) {
      text += truncation_note(style.max_bytes, i, wanted);
      break;
    }
    text += row;
  }
  return text;
}

LIVEHEAP_NAMESPACE_END
