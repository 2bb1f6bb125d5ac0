// Request targets, and their query read strictly (see query.hpp).
#include "query.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

// `read()`, a refused query as a 400 with its reason.
template <typename Read>
auto or_bad_request(Read read) {
  try {
    return read();
  } catch (const QueryError& e) {
    throw RequestError(Status::bad_request, e.what());
  }
}

}  // namespace

Target split_target(std::string_view target) {
  if (target.empty() || target.front() != '/')
    throw RequestError(Status::bad_request,
                       "the request target must be an absolute path, e.g. /debug/memory/stats");
  const auto mark = target.find('?');
  const std::string_view path = target.substr(0, mark);
  if (target.find('#') != std::string_view::npos)
    throw RequestError(Status::bad_request, "a request target has no #fragment");
  return {or_bad_request([&] { return percent_decode(path, false, "path"); }),
          mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1)};
}

Query parse_query(std::string_view text, ParamSet allowed) {
  return or_bad_request([&] { return parse_report_query(text, allowed); });
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
