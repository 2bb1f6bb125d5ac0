// One HTTP request and its answer, over TCP or a Unix-domain socket: the one client of
// liveheap's own requests (forwarding to the group's other processes, liveheap-watch, the
// tests). One request per connection ("Connection: close"); connecting and sending, the
// answer's head, and each read of its body are bounded by timeouts; an exchange can be
// cancelled. Asynchronous on an io_context (forwarding runs every ask of a request at
// once), or to the end on the calling thread (exchange_now).
// Thread-safety: an Exchange runs on its io_context's one thread; cancel() from that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include "address.hpp"

namespace liveheap::client {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

struct Timeouts {
  std::chrono::milliseconds connect{2000};  // to connect and send the request
  std::chrono::milliseconds answer{20000};  // from the request sent to the answer's head
  std::chrono::milliseconds idle{2000};     // between two reads of the answer's body
};

// An answer bigger than this is not a liveheap server talking (a report is capped by its
// server, a pprof profile is a few MiB).
inline constexpr std::uint64_t kMaxAnswerBytes = 256ull << 20;

// The step an exchange ended in when no whole answer came.
enum class Step { resolve, connect, send, answer, body };

struct Result {
  std::optional<Response> response;  // the whole answer (any status)
  Step failed = Step::resolve;       // without one: where it stopped
  boost::system::error_code error;   // and why (boost::beast::error::timeout for a timeout)
  bool cancelled = false;
};

// "no answer in time" for a timeout, else the error's message.
std::string why(const Result& result);

class Exchange {
 public:
  using Done = std::function<void(Result)>;
  // Sends `request` to `where` (with "Host: localhost" unless it names a host, and
  // "Connection: close"); `done` is called once, on the io_context's thread, never inside
  // start(). Nothing holds the exchange but its pending operations: keep a weak_ptr to
  // cancel it.
  static std::shared_ptr<Exchange> start(boost::asio::io_context& io, const Address& where, Request request,
                                         const Timeouts& timeouts, Done done);
  virtual ~Exchange() = default;
  // Ends the exchange now (Result::cancelled); nothing once it has ended.
  virtual void cancel() = 0;
  // Whether the answer's head has come.
  virtual bool answering() const noexcept = 0;
};

// The same on this thread, on an io_context of its own, to the end.
Result exchange_now(const Address& where, Request request, const Timeouts& timeouts);

}  // namespace liveheap::client
