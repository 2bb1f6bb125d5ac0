// liveheap-watch's requests, through the library's one HTTP client (src/client): its
// failures worded as messages a person can act on.
#include "http_client.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "exchange.hpp"

namespace liveheap::cli {

HttpReply send_request(const Endpoint& endpoint, std::string_view method, std::string_view path_and_query,
                       const std::string& token, std::chrono::milliseconds timeout) {
  namespace bh = boost::beast::http;
  const bh::verb verb = bh::string_to_verb(method);
  client::Request req{verb, endpoint.prefix + std::string(path_and_query), 11};
  req.set(bh::field::host, endpoint.host);
  req.set(bh::field::user_agent, "liveheap-watch");
  req.set(bh::field::accept, "application/json");
  if (!token.empty()) req.set(bh::field::authorization, "Bearer " + token);
  const std::string target(req.target());
  client::Result result = client::exchange_now(client::Address::tcp(endpoint.host, endpoint.port),
                                               std::move(req), {timeout, timeout, timeout});
  const std::string where = endpoint.authority();
  if (!result.response) {
    switch (result.failed) {
      case client::Step::resolve:
        throw ConnectionError("cannot resolve " + endpoint.host + ": " + result.error.message());
      case client::Step::connect:
        throw ConnectionError("cannot connect to " + where + ": " + client::why(result));
      case client::Step::send:
        throw ConnectionError("cannot send the request to " + where + ": " + client::why(result));
      case client::Step::answer:
      case client::Step::body:
        throw ConnectionError(where + " did not answer " + std::string(method) + " " + target + ": " +
                              client::why(result));
    }
  }
  client::Response& res = *result.response;
  return {res.result_int(), std::string(res.reason()), std::string(res[bh::field::content_type]),
          std::move(res.body())};
}

}  // namespace liveheap::cli
