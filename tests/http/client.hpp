// A small blocking HTTP client for the http tests: real sockets, every call bounded by a
// timeout so a broken server fails a test instead of hanging it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "liveheap/http.hpp"

// Not inside namespace liveheap: reports treat liveheap's own frames as plumbing, and the
// tests' allocations must be attributed to the tests.
namespace http_test {

using namespace liveheap;
using namespace liveheap::http;

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  nlohmann::json json() const { return nlohmann::json::parse(body); }
  std::string header(const std::string& name) const;
};

// One request on a fresh connection. `headers` as "Name: value\r\n" lines; "Host: 127.0.0.1"
// is added unless they hold a Host of their own.
Reply send(std::uint16_t port, std::string_view method, std::string_view target,
           std::string_view headers = {}, std::string_view body = {});
inline Reply get(std::uint16_t port, std::string_view target, std::string_view headers = {}) {
  return send(port, "GET", target, headers);
}
inline Reply post(std::uint16_t port, std::string_view target, std::string_view headers = {}) {
  return send(port, "POST", target, headers);
}

// Writes `bytes` as they are, half-closes unless told not to, and returns everything the
// server sends until it closes (or `timeout_ms` passes).
std::string send_raw(std::uint16_t port, std::string_view bytes, bool half_close = true,
                     int timeout_ms = 15000);
// The status code of a raw response ("HTTP/1.1 400 ..." -> 400), 0 when there is none.
int status_of(std::string_view raw);

// Polls `condition` every 20 ms until it holds (true) or `timeout` passes (false): tests wait
// on observable state, not on fixed sleeps.
bool wait_until(std::chrono::milliseconds timeout, const std::function<bool()>& condition);

// A TCP connection left open, for slow-client tests.
class Connection {
 public:
  explicit Connection(std::uint16_t port);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  void write(std::string_view bytes);
  void half_close();  // no more requests: the server sees end of stream
  // Everything until the server closes or `timeout_ms` passes.
  std::string read_all(int timeout_ms);

 private:
  int fd_ = -1;
};

}  // namespace http_test
