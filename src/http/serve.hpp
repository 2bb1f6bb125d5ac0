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
  // Accept on `endpoint`; the port bound. Throws boost::system::system_error.
  std::uint16_t listen_tcp(const boost::asio::ip::tcp::endpoint& endpoint);
  // Accept on a Unix-domain socket at `path` (an old file there is replaced).
  // Throws boost::system::system_error.
  void listen_local(const std::string& path);
  // Accept on `fd`, a Unix-domain socket already bound and listening (and tracked in
  // fork_fds.hpp); the server owns it from here, also when this throws
  // boost::system::system_error.
  void adopt_local(int fd);

 private:
  struct Impl;
  Impl* impl_;  // owned; leaked in a forked child
  pid_t owner_;
};

}  // namespace http
LIVEHEAP_NAMESPACE_END
