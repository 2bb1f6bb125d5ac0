// Bearer-token authentication (RFC 6750), compared in constant time.
#include "auth.hpp"

#include <cstdio>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

bool constant_time_equal(std::string_view presented, std::string_view expected) noexcept {
  if (expected.empty()) return presented.empty();
  // Every byte of `presented` is compared (cycling over `expected`), and the differences
  // are OR-ed together: no early exit, no branch on the data.
  unsigned char difference = presented.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < presented.size(); ++i)
    difference |= static_cast<unsigned char>(presented[i] ^ expected[i % expected.size()]);
  // volatile: keeps the compiler from turning the loop back into an early-exit compare.
  volatile unsigned char result = difference;
  return result == 0;
}

std::optional<std::string> token_problem(std::string_view token) {
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  if (!token.empty() && (blank(token.front()) || blank(token.back())))
    return std::string(
        "has whitespace at its start or end, which HTTP trims from the "
        "Authorization header: it could never match; remove it");
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c < 0x20 || c == 0x7F) {
      char where[64];
      std::snprintf(where, sizeof where, " (0x%02X at byte %zu)", c, i + 1);
      return "holds a control character" + std::string(where) +
             ", which no Authorization header can carry: it could never match";
    }
  }
  return std::nullopt;
}

std::optional<Response> check_bearer(const Request& req, std::string_view token, const ReplyTo& to) {
  if (token.empty()) return std::nullopt;
  namespace bh = boost::beast::http;
  const std::string_view header = req[bh::field::authorization];
  constexpr std::string_view kScheme = "Bearer ";  // the scheme is case-insensitive
  const bool bearer =
      header.size() > kScheme.size() && boost::beast::iequals(header.substr(0, kScheme.size()), kScheme);
  std::string_view presented = bearer ? header.substr(kScheme.size()) : std::string_view();
  while (!presented.empty() && presented.front() == ' ') presented.remove_prefix(1);
  if (bearer && constant_time_equal(presented, token)) return std::nullopt;

  Response res = make_error(to, Status::unauthorized,
                            bearer ? "the bearer token is not the right one"
                                   : "this server requires Authorization: Bearer <token>");
  res.set(bh::field::www_authenticate,
          bearer ? R"(Bearer realm="liveheap", error="invalid_token")" : R"(Bearer realm="liveheap")");
  return res;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
