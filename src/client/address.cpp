// Where an HTTP server listens (see address.hpp).
#include "address.hpp"

#include <utility>

namespace liveheap::client {

Address Address::tcp(std::string host, std::uint16_t port) { return {std::move(host), port, {}}; }

Address Address::unix_socket(std::string path) { return {{}, 0, std::move(path)}; }

std::string Address::to_string() const {
  if (is_unix_socket()) return socket_path;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace liveheap::client
