// Where an HTTP server listens: a TCP host and port, or a Unix-domain socket's path (the
// registry's sockets of a process group). Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>

namespace liveheap::client {

struct Address {
  std::string host;  // TCP: a name or an address literal
  std::uint16_t port = 0;
  std::string socket_path;  // not empty: a Unix-domain socket, and host and port are unused

  static Address tcp(std::string host, std::uint16_t port);
  static Address unix_socket(std::string path);
  bool is_unix_socket() const noexcept { return !socket_path.empty(); }
  // "127.0.0.1:8080", "[::1]:8080", or the socket's path: as a message names the server.
  std::string to_string() const;
};

}  // namespace liveheap::client
