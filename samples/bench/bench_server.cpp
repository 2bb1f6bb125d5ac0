// The Beast server of the overhead benchmark: a plain HTTP/1.1 keep-alive server NOT linked
// to liveheap, so the same binary can run untracked and under every LD_PRELOAD (the sample
// servers mount liveheap, which rules out an untracked baseline with them).
//
//   bench_server [--port P]     prints "PORT <p>" once listening; exits on SIGTERM/SIGINT
//
// One io thread (the load generator gets the other core). Each request builds a small page
// from a few dozen short strings: the allocation pattern of an ordinary handler.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

http::message_generator handle_request(const http::request<http::string_body>& req) {
  std::vector<std::string> lines;
  for (int i = 0; i < 24; ++i)
    lines.push_back("item " + std::to_string(i) + " of " + std::string(req.target()));
  std::string body;
  for (const std::string& line : lines) body += line + '\n';

  http::response<http::string_body> res{http::status::ok, req.version()};
  res.set(http::field::content_type, "text/plain");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// One connection: read a request, write its response, repeat until the peer closes.
class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : stream_(std::move(socket)) {}
  void run() { read(); }

 private:
  void read() {
    req_ = {};
    http::async_read(stream_, buffer_, req_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->write();
                     });
  }
  void write() {
    const bool keep_alive = req_.keep_alive();
    beast::async_write(stream_, handle_request(req_),
                       [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                         if (ec) return;
                         if (keep_alive) self->read();
                         else self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
                       });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
};

void accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](beast::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true));
      std::make_shared<Session>(std::move(socket))->run();
    }
    accept(acceptor);
  });
}

}  // namespace

int main(int argc, char** argv) {
  unsigned short port = 0;
  if (argc == 3 && std::strcmp(argv[1], "--port") == 0)
    port = static_cast<unsigned short>(std::atoi(argv[2]));
  else if (argc != 1) {
    std::fprintf(stderr, "usage: bench_server [--port P]\n");
    return 2;
  }
  asio::io_context io{1};
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), port});
  accept(acceptor);
  // A clean exit on SIGTERM lets heaptrack and friends flush what they buffered.
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&io](beast::error_code, int) { io.stop(); });
  std::printf("PORT %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);
  io.run();
  return 0;
}
