// Which requests a browser may not make: DNS rebinding (a Host that is not ours, when there
// is no token), cross-site requests that change state (CSRF) and cross-site reads that would
// only make the host work, refused before any route runs.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// True for localhost, 127.0.0.0/8 and [::1], with or without ":port".
bool is_loopback_host(std::string_view host);

// Why one item of Config::allowed_hosts could never match a Host header, or std::nullopt:
// it must be "name", "name:port", "[v6]" or "[v6]:port" (no scheme, path or spaces).
std::optional<std::string> allowed_host_problem(std::string_view host);

// std::nullopt when the request may go on to its route; else the 403 to send, with a
// one-line reason. Without Config::token, the Host must be a loopback name or one of
// Config::allowed_hosts; a POST must not come from another origin (Origin, Sec-Fetch-Site);
// any other request from another site (Sec-Fetch-Site cross-site or same-site) must be a
// top-level navigation, or ask for the dashboard's page or files (`page_or_file`).
std::optional<Response> check_request_policy(const Request& req, const Config& config, bool page_or_file,
                                             const ReplyTo& to);

}  // namespace http
LIVEHEAP_NAMESPACE_END
