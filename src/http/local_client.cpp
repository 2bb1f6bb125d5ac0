// One HTTP exchange over a Unix-domain socket (see local_client.hpp).
#include "local_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/write.hpp>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace bh = boost::beast::http;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kMaxResponseBytes = 256ull << 20;

// Closes the socket on every path out.
struct Fd {
  int fd;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

[[noreturn]] void failed(const std::string& what) { throw std::runtime_error(what); }

// Waits for `events` on fd until the deadline.
void wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) failed("no answer in time");
    pollfd pfd{fd, events, 0};
    const int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) failed(std::string("poll: ") + std::strerror(errno));
  }
}

}  // namespace

Response exchange_local(const std::string& socket_path, Request req,
                        std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Fd sock{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  if (sock.fd < 0) failed(std::string("socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) failed("socket path too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(sock.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    failed(std::string("connect: ") + std::strerror(errno));

  // The registry's sockets are the user's own: a request made here (not forwarded) names
  // the local host, which the other process's request policy lets through.
  if (req.find(bh::field::host) == req.end()) req.set(bh::field::host, "localhost");
  req.set(bh::field::connection, "close");
  req.prepare_payload();
  std::ostringstream out;
  out << req;
  const std::string bytes = out.str();
  for (std::size_t sent = 0; sent < bytes.size();) {
    wait_for(sock.fd, POLLOUT, deadline);
    const ssize_t n = ::send(sock.fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) failed(std::string("send: ") + std::strerror(errno));
    if (n > 0) sent += static_cast<std::size_t>(n);
  }

  bh::response_parser<bh::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  parser.eager(true);
  std::string pending;
  char buffer[16384];
  while (!parser.is_done()) {
    wait_for(sock.fd, POLLIN, deadline);
    const ssize_t n = ::recv(sock.fd, buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) failed(std::string("recv: ") + std::strerror(errno));
    boost::system::error_code ec;
    if (n == 0) {
      parser.put_eof(ec);
      if (ec || !parser.is_done()) failed("the connection closed before the response ended");
      break;
    }
    pending.append(buffer, static_cast<std::size_t>(n));
    while (!pending.empty() && !parser.is_done()) {
      const std::size_t used = parser.put(boost::asio::buffer(pending), ec);
      if (ec == bh::error::need_more) break;
      if (ec) failed("malformed response: " + ec.message());
      pending.erase(0, used);
      if (used == 0) break;
    }
  }
  return parser.release();
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
