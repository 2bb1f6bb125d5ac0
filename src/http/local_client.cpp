// HTTP exchanges with the group's other processes over Unix-domain sockets (see
// local_client.hpp).
#include "local_client.hpp"

#include <cstdio>
#include <fstream>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace beast = boost::beast;
namespace bh = boost::beast::http;
namespace net = boost::asio;
using local = net::local::stream_protocol;

// An answer is a report the other process capped itself (Config::max_report_bytes), or a
// pprof profile: this only stops a process that is not liveheap from filling our memory.
constexpr std::uint64_t kMaxResponseBytes = 256ull << 20;

std::string seconds_text(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

// Whether the process is stopped (SIGSTOP, a debugger): said, as it explains the silence.
bool is_stopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         (line[paren + 2] == 'T' || line[paren + 2] == 't');
}

}  // namespace

// Connect, send, read the head within the ask's time, then the body while it keeps coming.
// Thread-safety: runs on the io_context's one thread only.
struct PeerExchanges::Exchange : std::enable_shared_from_this<Exchange> {
  Exchange(net::io_context& io, std::shared_ptr<PeerExchanges> parent, std::size_t index, PeerAsk ask)
      : parent(std::move(parent)), index(index), ask(std::move(ask)), stream(io), check(io) {}

  void run() {
    // The registry's sockets are the user's own: a request made here names the local host,
    // which the other process's request policy lets through.
    Request& req = ask.request;
    if (req.find(bh::field::host) == req.end()) req.set(bh::field::host, "localhost");
    req.set(bh::field::connection, "close");
    req.prepare_payload();
    parser.body_limit(kMaxResponseBytes);
    stream.expires_after(kPeerConnectTimeout);
    stream.async_connect(local::endpoint(ask.socket_path),
                         [self = shared_from_this()](beast::error_code ec) { self->on_connect(ec); });
  }

  void on_connect(beast::error_code ec) {
    if (ec) return fail(ec, "cannot connect");
    bh::async_write(stream, ask.request,
                    [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_sent(ec); });
  }

  void on_sent(beast::error_code ec) {
    if (ec) return fail(ec, "cannot send the request");
    stream.expires_after(ask.answer_within);
    watch_for_stop(kPeerStoppedCheck);
    bh::async_read_header(stream, buffer, parser, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->check.cancel();
      self->on_read(ec, "no answer within " + seconds_text(self->ask.answer_within));
    });
  }

  // A stopped process answers nothing before it is resumed: it is not waited for.
  void watch_for_stop(std::chrono::seconds after) {
    check.expires_after(after);
    check.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->parser.is_header_done()) return;
      if (!is_stopped(self->ask.pid)) return self->watch_for_stop(std::chrono::seconds(1));
      self->stopped = true;
      self->stream.cancel();
    });
  }

  void on_read(beast::error_code ec, const std::string& timeout) {
    if (ec) return fail(ec, ec == beast::error::timeout ? timeout : "the answer broke off");
    if (parser.is_done()) return end(PeerAnswer{ask.pid, parser.release(), {}});
    stream.expires_after(kPeerIdleTimeout);
    bh::async_read_some(stream, buffer, parser, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_read(ec, "the answer stopped for " + seconds_text(kPeerIdleTimeout));
    });
  }

  void fail(beast::error_code ec, const std::string& what) {
    if (cancelled) return end(PeerAnswer{ask.pid, std::nullopt, "cancelled"});
    if (stopped) return end(PeerAnswer{ask.pid, std::nullopt, "unreachable: the process is stopped (SIGSTOP or a debugger)"});
    std::string error = "unreachable: " + what;
    if (ec != beast::error::timeout) error += " (" + ec.message() + ")";
    if (is_stopped(ask.pid)) error += " (the process is stopped: SIGSTOP or a debugger)";
    end(PeerAnswer{ask.pid, std::nullopt, std::move(error)});
  }

  void end(PeerAnswer answer) {
    beast::error_code ignored;
    stream.socket().close(ignored);  // the other process sees its client leave at once
    parent->finished(index, std::move(answer));
  }

  void cancel() {
    cancelled = true;
    check.cancel();
    stream.cancel();  // each pending operation completes with operation_aborted
  }

  std::shared_ptr<PeerExchanges> parent;
  std::size_t index;
  PeerAsk ask;
  beast::basic_stream<local> stream;
  beast::flat_buffer buffer;
  bh::response_parser<bh::string_body> parser;
  net::steady_timer check;  // watch_for_stop's
  bool cancelled = false;
  bool stopped = false;
};

PeerExchanges::PeerExchanges(net::io_context& io, std::size_t count, Done done)
    : io_(io), running_(count), answers_(count), left_(count), done_(std::move(done)) {}

PeerExchanges::~PeerExchanges() = default;

std::shared_ptr<PeerExchanges> PeerExchanges::start(net::io_context& io, std::vector<PeerAsk> asks, Done done) {
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
  PeerExchanges::start(io, std::move(asks), [&answers](std::vector<PeerAnswer> all) { answers = std::move(all); });
  io.run();
  return answers;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
