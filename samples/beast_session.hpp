// The Beast plumbing both samples share: a session per connection and the listener,
// from Beast's example/http/server/async (Boost 1.81). liveheap is mounted in
// session::on_read, in one statement; each sample defines sample::handle_request, its
// own routes.
#pragma once

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "liveheap/http.hpp"

namespace sample {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// The sample's own routes: every request liveheap declines comes here.
http::message_generator handle_request(http::request<http::string_body>&& req);

// A sample's asynchronous routes, if it has any: true when it took the request and will
// call `reply` once, from any thread; false leaves the request to handle_request.
using Reply = std::function<void(http::message_generator)>;
inline std::function<bool(http::request<http::string_body>& req, Reply reply)> handle_deferred;

// Report a failure
void fail(beast::error_code ec, const char* what) {
  std::cerr << what << ": " << ec.message() << "\n";
}

// Handles an HTTP server connection
class session : public std::enable_shared_from_this<session> {
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  liveheap::http::Handler& liveheap_;

 public:
  // Take ownership of the stream
  session(tcp::socket&& socket, liveheap::http::Handler& liveheap)
      : stream_(std::move(socket)), liveheap_(liveheap) {}

  // Start the asynchronous operation
  void run() {
    // We need to be executing within a strand to perform async operations on the I/O
    // objects in this session.
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&session::do_read, shared_from_this()));
  }

  void do_read() {
    // Make the request empty before reading, otherwise the operation behavior is undefined.
    req_ = {};
    // Set the timeout.
    stream_.expires_after(std::chrono::seconds(30));
    // Read a request
    http::async_read(stream_, buffer_, req_,
                     beast::bind_front_handler(&session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t bytes_transferred) {
    boost::ignore_unused(bytes_transferred);
    // This means they closed the connection
    if (ec == http::error::end_of_stream) return do_close();
    if (ec) return fail(ec, "read");

    // liveheap answers its routes on its own thread and posts the response back here, so
    // a /diff?seconds=30 never blocks a single-threaded server. The requests it declines
    // are the sample's own (and count for Config::compare_requests).
    auto reply = [self = shared_from_this()](auto res) { self->send_response(std::move(res)); };
    if (liveheap_.handle_async(std::move(req_), stream_.get_executor(), reply)) return;

    // Every allocation the sample makes for the request carries its route ("GET /figure"),
    // and an asynchronous route carries it on (liveheap::current_request()). The scope ends
    // before the write: Asio keeps the memory of its operations for reuse, which no route left.
    std::optional<http::message_generator> res;
    {
      auto scope = liveheap::http::request_scope(req_);
      auto later = [self = shared_from_this()](http::message_generator res) {
        net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable {
          self->send_response(std::move(res));
        });
      };
      if (handle_deferred && handle_deferred(req_, std::move(later))) return;
      res.emplace(handle_request(std::move(req_)));
    }
    send_response(std::move(*res));
  }

  void send_response(http::message_generator&& msg) {
    const bool keep_alive = msg.keep_alive();
    // Write the response
    beast::async_write(stream_, std::move(msg),
                       beast::bind_front_handler(&session::on_write, shared_from_this(),
                                                 keep_alive));
  }

  void on_write(bool keep_alive, beast::error_code ec, std::size_t bytes_transferred) {
    boost::ignore_unused(bytes_transferred);
    if (ec) return fail(ec, "write");
    // This means we should close the connection, usually because the response indicated
    // the "Connection: close" semantic.
    if (!keep_alive) return do_close();
    // Read another request
    do_read();
  }

  void do_close() {
    // Send a TCP shutdown
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    // At this point the connection is closed gracefully
  }
};

//------------------------------------------------------------------------------

// Accepts incoming connections and launches the sessions
class listener : public std::enable_shared_from_this<listener> {
  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  liveheap::http::Handler& liveheap_;

 public:
  // Throws boost::system::system_error when the address cannot be served.
  listener(net::io_context& ioc, const tcp::endpoint& endpoint, liveheap::http::Handler& liveheap)
      : ioc_(ioc), acceptor_(net::make_strand(ioc)), liveheap_(liveheap) {
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(net::socket_base::max_listen_connections);
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }

  // Start accepting incoming connections
  void run() { do_accept(); }

 private:
  void do_accept() {
    // The new connection gets its own strand
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&listener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec) {
      fail(ec, "accept");
      return;  // To avoid infinite loop
    }
    // Create the session and run it
    std::make_shared<session>(std::move(socket), liveheap_)->run();
    // Accept another connection
    do_accept();
  }
};

}  // namespace sample
