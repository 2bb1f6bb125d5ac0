// The report document of GET /top, /peak, /tracebacks and /diff (one process, or pid=all
// merged) as one value: what was asked, when, the totals and the statistic lines. The routes
// build it and lay it out with to_json or to_text; liveheap-watch and any other client read
// an answer back with report_from_json. JSON carries "schema": kReportSchema; fields are
// added in later schemas, never renamed.
// Thread-safety: immutable values once built; the functions are pure (to_text with
// TextStyle::stacks reads source files through format_traceback's cache).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/history.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

// The JSON layout this build writes and reads. A document of another schema is refused by
// report_from_json, naming both numbers.
inline constexpr int kReportSchema = 1;

// What the report was asked for, echoed in it.
struct ReportRequest {
  KeyType key = KeyType::line;
  std::size_t limit = 10;
  bool cumulative = false;
  std::vector<std::string> include;  // Filter::parse specs: "GLOB" or "function:GLOB"
  std::vector<std::string> exclude;
  // Every JSON line with its stack (key=traceback implies it). Not a JSON field: read back,
  // it is whether the lines carried one.
  bool traceback = false;
  // Globs on the route of the request that allocated (route_of): a trace passes when one
  // matches (none: every trace), before include/exclude. JSON "route", when given.
  std::vector<std::string> routes;

  friend bool operator==(const ReportRequest&, const ReportRequest&) = default;
};

// One statistic line. In a report that is not a diff, size_diff and count_diff are 0 and
// not written.
struct ReportLine {
  std::string key;  // the server's name for it: "file:line", a file, a function
  Frame frame;      // the frame it is named after (for key=traceback, the user frame)
  // The key's stack: whole for key=traceback; for another key with request.traceback, the
  // biggest whole stack counted in the line (for a diff, the one that changed most); else
  // the key's one frame. JSON carries it for key=traceback or request.traceback; nullopt
  // when a report read back had none.
  std::optional<Traceback> traceback;
  std::int64_t size = 0;
  std::int64_t count = 0;
  std::int64_t size_diff = 0;
  std::int64_t count_diff = 0;
  double average = 0;  // size / count; 0 without blocks
  // The server's verdict on the line's history; nullopt only in a report built without
  // verdicts (it is then written as "unknown").
  std::optional<Verdict> verdict;

  friend bool operator==(const ReportLine&, const ReportLine&) = default;
};

// A process that did not answer a pid=all report.
struct ReportFailure {
  long pid = 0;
  int status = 0;
  std::string error;

  friend bool operator==(const ReportFailure&, const ReportFailure&) = default;
};

// The diff part of a report: what the heap was compared with.
struct ReportAgainst {
  std::string against;  // "the baseline", "the heap 5 s ago"
  std::int64_t old_taken_at_ms = 0;

  friend bool operator==(const ReportAgainst&, const ReportAgainst&) = default;
};

// A diff against nothing: the process had no baseline (it joined its group after the
// baseline was taken), so every live byte counts as growth.
inline constexpr const char* kAgainstNothing = "nothing (no baseline: the whole heap is growth)";

struct ReportTotal {
  std::int64_t size = 0;
  std::int64_t count = 0;
  std::int64_t size_diff = 0;   // diffs only
  std::int64_t count_diff = 0;  // diffs only

  friend bool operator==(const ReportTotal&, const ReportTotal&) = default;
};

struct Report {
  // How the (newer) snapshot was made.
  Mode mode = Mode::exact;
  std::uint64_t sample_interval = 0;
  unsigned max_frames = 0;
  std::int64_t taken_at_ms = 0;
  TrackerMemoryCap cap;  // the tracker-memory cap and what it folded or dropped (pid=all: summed)

  ReportRequest request;
  std::optional<ReportAgainst> diff;  // set: a diff report
  ReportTotal total;                  // of every trace that passed the filters
  std::size_t keys = 0;               // lines there were before `limit`
  std::vector<ReportLine> lines;      // at most request.limit, biggest first
  bool truncated = false;             // some lines were left out for size (see to_json)

  // pid=all: the processes merged, and those that did not answer.
  std::optional<std::vector<long>> pids;
  std::vector<ReportFailure> failed;
  // pid=all: each merged process's own totals; `joined`: it had no baseline (it joined the
  // group after the baseline: its whole heap counted as growth).
  struct Process {
    long pid = 0;
    ReportTotal total;
    bool joined = false;
    friend bool operator==(const Process&, const Process&) = default;
  };
  std::vector<Process> processes;
  // One process's answer in a group of several: how many processes the group has.
  std::optional<std::size_t> group_processes;
};

// A line's verdict from its key (Statistic::traceback); unset: no verdicts.
using VerdictOf = std::function<Verdict(const Traceback& key)>;

// The statistics of `now` (filtered by request.include/exclude, grouped by request.key, the
// top request.limit lines). Throws std::invalid_argument for a malformed filter or
// cumulative with key=traceback.
Report make_report(const Snapshot& now, const ReportRequest& request, const VerdictOf& verdict_of = {});
// `now` against `old` (both filtered), `against` naming `old`.
Report make_diff_report(const Snapshot& now, const Snapshot& old, std::string against,
                        const ReportRequest& request, const VerdictOf& verdict_of = {});

// One process's report, for a pid=all merge.
struct ProcessReport {
  long pid = 0;
  Report report;
};

// pid=all: every process's report of one request (`reports`, in pid order; at least one)
// summed key by key: the first one's fields, every process's totals and lines added (a
// line's verdict merged with merge_verdicts; whole tracebacks matched by their frames'
// functions, files and lines, as addresses differ between programs), sorted as one process
// sorts, the top `limit` lines; each process's own totals in Report::processes, and `failed`,
// those that did not answer. `traceback`: what the request asked (the processes were asked
// for every stack).
Report merge(std::vector<ProcessReport> reports, std::vector<ReportFailure> failed, std::size_t limit,
             bool traceback);

// The JSON document (one line, no trailing newline). Lines are written while the document
// stays within `max_bytes` of them; "truncated" is true when some were left out (or
// report.truncated was).
std::string to_json(const Report& report, std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

// Reads a document written by to_json. Strict: a missing field, a field of the wrong type,
// an unknown word or another schema throws std::invalid_argument naming the field, e.g.
// "report JSON: stats[2].size_diff is missing".
// (liveheap/json.hpp also reads a document already parsed as nlohmann::json.)
Report report_from_json(std::string_view text);  // also refuses text that is not JSON

// How to_text lays a report out (none of this is in the JSON).
struct TextStyle {
  bool verdicts = false;  // each line ends with its verdict (verdicts=1)
  bool stacks = false;    // each line followed by its whole stack (key=traceback)
  std::size_t max_bytes = std::numeric_limits<std::size_t>::max();  // then a truncation note
};

// The text report: a header line of totals, then one line per statistic in tracemalloc's
// format ("file:line: size=38.5 MiB (+25.6 MiB), count=6 (+4), average=6.4 MiB").
std::string to_text(const Report& report, const TextStyle& style = {});
// One line as to_text writes it, without verdict or newline.
std::string to_text(const ReportLine& line, bool diff);
// pid=all: one process's share of a merged diff, "  pid 42: +6.5 MiB (+10 blocks)" (and
// ", new since the baseline: its whole heap counted" for one that joined after it).
std::string to_text(const Report::Process& process);

LIVEHEAP_API_END
