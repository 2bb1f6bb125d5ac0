// HTTP exchanges over Unix-domain sockets with the other processes of a group, for
// forwarding (forward.hpp): all of one request's exchanges at once, asynchronously on an
// io_context, each bounded by timeouts and cancellable, so that a process stopped under a
// debugger costs two seconds and never a thread.
// Thread-safety: PeerExchanges runs on its io_context's one thread; cancel() from any.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "liveheap/http.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// Connecting and sending the request: a live process's socket accepts at once (its kernel
// does, even while the process is stopped).
inline constexpr std::chrono::seconds kPeerConnectTimeout{2};
// While no answer came, every this often the process's state is read (/proc): one that is
// stopped (SIGSTOP, a debugger) is unreachable now, not at the timeout. The first check
// comes this long after the request went: a report takes ~20 ms at a million blocks.
inline constexpr std::chrono::seconds kPeerStoppedCheck{2};
// The most a running process is waited for, from the request sent to the answer's head: a
// report of 10,000 whole stacks takes seconds, cold or on a loaded machine (6.7 s was
// measured). A ?seconds= window adds its wait to this.
inline constexpr std::chrono::seconds kPeerAnswerTimeout{20};
// Between two reads of the answer's body, once its head came.
inline constexpr std::chrono::seconds kPeerIdleTimeout{2};

struct PeerAsk {
  pid_t pid = 0;
  std::string socket_path;
  Request request;  // sent with "Connection: close"
  std::chrono::milliseconds answer_within = kPeerAnswerTimeout;
};

struct PeerAnswer {
  pid_t pid = 0;
  std::optional<Response> response;  // none: `error` says why ("unreachable: ...")
  std::string error;
};

// One request's exchanges, started together. `done` is called once, on the io_context's
// thread, with an answer per ask (in the asks' order) when the last one ended, also when
// they were cancelled ("cancelled"). Nothing holds the object but its pending operations:
// keep a weak_ptr to cancel it.
class PeerExchanges : public std::enable_shared_from_this<PeerExchanges> {
 public:
  using Done = std::function<void(std::vector<PeerAnswer>)>;
  static std::shared_ptr<PeerExchanges> start(boost::asio::io_context& io, std::vector<PeerAsk> asks,
                                              Done done);
  // Ends every exchange still running, from any thread (posted to the io_context).
  void cancel();

  struct Exchange;  // one ask's socket, buffers and parser (local_client.cpp)
  PeerExchanges(boost::asio::io_context& io, std::size_t count, Done done);
  ~PeerExchanges();
  void finished(std::size_t index, PeerAnswer answer);  // each exchange once, at its end

 private:
  boost::asio::io_context& io_;
  std::vector<std::weak_ptr<Exchange>> running_;  // for cancel(); their operations own them
  std::vector<PeerAnswer> answers_;
  std::size_t left_;
  Done done_;
};

// The same on this thread, on an io_context of its own, to the end (Handler::handle).
std::vector<PeerAnswer> exchange_now(std::vector<PeerAsk> asks);

}  // namespace http
LIVEHEAP_NAMESPACE_END
