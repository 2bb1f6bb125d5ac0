// libFuzzer target for the route dispatcher: raw bytes go through Beast's request parser with
// the admin server's limits, and every request it accepts goes to two Handlers (no token;
// a token and an allowed host name), as a server would hand it in. Every answer must be a
// well-formed response, and the browser defences must hold whatever the request says:
// without a token only a loopback or allowed Host is served; with one, nothing but the
// dashboard's files without the token; no POST from another site changes anything.
// Tracing is off in this process (the fuzzer's sanitizer is the malloc, see docs/fuzzing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/parser.hpp>

#include "liveheap/http.hpp"
#include "query.hpp"

namespace {

namespace bh = boost::beast::http;
using liveheap::http::Config;
using liveheap::http::Handler;
using liveheap::http::Request;
using liveheap::http::Response;

constexpr std::string_view kToken = "s3cret-token";
constexpr std::string_view kAllowedHost = "heap.example";

[[noreturn]] void fail(const char* what, const Request& req, const Response* res) {
  std::fprintf(stderr, "handler_fuzzer: %s\nrequest: %.*s %.*s\n", what,
               static_cast<int>(req.method_string().size()), req.method_string().data(),
               static_cast<int>(req.target().size()), req.target().data());
  if (res) std::fprintf(stderr, "status %u\n", res->result_int());
  std::abort();
}

Handler& open_handler() {
  static Handler handler{Config{}};
  return handler;
}

Handler& token_handler() {
  static Handler handler{[] {
    Config config;
    config.token = kToken;
    config.allowed_hosts = {std::string(kAllowedHost)};
    return config;
  }()};
  return handler;
}

// A second opinion on request_policy.cpp's Host rule, written without it.
bool loopback_or_allowed(std::string_view host) {
  const auto starts = [&](std::string_view prefix) {
    return host.size() >= prefix.size() && boost::beast::iequals(host.substr(0, prefix.size()), prefix);
  };
  const auto is = [&](std::string_view name) {
    return boost::beast::iequals(host, name) ||
           (starts(name) && host.size() > name.size() && host[name.size()] == ':');
  };
  return is("localhost") || starts("127.") || starts("[::1]") || starts("[0:0:0:0:0:0:0:1]") ||
         starts("[::ffff:127.") || is(kAllowedHost);
}

// The dashboard's page and files hold no data: they are served without the token.
bool is_dashboard(std::string_view target) {
  const std::string path = liveheap::http::split_target(target).path;  // served: it parsed
  // Its files are also served beside the page (/debug/memory/app.js); no data route has a '.'.
  return path == "/debug/memory" || path == "/debug/memory/" || path.starts_with("/debug/memory/static/") ||
         (path.starts_with("/debug/memory/") && path.find('.', path.rfind('/')) != std::string::npos);
}

bool is_success(const Response& res) { return res.result_int() < 300; }

void check_response(const Request& req, const Response& res, bool with_token) {
  const unsigned status = res.result_int();
  if (status < 200 || status > 599) fail("a status outside 200..599", req, &res);
  if (res.at("X-Frame-Options") != "DENY") fail("no X-Frame-Options: DENY", req, &res);
  if (res.has_content_length() && res.payload_size() && *res.payload_size() != res.body().size())
    fail("Content-Length differs from the body", req, &res);
  if (req.method() == bh::verb::head && !res.body().empty()) fail("a body for HEAD", req, &res);
  if (!is_success(res)) return;
  if (!with_token && !loopback_or_allowed(req[bh::field::host]))
    fail("served a foreign Host without a token", req, &res);
  const std::string_view site = req["Sec-Fetch-Site"];
  if (req.method() == bh::verb::post && (site == "cross-site" || site == "same-site"))
    fail("a cross-site POST was served", req, &res);
  if (with_token && !is_dashboard(req.target()) &&
      req[bh::field::authorization].find(kToken) == std::string_view::npos)
    fail("served data without the token", req, &res);
}

void dispatch(Handler& handler, const Request& req, bool with_token) {
  std::optional<Response> res;
  try {
    res = handler.handle(req);
  } catch (...) {
    fail("Handler::handle threw", req, nullptr);
  }
  if (res) check_response(req, *res, with_token);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The admin server's limits (admin_server.cpp): 8 KiB of headers, 1 KiB of body.
  bh::request_parser<bh::string_body> parser;
  parser.header_limit(8 * 1024);
  parser.body_limit(1024);
  parser.eager(true);
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_done()) return 0;
  const Request req = parser.release();
  dispatch(open_handler(), req, false);
  dispatch(token_handler(), req, true);
  return 0;
}
