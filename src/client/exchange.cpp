// One HTTP request and its answer over TCP or a Unix-domain socket (see exchange.hpp).
// Modelled on Beast's example/http/client/async: only asynchronous operations honour
// basic_stream's timeouts (a synchronous connect to a silent host would hang for minutes).
#include "exchange.hpp"

#include <vector>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/http/write.hpp>

namespace liveheap::client {
namespace {

namespace beast = boost::beast;
namespace bh = boost::beast::http;
namespace net = boost::asio;
using Protocol = net::generic::stream_protocol;  // a TCP or a Unix-domain socket alike

// Connect, send, read the head within timeouts.answer, then the body while it keeps coming.
class StreamExchange final : public Exchange, public std::enable_shared_from_this<StreamExchange> {
 public:
  StreamExchange(net::io_context& io, Request request, const Timeouts& timeouts, Done done)
      : io_(io), request_(std::move(request)), timeouts_(timeouts), done_(std::move(done)), stream_(io) {}

  void run(const Address& where) {
    if (request_.find(bh::field::host) == request_.end()) request_.set(bh::field::host, "localhost");
    request_.set(bh::field::connection, "close");
    request_.prepare_payload();
    parser_.body_limit(kMaxAnswerBytes);
    parser_.skip(request_.method() == bh::verb::head);  // its answer has a length and no body
    std::vector<Protocol::endpoint> endpoints;
    if (where.is_unix_socket()) {
      endpoints.emplace_back(net::local::stream_protocol::endpoint(where.socket_path));
    } else {
      // Looked up here, synchronously: getaddrinfo has no timeout to honour anyway.
      net::ip::tcp::resolver resolver(io_);
      beast::error_code ec;
      const auto found = resolver.resolve(where.host, std::to_string(where.port), ec);
      if (ec) return end_later(Step::resolve, ec);
      for (const auto& entry : found) endpoints.emplace_back(entry.endpoint());
    }
    stream_.expires_after(timeouts_.connect);
    stream_.async_connect(endpoints,
                          [self = shared_from_this()](beast::error_code ec, const Protocol::endpoint&) {
                            self->on_connect(ec);
                          });
  }

  void cancel() override {
    cancelled_ = true;
    stream_.cancel();  // each pending operation completes with operation_aborted
  }

  bool answering() const noexcept override { return parser_.is_header_done(); }

 private:
  void on_connect(beast::error_code ec) {
    if (ec) return end(Step::connect, ec);
    bh::async_write(stream_, request_,
                    [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_sent(ec); });
  }

  void on_sent(beast::error_code ec) {
    if (ec) return end(Step::send, ec);
    stream_.expires_after(timeouts_.answer);
    bh::async_read_header(
        stream_, buffer_, parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec, Step::answer); });
  }

  void on_read(beast::error_code ec, Step step) {
    if (ec) return end(step, ec);
    if (parser_.is_done()) return end(Step::body, {});
    stream_.expires_after(timeouts_.idle);
    bh::async_read_some(
        stream_, buffer_, parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec, Step::body); });
  }

  // A failure found before any operation started: `done` still runs on the io_context.
  void end_later(Step step, beast::error_code ec) {
    net::post(io_, [self = shared_from_this(), step, ec] { self->end(step, ec); });
  }

  void end(Step step, beast::error_code ec) {
    Result result;
    if (!ec && parser_.is_done()) result.response = parser_.release();
    result.failed = step;
    result.error = ec;
    result.cancelled = cancelled_;
    beast::error_code ignored;
    stream_.socket().close(ignored);  // the server sees its client leave at once
    Done done = std::move(done_);
    done(std::move(result));
  }

  net::io_context& io_;
  Request request_;
  Timeouts timeouts_;
  Done done_;
  beast::basic_stream<Protocol> stream_;
  beast::flat_buffer buffer_;
  bh::response_parser<bh::string_body> parser_;
  bool cancelled_ = false;
};

}  // namespace

std::string why(const Result& result) {
  return result.error == beast::error::timeout ? "no answer in time" : result.error.message();
}

std::shared_ptr<Exchange> Exchange::start(net::io_context& io, const Address& where, Request request,
                                          const Timeouts& timeouts, Done done) {
  auto exchange = std::make_shared<StreamExchange>(io, std::move(request), timeouts, std::move(done));
  exchange->run(where);
  return exchange;
}

Result exchange_now(const Address& where, Request request, const Timeouts& timeouts) {
  net::io_context io{1};
  Result result;
  Exchange::start(io, where, std::move(request), timeouts, [&result](Result r) { result = std::move(r); });
  io.run();
  return result;
}

}  // namespace liveheap::client
