// A statistic line as the report document and the /history answer both have it: made from
// a key, written as JSON, read back strictly. Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "liveheap/report.hpp"

namespace liveheap::report {

// With cumulative=1 an include glob names the lines to show wherever they are in a stack
// (a Python app's own lines above an extension's allocation): a trace is kept when any of
// its frames matches, and only the lines that match are shown.
bool includes_every_frame(const ReportRequest& request);
// The request's include/exclude specs as filters (includes on every frame where
// includes_every_frame). Throws std::invalid_argument for a malformed one.
std::vector<Filter> filters_of(const ReportRequest& request);

// A line named as format_key names it, `key` kept whole as its traceback.
ReportLine line_of(const Traceback& key, KeyType key_type, std::int64_t size, std::int64_t count);

// {"key", "function", "short_function", "kind", "file", "line", "module", "size", "count",
// "average", "size_diff" and "count_diff" (`diff`), "traceback" (`with_traceback`), and
// the verdict's fields}.
nlohmann::json line_json(const ReportLine& line, bool diff, bool with_traceback);
// Reads what line_json wrote at `path` (strict_json.hpp's FieldError). The traceback is read
// when there is one (always for key=traceback); without one it is left unset.
ReportLine line_from(const nlohmann::json& j, const std::string& path, KeyType key, bool diff);

}  // namespace liveheap::report
