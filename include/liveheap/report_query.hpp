// What a request to the routes asks, as one value: the query parameters (format, key,
// limit, cumulative, include/exclude, route, seconds, the start options, traceback,
// verdicts, pid, missing_baseline), their names defined once, one strict parser and one
// to_query() that writes the value back as a query the parser reads the same. The routes
// parse with it, forwarding re-targets with it, liveheap-watch builds its requests with it;
// the dashboard (web/static/report.js) mirrors the names.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/report.hpp"
#include "liveheap/settings.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

// How an answer is laid out. folded / folded2: flamegraph.pl's folded stacks, one or two
// value columns.
enum class AnswerFormat { text, json, folded, folded2 };

namespace query {

// The parameters a route may take, as a bit set.
enum Param : unsigned {
  kFormat = 1u << 0,
  kKey = 1u << 1,
  kLimit = 1u << 2,
  kCumulative = 1u << 3,
  kFilters = 1u << 4,  // include= and exclude=
  kSeconds = 1u << 5,
  kStartOptions = 1u << 6,      // mode=, frames=, sample_interval=, max_tracker_memory=
  kTraceback = 1u << 7,         // traceback=0|1: each JSON stat with its whole stack
  kFolded = 1u << 8,            // format=folded accepted (with kFormat)
  kFolded2 = 1u << 9,           // format=folded2 accepted too (/diff)
  kPid = 1u << 10,              // pid=N|all: which process of the registry answers
  kVerdicts = 1u << 11,         // verdicts=0|1: each text line ends with its history's verdict
  kMissingBaseline = 1u << 12,  // missing_baseline=error|empty: /diff without a baseline
  kRouteFilter = 1u << 13,      // route=GLOB (repeatable): the request's route
};
using ParamSet = unsigned;

// The limits are the settings module's (liveheap/settings.hpp), shared with the
// environment, Options and liveheap-watch.
inline constexpr std::size_t kMaxLimit = settings::kLimit.max;
inline constexpr unsigned kMaxSeconds = settings::kSeconds.max;
inline constexpr std::uint64_t kMinHttpSampleInterval = settings::kHttpSampleInterval.min;
inline constexpr long kAllProcesses = 0;             // ReportQuery::pid for pid=all
inline constexpr long kMaxPid = settings::kPid.max;  // Linux's PID_MAX_LIMIT

// A query the parser refuses; what() names the parameter and why, in one line.
class QueryError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace query

struct ReportQuery {
  std::optional<AnswerFormat> format;
  KeyType key = KeyType::line;
  std::size_t limit = 10;
  bool cumulative = false;
  std::vector<std::string> include;  // the globs as given, to echo in reports
  std::vector<std::string> exclude;
  std::vector<Filter> filters;      // the same, ready for Snapshot::filter_traces
  std::vector<std::string> routes;  // route=GLOB, for Snapshot::filter_routes
  unsigned seconds = 0;             // 0: no window
  std::optional<Mode> mode;
  std::optional<unsigned> frames;
  std::optional<std::uint64_t> sample_interval;
  std::optional<std::uint64_t> max_tracker_memory;  // bytes
  bool traceback = false;                           // traceback=1; key=traceback implies it
  bool verdicts = false;                            // verdicts=1 (text; JSON stats always carry theirs)
  std::optional<long> pid;                          // query::kAllProcesses for pid=all
  // missing_baseline=empty: without a baseline, /diff diffs against nothing (the whole heap is
  // growth: a process that joined its group after the baseline) instead of a 409.
  bool diff_nothing_without_baseline = false;
};

// Reads a query ("key=file&limit=5", still percent-encoded, without the '?') taking only
// the parameters `allowed`. Strict: an unknown, repeated or malformed parameter, a bad
// escape, a value out of its range throws query::QueryError naming it.
ReportQuery parse_report_query(std::string_view query, query::ParamSet allowed);

// The part of `query` a report echoes and is made by (key, limit, cumulative, include,
// exclude, traceback, route): what make_report, make_diff_report and make_history_report take.
ReportRequest report_request(const ReportQuery& query);

// The query that parse_report_query reads back as `query`: each parameter that is not its
// default, percent-encoded, in one order ("" when every one is).
std::string to_query(const ReportQuery& query);

// Strict percent-decoding (plus_is_space: '+' is a space, as in a query); the result must
// be UTF-8 without control characters. Throws query::QueryError naming `what`.
std::string percent_decode(std::string_view text, bool plus_is_space, std::string_view what);
// Percent-encodes all but letters, digits and -._~*?:/ (what a glob or a route keeps).
std::string percent_encode(std::string_view text);
// `text` made safe to quote in a one-line reason: short, printable ASCII only, quoted.
std::string excerpt(std::string_view text);

LIVEHEAP_API_END
