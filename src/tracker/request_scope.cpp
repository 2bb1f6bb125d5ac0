// RequestScope and RequestToken over the engine's per-thread route (request_route.hpp).
#include "liveheap/request_scope.hpp"

#include "request_route.hpp"

LIVEHEAP_NAMESPACE_BEGIN

RequestToken current_request() noexcept { return RequestToken(engine::current_route()); }

RequestScope::RequestScope(std::string_view route) noexcept
    : before_(engine::begin_request(route.data(), route.size())) {
  token_ = RequestToken(engine::current_route());
}

RequestScope::RequestScope(RequestToken token) noexcept : token_(token), before_(engine::current_route()) {
  engine::set_route(token.route_);
}

RequestScope::~RequestScope() { engine::set_route(before_); }

std::vector<RouteRequests> requests_by_route() {
  std::vector<RouteRequests> out;
  for (engine::RouteId id = 1; id <= engine::kOtherRoutes; ++id) {
    const char* name = engine::route_name(id);
    const std::uint64_t requests = engine::route_requests(id);
    if (name != nullptr && requests > 0) out.push_back({name, requests});
  }
  return out;
}

LIVEHEAP_NAMESPACE_END
