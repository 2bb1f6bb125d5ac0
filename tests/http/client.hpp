// A small blocking HTTP client for the http tests: real sockets, every call bounded by a
// timeout so a broken server fails a test instead of hanging it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../support/wait.hpp"
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

// Tests wait on observable state, not on fixed sleeps (tests/support/wait.hpp).
using test_support::kPatience;
using test_support::kPatienceMs;
using test_support::wait_until;

// Until `windows` ?seconds= windows (asked on other connections) have taken their first
// snapshot and wait: /stats counts them open, and then a request queued behind them on the
// server's one worker thread has been answered. What happens after it falls in the window.
testing::AssertionResult windows_waiting(std::uint16_t port, unsigned windows = 1);

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
  // One response (its head and Content-Length bytes of body), or what came before the server
  // closed or `timeout_ms` passed.
  std::string read_response(int timeout_ms);

 private:
  // Appends what arrives within `deadline` to `out`; false on close or timeout.
  bool read_some(std::string& out, std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  std::string unread_;  // read past a response by read_response: the next read's start
};

}  // namespace http_test
