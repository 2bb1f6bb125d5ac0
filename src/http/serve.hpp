// The serving machinery shared by the standalone admin server (TCP) and a process's own
// endpoint in the registry (a Unix-domain socket): one io_context thread that accepts on
// any number of listeners and answers every request with one Handler, so the port and
// the Unix socket share the routes' state (the baseline above all).
// Thread-safety: construct and destroy on one thread; listen_* and handler() from any.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include "fork_fds.hpp"
#include "liveheap/http.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// host:port as an endpoint. Throws boost::system::system_error.
boost::asio::ip::tcp::endpoint resolve_tcp(const std::string& host, std::uint16_t port);

class Server {
 public:
  explicit Server(Config config);  // starts the io thread (which waits for listeners)
  // Stops and joins. In a forked child the io thread does not exist: everything is
  // leaked instead (its sockets were closed by fork_fds.hpp's handler).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  Handler& handler() noexcept;
  boost::asio::io_context& io() noexcept;
  // Accept on `endpoint` when Config allows it (check_listen_policy); the port bound.
  // Throws std::runtime_error or boost::system::system_error.
  std::uint16_t listen_tcp(const boost::asio::ip::tcp::endpoint& endpoint);
  // The same without the policy check (the caller made it), without throwing and without
  // formatting a message (a port retry and a forked child call it): the port bound, or 0
  // with `ec` set (an errno in boost::system::system_category, to compare by value).
  std::uint16_t listen_tcp(const boost::asio::ip::tcp::endpoint& endpoint,
                           boost::system::error_code& ec) noexcept;
  // Accept on a Unix-domain socket at `path` (an old file there is replaced); `ec` as above.
  void listen_local(const std::string& path, boost::system::error_code& ec) noexcept;
  // Accept on `fd`, a Unix-domain socket already bound and listening, whose fork_fds.hpp
  // entry `tracked` holds; the server owns both from here. On failure (`ec` as above) the
  // entry is freed and the socket closed.
  void adopt_local(int fd, boot::ForkFd&& tracked, boost::system::error_code& ec) noexcept;
  // The same for a TCP socket already bound and listening (the preload library's early
  // endpoint made it): the port bound, or 0 with `ec` set.
  std::uint16_t adopt_tcp(int fd, boot::ForkFd&& tracked, boost::system::error_code& ec) noexcept;

 private:
  struct Impl;
  Impl* impl_;  // owned; leaked in a forked child
  pid_t owner_;
};

}  // namespace http
LIVEHEAP_NAMESPACE_END
