// The route table: which path and method does what, with which parameters, and the one
// place where a failure becomes a response; a request for another process (?pid=) is
// forwarded around it (forward.hpp). Thread-safety: answer() may run on any number of
// threads at once; RouteState's members are each safe to share.
#pragma once

#include <string>
#include <string_view>

#include "liveheap/http.hpp"
#include "outcome.hpp"
#include "reply.hpp"
#include "route_state.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// The route below the prefix that `path` (outside it) stands for: "/pprof/heap" for
// {pprof_prefix}/heap, "/metrics" for metrics_path; "" for none.
std::string_view alias_of(const Config& config, std::string_view path) noexcept;

// "" or "/a/b" from a Config path (prefix, pprof_prefix, metrics_path), its trailing slashes
// dropped. Throws std::invalid_argument, naming `what`, for one that does not start with '/'
// or is not a plain path.
std::string checked_prefix(std::string prefix, std::string_view what);

// Whether the request is one of the cheap reads that never wait behind reports: GET of
// /stats or of the dashboard's page and files, for this process (no pid=).
bool is_cheap_request(const Config& config, const Request& req) noexcept;

// The answer to a request under the prefix (or at an alias); every failure is a response, never an
// exception. The caller holds a liveheap::IgnoreScope.
Outcome answer(RouteState& state, const Request& req);

}  // namespace http
LIVEHEAP_NAMESPACE_END
