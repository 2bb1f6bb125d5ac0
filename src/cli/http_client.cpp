// liveheap-watch's HTTP client, modelled on Beast's example/http/client/async: asynchronous
// operations run to completion one at a time, because only those honour tcp_stream's
// timeouts (a synchronous connect to a silent host would hang for minutes).
#include "http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace liveheap::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// A /diff of 10000 tracebacks is a few MiB; anything far bigger is not liveheap talking.
constexpr std::uint64_t kMaxBody = 256u << 20;

// Runs the operation just started on `ioc` to completion, and turns its error into a
// ConnectionError saying what was being done.
void finish(net::io_context& ioc, const beast::error_code& ec, const std::string& doing) {
  ioc.run();
  ioc.restart();
  if (!ec) return;
  const std::string why = ec == beast::error::timeout ? "no answer in time" : ec.message();
  throw ConnectionError(doing + ": " + why);
}

}  // namespace

HttpReply send_request(const Endpoint& endpoint, std::string_view method,
                       std::string_view path_and_query, const std::string& token,
                       std::chrono::milliseconds timeout) {
  net::io_context ioc;
  beast::error_code ec;
  const std::string where = endpoint.authority();

  // Look up the host (synchronously: getaddrinfo has no timeout to honour anyway).
  tcp::resolver resolver(ioc);
  const auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
  if (ec) throw ConnectionError("cannot resolve " + endpoint.host + ": " + ec.message());

  // Make the connection on one of the addresses the lookup gave.
  beast::tcp_stream stream(ioc);
  stream.expires_after(timeout);
  stream.async_connect(results, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
  finish(ioc, ec, "cannot connect to " + where);

  // Send the request.
  const http::verb verb = http::string_to_verb(method);
  http::request<http::empty_body> req{verb, endpoint.prefix + std::string(path_and_query), 11};
  req.set(http::field::host, endpoint.host);
  req.set(http::field::user_agent, "liveheap-watch");
  req.set(http::field::accept, "application/json");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  if (verb == http::verb::post) req.content_length(0);
  req.keep_alive(false);
  stream.expires_after(timeout);
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  finish(ioc, ec, "cannot send the request to " + where);

  // Receive the response.
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  stream.expires_after(timeout);
  http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  finish(ioc, ec,
         where + " did not answer " + std::string(method) + " " + std::string(req.target()));

  // Close the connection; the server may already have, which is fine.
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);

  auto& res = parser.get();
  return {res.result_int(), std::string(res.reason()),
          std::string(res[http::field::content_type]), std::move(res.body())};
}

}  // namespace liveheap::cli
