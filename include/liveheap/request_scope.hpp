// Tagging a request's allocations with its route: while a RequestScope is alive, every block
// this thread allocates records the route, and keeps it whoever frees it. Reports then read
// by route (key=route, route=GLOB, GET /debug/memory/routes). The C API is liveheap/liveheap.h.
//
//   liveheap::RequestScope scope("GET /users/{id}");   // the framework's route pattern
//
// An asynchronous handler carries the request into its continuations as OpenTelemetry
// carries a context: take a token where the request is, re-enter it where the work goes on.
//
//   auto token = liveheap::current_request();
//   pool.post([token] { liveheap::RequestScope again(token); ... });
//
// Cheap: a scope interns its name in a fixed table (lock-free) and sets a thread-local;
// allocations outside any scope pay one compare more. A Beast host names the request with
// liveheap::http::request_scope(req) (liveheap/http.hpp).
// Thread-safety: a scope and a token belong to no thread; a scope tags the thread it was made
// on and must end there (scopes nest: the end of one puts back the tag before it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"

LIVEHEAP_API_BEGIN

// The request a thread is handling, to be re-entered elsewhere; default: no request.
class RequestToken {
 public:
  RequestToken() = default;
  bool empty() const noexcept { return route_ == 0; }
  friend bool operator==(RequestToken, RequestToken) = default;

 private:
  friend RequestToken current_request() noexcept;
  friend class RequestScope;
  explicit RequestToken(std::uint16_t route) noexcept : route_(route) {}
  std::uint16_t route_ = 0;
};

// The request this thread is in now (empty outside any).
RequestToken current_request() noexcept;

class RequestScope {
 public:
  // A request of `route` begins: counted as one request of it. A name is at most 127 bytes
  // (cut at a character's start); bytes that are not UTF-8 read as '?'; "" is "(unnamed)";
  // past 255 distinct names a new one counts as "(other routes)".
  explicit RequestScope(std::string_view route) noexcept;
  // A continuation re-enters the request of `token`: not counted again. An empty token
  // leaves this thread outside any request while the scope lives.
  explicit RequestScope(RequestToken token) noexcept;
  ~RequestScope();  // the tag before the scope is this thread's again
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;

  RequestToken token() const noexcept { return token_; }

 private:
  RequestToken token_;
  std::uint16_t before_ = 0;
};

// Each route seen since the process started, with its request count (RequestScopes made
// with a name, liveheap_request_begin calls), in no particular order.
struct RouteRequests {
  std::string route;
  std::uint64_t requests = 0;
};
std::vector<RouteRequests> requests_by_route();

LIVEHEAP_API_END
