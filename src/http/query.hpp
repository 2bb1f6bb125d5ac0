// Request targets, and their query read as the report layer's request model
// (liveheap/report_query.hpp): a malformed escape, an unknown or repeated parameter, a bad
// number or glob is a 400 naming it, never a guess.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "liveheap/report_query.hpp"
#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// The parameters' bits and limits (query::kFormat, ..., query::kMaxLimit, kAllProcesses).
using namespace liveheap::query;

using Query = ReportQuery;

struct Target {
  std::string path;        // percent-decoded
  std::string_view query;  // still encoded, without the '?'
};

// Splits and decodes a request target. Throws RequestError (400) for a target that is not
// an absolute path, a bad escape, or a control character once decoded.
Target split_target(std::string_view target);

// parse_report_query, its refusal a RequestError (400) naming the first offending parameter.
Query parse_query(std::string_view query, ParamSet allowed);

}  // namespace http
LIVEHEAP_NAMESPACE_END
