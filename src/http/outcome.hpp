// What answering a request gives: a response now, a window that answers later, or a
// request other processes answer. Thread-safety: plain values.
#pragma once

#include <chrono>
#include <functional>
#include <variant>
#include <vector>

#include "liveheap/http.hpp"
#include "local_client.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// A report that needs the heap again later (?seconds=N): wait `wait`, then `finish()`,
// which never throws.
struct Window {
  std::chrono::seconds wait;
  std::function<Response()> finish;
};

// A request other processes answer (forward.hpp): every ask goes out at once, and
// `finish` makes the answer of theirs (it never throws). None of it waits on a thread:
// the Handler runs the exchanges asynchronously on its worker's io_context.
struct Forward {
  std::vector<PeerAsk> asks;
  std::function<Response(std::vector<PeerAnswer>)> finish;
  // A forwarded ?seconds= window: it holds a window place (in `finish`), is cancelled when
  // its client leaves, and Handler::handle refuses it as it refuses a Window.
  bool window = false;
};

using Outcome = std::variant<Response, Window, Forward>;

}  // namespace http
LIVEHEAP_NAMESPACE_END
