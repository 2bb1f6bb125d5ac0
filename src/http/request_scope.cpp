// A Beast request's route name for RequestScope: its method and path, without the query.
#include <algorithm>
#include <cstring>

#include "liveheap/http.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

RequestScope request_scope(const Request& req) noexcept {
  // On the stack: a name longer than the engine keeps is cut there anyway.
  char name[128];
  std::size_t n = 0;
  const auto append = [&](std::string_view part) {
    const std::size_t take = std::min(part.size(), sizeof name - n);
    std::memcpy(name + n, part.data(), take);
    n += take;
  };
  const std::string_view target(req.target().data(), req.target().size());
  append(std::string_view(req.method_string().data(), req.method_string().size()));
  append(" ");
  append(target.substr(0, target.find('?')));
  return RequestScope(std::string_view(name, n));
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
