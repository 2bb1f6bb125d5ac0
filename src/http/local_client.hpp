// One HTTP exchange over a Unix-domain socket, for forwarding to a peer process: connect,
// send the request with "Connection: close", read the response to the end.
// Thread-safety: pure function.
#pragma once

#include <chrono>
#include <string>

#include "liveheap/http.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// The peer's response. Throws std::runtime_error naming what failed (connect, timeout,
// a malformed response) when there is none within `timeout`.
Response exchange_local(const std::string& socket_path, Request req,
                        std::chrono::milliseconds timeout);

}  // namespace http
LIVEHEAP_NAMESPACE_END
