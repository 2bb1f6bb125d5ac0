// HTTP exchanges with the group's other processes over Unix-domain sockets (see
// local_client.hpp).
#include "local_client.hpp"

#include <cstdio>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

#include "file_lines.hpp"
#include "exchange.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

// Whether the process is stopped (SIGSTOP, a debugger): said, as it explains the silence.
bool is_stopped(pid_t pid) {
  const std::string line = tracker::read_first_line(("/proc/" + std::to_string(pid) + "/stat").c_str());
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         (line[paren + 2] == 'T' || line[paren + 2] == 't');
}

}  // namespace

// One ask: its exchange, and a timer that looks whether the process is stopped while no
// answer has come. Thread-safety: runs on the io_context's one thread only.
struct PeerExchanges::Exchange : std::enable_shared_from_this<Exchange> {
  Exchange(net::io_context& io, std::shared_ptr<PeerExchanges> parent, std::size_t index, PeerAsk ask)
      : io(io), parent(std::move(parent)), index(index), ask(std::move(ask)), check(io) {}

  void run() {
    // The registry's sockets are the user's own: a request made here names the local host,
    // which the other process's request policy lets through (client::Exchange's default).
    const client::Timeouts timeouts{kPeerConnectTimeout, ask.answer_within, kPeerIdleTimeout};
    exchange =
        client::Exchange::start(io, client::Address::unix_socket(ask.socket_path), std::move(ask.request),
                                timeouts, [self = shared_from_this()](client::Result result) {
                                  self->check.cancel();
                                  self->end(std::move(result));
                                });
    watch_for_stop(kPeerStoppedCheck);
  }

  // A stopped process answers nothing before it is resumed: it is not waited for.
  void watch_for_stop(std::chrono::seconds after) {
    check.expires_after(after);
    check.async_wait([self = shared_from_this()](beast::error_code ec) {
      const auto running = self->exchange.lock();
      if (ec || !running || running->answering()) return;
      if (!is_stopped(self->ask.pid)) return self->watch_for_stop(std::chrono::seconds(1));
      self->stopped = true;
      running->cancel();
    });
  }

  void end(client::Result result) {
    if (result.response) return parent->finished(index, PeerAnswer{ask.pid, std::move(result.response), {}});
    parent->finished(index, PeerAnswer{ask.pid, std::nullopt, failure(result)});
  }

  // Why no answer came, as /processes and the merged reports name it.
  std::string failure(const client::Result& result) const {
    if (stopped) return "unreachable: the process is stopped (SIGSTOP or a debugger)";
    if (result.cancelled) return "cancelled";
    const bool timeout = result.error == beast::error::timeout;
    std::string what;
    switch (result.failed) {
      case client::Step::resolve:
      case client::Step::connect: what = "cannot connect"; break;
      case client::Step::send: what = "cannot send the request"; break;
      case client::Step::answer:
        what = timeout ? "no answer within " + seconds_text(ask.answer_within) : "the answer broke off";
        break;
      case client::Step::body:
        what = timeout ? "the answer stopped for " + seconds_text(kPeerIdleTimeout) : "the answer broke off";
        break;
    }
    std::string error = "unreachable: " + what;
    if (!timeout) error += " (" + result.error.message() + ")";
    if (is_stopped(ask.pid)) error += " (the process is stopped: SIGSTOP or a debugger)";
    return error;
  }

  void cancel() {
    if (const auto running = exchange.lock()) running->cancel();
  }

  net::io_context& io;
  std::shared_ptr<PeerExchanges> parent;
  std::size_t index;
  PeerAsk ask;
  std::weak_ptr<client::Exchange> exchange;
  net::steady_timer check;  // watch_for_stop's
  bool stopped = false;
};

PeerExchanges::PeerExchanges(net::io_context& io, std::size_t count, Done done)
    : io_(io), running_(count), answers_(count), left_(count), done_(std::move(done)) {}

PeerExchanges::~PeerExchanges() = default;

std::shared_ptr<PeerExchanges> PeerExchanges::start(net::io_context& io, std::vector<PeerAsk> asks,
                                                    Done done) {
  auto all = std::make_shared<PeerExchanges>(io, asks.size(), std::move(done));
  if (asks.empty()) {  // `done` still runs on the io_context, never inside start()
    net::post(io, [all] { all->done_({}); });
    return all;
  }
  for (std::size_t i = 0; i < asks.size(); ++i) {
    all->answers_[i].pid = asks[i].pid;
    auto exchange = std::make_shared<Exchange>(io, all, i, std::move(asks[i]));
    all->running_[i] = exchange;
    exchange->run();
  }
  return all;
}

void PeerExchanges::cancel() {
  net::post(io_, [self = shared_from_this()] {
    for (const auto& weak : self->running_)
      if (const auto exchange = weak.lock()) exchange->cancel();
  });
}

void PeerExchanges::finished(std::size_t index, PeerAnswer answer) {
  answers_[index] = std::move(answer);
  running_[index].reset();
  if (--left_ == 0) {
    Done done = std::move(done_);  // its captures go with this call, not with the last exchange
    done(std::move(answers_));
  }
}

std::vector<PeerAnswer> exchange_now(std::vector<PeerAsk> asks) {
  net::io_context io{1};
  std::vector<PeerAnswer> answers;
  PeerExchanges::start(io, std::move(asks),
                       [&answers](std::vector<PeerAnswer> all) { answers = std::move(all); });
  io.run();
  return answers;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
