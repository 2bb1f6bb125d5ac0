// liveheap-watch's requests to the server: one request per connection (the library's one
// HTTP client, src/client), every step bounded by `timeout`, failures as messages a person
// can act on.
// Thread-safety: none needed; each call owns its connection.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

#include "options.hpp"

namespace liveheap::cli {

// The server could not be reached or did not answer in HTTP: "cannot connect to
// 127.0.0.1:8080: Connection refused".
class ConnectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HttpReply {
  unsigned status = 0;
  std::string reason;  // "Not Found"
  std::string content_type;
  std::string body;
};

// Sends `method` to endpoint.prefix + `path_and_query`, with the bearer token when not
// empty. Throws ConnectionError; any HTTP status is a reply, not an error.
HttpReply send_request(const Endpoint& endpoint, std::string_view method, std::string_view path_and_query,
                       const std::string& token, std::chrono::milliseconds timeout);

}  // namespace liveheap::cli
