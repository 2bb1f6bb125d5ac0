// Request targets and query parameters, parsed strictly: a malformed escape, an unknown or
// repeated parameter, a bad number or glob is a 400 naming it, never a guess.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/settings.hpp"
#include "liveheap/snapshot.hpp"
#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// The parameters a route may take, as a bit set.
enum Param : unsigned {
  kFormat = 1u << 0,
  kKey = 1u << 1,
  kLimit = 1u << 2,
  kCumulative = 1u << 3,
  kFilters = 1u << 4,  // include= and exclude=
  kSeconds = 1u << 5,
  kStartOptions = 1u << 6,  // mode=, frames=, sample_interval=, max_tracker_memory=
  kTraceback = 1u << 7,     // traceback=0|1: each JSON stat with its whole stack
  kFolded = 1u << 8,        // format=folded accepted (with kFormat)
  kFolded2 = 1u << 9,       // format=folded2 accepted too (/diff)
  kPid = 1u << 10,          // pid=N|all: which process of the registry answers (forward.hpp)
  kVerdicts = 1u << 11,     // verdicts=0|1: each text line ends with its history's verdict
  kMissingBaseline = 1u << 12,  // missing_baseline=error|empty: /diff without a baseline
  kRouteFilter = 1u << 13,      // route=GLOB (repeatable): the request's route
};
using ParamSet = unsigned;

// The limits are the settings module's (liveheap/settings.hpp), shared with the
// environment, Options and liveheap-watch.
inline constexpr std::size_t kMaxLimit = settings::kLimit.max;
inline constexpr unsigned kMaxSeconds = settings::kSeconds.max;
inline constexpr std::uint64_t kMinHttpSampleInterval = settings::kHttpSampleInterval.min;
inline constexpr long kAllProcesses = 0;  // Query::pid for pid=all
inline constexpr long kMaxPid = settings::kPid.max;  // Linux's PID_MAX_LIMIT

struct Query {
  std::optional<Format> format;
  KeyType key = KeyType::line;
  std::size_t limit = 10;
  bool cumulative = false;
  std::vector<std::string> include;  // the globs as given, to echo in reports
  std::vector<std::string> exclude;
  std::vector<Filter> filters;       // the same, ready for Snapshot::filter_traces
  std::vector<std::string> routes;   // route=GLOB, for Snapshot::filter_routes
  unsigned seconds = 0;              // 0: no window
  std::optional<Mode> mode;
  std::optional<unsigned> frames;
  std::optional<std::uint64_t> sample_interval;
  std::optional<std::uint64_t> max_tracker_memory;  // bytes
  bool traceback = false;  // traceback=1; key=traceback implies it
  bool verdicts = false;   // verdicts=1 (text; JSON stats always carry theirs)
  std::optional<long> pid;  // kAllProcesses for pid=all
  // missing_baseline=empty: without a baseline, /diff diffs against nothing (the whole heap is
  // growth: a process that joined its group after the baseline) instead of a 409.
  bool diff_nothing_without_baseline = false;
};

struct Target {
  std::string path;      // percent-decoded
  std::string_view query;  // still encoded, without the '?'
};

// Splits and decodes a request target. Throws RequestError (400) for a target that is not
// an absolute path, a bad escape, or a control character once decoded.
Target split_target(std::string_view target);

// Throws RequestError (400) naming the first offending parameter.
Query parse_query(std::string_view query, ParamSet allowed);

// `text` made safe to quote in a one-line reason: short, printable ASCII only.
std::string excerpt(std::string_view text);

}  // namespace http
LIVEHEAP_NAMESPACE_END
