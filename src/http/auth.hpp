// Bearer-token authentication (RFC 6750), compared in constant time.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// True when the strings are equal. The time taken depends on the lengths only, never on
// where they first differ, so a client cannot find the token a byte at a time.
bool constant_time_equal(std::string_view presented, std::string_view expected) noexcept;

// Why `token` could never be presented, or std::nullopt when it could: whitespace at either
// end (HTTP trims header values, so it never matches) or a control character (no header
// may carry it). The reason never repeats the token.
std::optional<std::string> token_problem(std::string_view token);

// std::nullopt when `req` carries "Authorization: Bearer <token>" (or `token` is empty);
// else the 401 to send, with its WWW-Authenticate challenge.
std::optional<Response> check_bearer(const Request& req, std::string_view token, const ReplyTo& to);

}  // namespace http
LIVEHEAP_NAMESPACE_END
