// The standalone admin server: a Boost.Beast HTTP server on its own thread and port that
// serves a Handler's routes, for programs that are not Beast servers (and preload mode);
// and the Server under it, which serves the same session code on TCP or on a Unix-domain
// socket (serve.hpp). Structured as Beast's example/http/server/async: fail, session,
// listener, each templated on the stream protocol.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/system/system_error.hpp>

#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"
#include "blocked_signals.hpp"
#include "reactor_guard.hpp"
#include "fork_fds.hpp"
#include "own_descriptors.hpp"
#include "listen_address.hpp"
#include "peer_owner.hpp"
#include "reply.hpp"
#include "serve.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace beast = boost::beast;
namespace bh = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using local = net::local::stream_protocol;

constexpr std::uint32_t kMaxHeaderBytes = 8 * 1024;
constexpr std::uint64_t kMaxBodyBytes = 1024;  // the routes take no body
constexpr std::size_t kMaxBufferBytes = 16 * 1024;
// The whole request head must arrive within this (a keep-alive connection's idle wait too).
constexpr auto kReadTimeout = std::chrono::seconds(5);
// Each response must be taken by its client within this, else the connection closes.
constexpr auto kWriteTimeout = std::chrono::seconds(10);
// At this many, a new connection closes the oldest one waiting for a request (an idle
// keep-alive), else the one that has been writing its answer longest (a client that does
// not read): neither idle nor slow-reading connections can lock the operator out.
constexpr std::size_t kMaxSessions = 64;
// Answers this big or bigger held at once by connections still writing them: past this
// many, the one that has been writing longest is closed. A report is up to
// Config::max_report_bytes of the host's memory until its client has taken it.
constexpr std::size_t kLargeAnswerBytes = 64 * 1024;
constexpr std::size_t kMaxLargeWrites = 8;
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);

// Report a failure. A library must not write to its host's stderr for every client that
// hangs up or times out, so a failed connection is simply closed; this is the one place
// to change that while debugging.
void fail(beast::error_code ec, const char* what) {}

// The reason for a request the parser refused, which is always the client's fault.
Response malformed_request(beast::error_code ec) {
  Status status = Status::bad_request;
  if (ec == bh::error::header_limit || ec == bh::error::buffer_overflow)
    status = Status::request_header_fields_too_large;
  else if (ec == bh::error::body_limit) status = Status::payload_too_large;
  return make_error(ReplyTo{}, status, "malformed request: " + ec.message());
}

template <class Protocol>
class Session;

// Closes `socket` (a connection or an acceptor, whose fork_fds entry is `tracked`) unless
// the program closed its descriptor and opened something of its own under the number
// since, as a daemon that closes every descriptor does: then the socket is only let go of,
// since closing the number would close the program's file. The entry is freed first. A
// socket the table had no room for is closed as it always was.
template <class Socket>
void close_if_ours(Socket& socket, boot::ForkFd& tracked) noexcept {
  boost::system::error_code ec;
  if (!socket.is_open()) {
    tracked.reset();
    return;
  }
  const bool ours = !tracked.tracking() || tracked.still_tracks(socket.native_handle());
  tracked.reset();
  if (ours) {
    socket.close(ec);
  } else {
    // The number is the program's now (it closed ours with a raw system call and opened
    // its own): no longer kept open when the program closes it.
    boot::disown_descriptor(socket.native_handle());
    (void)socket.release(ec);
  }
}

// The sessions of one listener, for choosing which to close when room is needed.
// Thread-safety: used on the server's io_context thread only; it has one thread, so the
// listener's handlers and every session's strand run one at a time.
template <class Protocol>
class SessionBook {
 public:
  using SessionPtr = std::shared_ptr<Session<Protocol>>;

  void add(const SessionPtr& session) { sessions_.push_back(session); }

  // True when a new session may start: below the cap, or once the session that has waited
  // longest for a request is evicted, else the one writing its answer longest.
  bool make_room() {
    std::erase_if(sessions_, [](const auto& s) { return s.expired(); });
    SessionPtr idle;
    SessionPtr writer;
    std::size_t live = 0;
    for (const auto& weak : sessions_) {
      const auto session = weak.lock();
      if (!session || session->evicted()) continue;  // on its way out
      ++live;
      if (const auto since = session->waiting_since(); since && (!idle || *since < *idle->waiting_since()))
        idle = session;
      if (const auto since = session->writing_since();
          since && (!writer || *since < *writer->writing_since()))
        writer = session;
    }
    if (live < kMaxSessions) return true;
    if (const SessionPtr oldest = idle ? idle : writer) {
      oldest->evict();
      return true;
    }
    return false;  // every session works on a request (the worker's queue bounds them)
  }

  // After a session began writing a large answer: past kMaxLargeWrites of them, the one
  // writing longest is closed, and its answer's memory given back.
  void trim_large_writes() {
    SessionPtr oldest;
    std::size_t large = 0;
    for (const auto& weak : sessions_) {
      const auto session = weak.lock();
      if (!session || session->evicted() || !session->writing_large()) continue;
      ++large;
      if (!oldest || *session->writing_since() < *oldest->writing_since()) oldest = session;
    }
    if (large > kMaxLargeWrites) oldest->evict();
  }

 private:
  std::vector<std::weak_ptr<Session<Protocol>>> sessions_;
};

// Handles one HTTP connection: read a request, answer it (on the Handler's worker), repeat.
// Thread-safety: every step runs on the session's strand.
template <class Protocol>
class Session : public std::enable_shared_from_this<Session<Protocol>> {
 public:
  using Clock = std::chrono::steady_clock;

  Session(typename Protocol::socket&& socket, Handler& handler, std::shared_ptr<SessionBook<Protocol>> book)
      : stream_(std::move(socket)),
        tracked_(stream_.socket().native_handle()),
        buffer_(kMaxBufferBytes),
        handler_(handler),
        book_(std::move(book)) {}
  // The client hung up, or the connection failed or was evicted, maybe long after the
  // program closed every descriptor: closed only while the number is still this socket.
  ~Session() { close_if_ours(stream_.socket(), tracked_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Since when it waits for a request, or nullopt while it works on one (or was evicted).
  std::optional<Clock::time_point> waiting_since() const { return time_of(waiting_since_.load()); }
  // Since when it writes an answer its client has not yet taken all of, or nullopt.
  std::optional<Clock::time_point> writing_since() const { return time_of(writing_since_.load()); }
  bool writing_large() const { return writing_large_ && writing_since_ != kBusy; }

  // Closes the connection, on its strand; the session ends when its read fails.
  bool evicted() const { return evicted_; }
  void evict() {
    evicted_ = true;
    waiting_since_ = kBusy;
    writing_since_ = kBusy;
    net::post(stream_.get_executor(),
              [self = shared_from_this()] { close_if_ours(self->stream_.socket(), self->tracked_); });
  }

  // Start on the strand: the session's steps never run concurrently.
  void run() {
    // Without a token, a TCP client on this machine is served only when its socket is this
    // process's user's or root's: another local user could otherwise read the heap. Its
    // request is still read, for a 403 it can understand.
    if constexpr (std::is_same_v<Protocol, tcp>) {
      if (handler_.config().token.empty()) {
        beast::error_code ec_local, ec_remote;
        const auto server = stream_.socket().local_endpoint(ec_local);
        const auto client = stream_.socket().remote_endpoint(ec_remote);
        if (ec_local || ec_remote)
          refusal_ = "the connection's addresses could not be read; without a token it is refused";
        else refusal_ = check_peer_owner(client, server);
      }
    }
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::do_read, shared_from_this()));
  }

 private:
  void do_read() {
    // A fresh parser per request: its limits bound what one client can make us hold.
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(kMaxBodyBytes);
    // A client that stops sending is dropped rather than holding the session forever.
    stream_.expires_after(kReadTimeout);
    if (!evicted_) waiting_since_ = std::chrono::steady_clock::now().time_since_epoch().count();
    bh::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    waiting_since_ = kBusy;
    if (ec == bh::error::end_of_stream) return do_close();
    // The parser's verdict goes back to the client, then the connection closes: after a
    // malformed message nothing more on it can be trusted.
    if (ec && ec.category() == bh::make_error_code(bh::error::bad_target).category())
      return send_response(malformed_request(ec));
    if (ec) return fail(ec, "read");

    Request req = parser_->release();
    if (refusal_) {
      Response refused = make_error(reply_to(req), Status::forbidden, *refusal_);
      refused.keep_alive(false);
      return send_response(std::move(refused));
    }
    const auto send = [self = shared_from_this()](Response res) { self->send_response(std::move(res)); };
    if (handler_.handle_async(std::move(req), stream_.get_executor(), send, hangup_.slot()))
      return watch_for_hangup();
    send_response(make_error(reply_to(req), Status::not_found,
                             "not found: this server answers only under " + handler_.config().prefix + "/"));
  }

  // While the answer is being made, a client that hangs up cancels a ?seconds= window: its
  // place is given back at once. An end of stream counts as gone, as Go's net/http cancels a
  // request's context: a client that half-closes its side while its window waits is not
  // told apart from one that left (other answers are made and sent all the same).
  void watch_for_hangup() {
    watching_ = true;
    stream_.socket().async_wait(net::socket_base::wait_read,
                                beast::bind_front_handler(&Session::on_readable, shared_from_this()));
  }

  void on_readable(beast::error_code ec) {
    if (!watching_) return;  // answered meanwhile
    watching_ = false;
    if (ec == net::error::operation_aborted) return;
    char byte;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool gone = ec || n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    // n > 0: the client sent its next request early (pipelining); it is still there.
    if (gone) hangup_.emit(net::cancellation_type::terminal);
  }

  void send_response(Response res) {
    if (watching_) {
      watching_ = false;
      beast::error_code ignored;
      stream_.socket().cancel(ignored);  // the hang-up watch: the answer is here
    }
    const bool keep_alive = res.keep_alive() && parser_->is_done();
    res.keep_alive(keep_alive);
    stream_.expires_after(kWriteTimeout);  // for this answer, however it is written
    if (!evicted_) {
      writing_large_ = res.body().size() >= kLargeAnswerBytes;
      writing_since_ = Clock::now().time_since_epoch().count();
      if (writing_large_) book_->trim_large_writes();
    }
    beast::async_write(stream_, bh::message_generator(std::move(res)),
                       beast::bind_front_handler(&Session::on_write, shared_from_this(), keep_alive));
  }

  void on_write(bool keep_alive, beast::error_code ec, std::size_t) {
    writing_since_ = kBusy;
    if (ec) return fail(ec, "write");
    if (!keep_alive) return do_close();
    do_read();
  }

  void do_close() {
    beast::error_code ec;
    stream_.socket().shutdown(net::socket_base::shutdown_send, ec);
  }

  using std::enable_shared_from_this<Session>::shared_from_this;

  static std::optional<Clock::time_point> time_of(std::int64_t ticks) {
    if (ticks == kBusy) return std::nullopt;
    return Clock::time_point(Clock::duration(ticks));
  }

  beast::basic_stream<Protocol> stream_;
  boot::ForkFd tracked_;  // after stream_: untracked before the socket closes
  beast::flat_buffer buffer_;
  std::optional<bh::request_parser<bh::string_body>> parser_;
  Handler& handler_;
  std::shared_ptr<SessionBook<Protocol>> book_;
  static constexpr std::int64_t kBusy = -1;
  std::atomic<std::int64_t> waiting_since_{kBusy};  // steady_clock ticks; read by the listener
  std::atomic<std::int64_t> writing_since_{kBusy};  // the same, while an answer is written
  std::atomic<bool> writing_large_{false};
  std::optional<std::string> refusal_;  // the 403's reason for every request, when set
  std::atomic<bool> evicted_{false};
  net::cancellation_signal hangup_;  // emitted on the session's executor only
  bool watching_ = false;
};

// Accepts connections and starts a session for each.
// Thread-safety: runs on the server's single io_context thread (open() from any thread).
template <class Protocol>
class Listener : public std::enable_shared_from_this<Listener<Protocol>> {
  struct Opened {};  // make_shared's key to the constructor: only open() and adopt() make one

 public:
  // A listener on `endpoint`, or nullptr with `ec` set. Throws nothing but std::bad_alloc
  // (and then leaves no socket open and nothing tracked),
  // and formats no message (a Boost system_error does, through strerror and gettext): a
  // port retry calls it every second, and a fork at the wrong moment would leave glibc's
  // locale lock held in the child. Plain system calls until the socket listens, so that a
  // taken port costs socket, setsockopt, bind and close, and nothing is tracked for it.
  static std::shared_ptr<Listener> open(net::io_context& ioc, const typename Protocol::endpoint& endpoint,
                                        Handler& handler, boost::system::error_code& ec) {
    ec.clear();
    // Close-on-exec, which Asio does not set: a program that execs (a wrapper script's
    // shell, pyenv's shims) would hand the listening socket to the new image, where no
    // thread serves it: clients would hang, and the new image's own server could not bind.
    const int fd =
        ::socket(endpoint.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, endpoint.protocol().protocol());
    if (fd < 0) {
      ec.assign(errno, boost::system::system_category());
      return nullptr;
    }
    const int on = 1;
    const bool ok =
        (!std::is_same_v<Protocol, tcp> || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0) &&
        ::bind(fd, endpoint.data(), static_cast<socklen_t>(endpoint.size())) == 0 &&
        ::listen(fd, net::socket_base::max_listen_connections) == 0;
    if (!ok) {
      ec.assign(errno, boost::system::system_category());
      ::close(fd);
      return nullptr;
    }
    return adopt(ioc, fd, boot::ForkFd(fd), handler, ec, endpoint.protocol());
  }

  // Accepts on `fd`, a socket of `protocol` already bound and listening, whose fork_fds
  // entry `tracked` holds; or nullptr with `ec` set, and the socket untracked and closed.
  // The socket is closed exactly once on every path, and always after its entry is freed.
  static std::shared_ptr<Listener> adopt(
      net::io_context& ioc, int fd, boot::ForkFd&& tracked, Handler& handler, boost::system::error_code& ec,
      typename Protocol::endpoint::protocol_type protocol = typename Protocol::endpoint().protocol()) {
    ec.clear();
    std::optional<typename Protocol::acceptor> acceptor;
    try {
      acceptor.emplace(ioc);
      acceptor->assign(protocol, fd, ec);
    } catch (...) {  // out of memory in the reactor: not assigned
      ec = make_error_code(boost::system::errc::not_enough_memory);
    }
    if (ec) {
      tracked.reset();
      ::close(fd);
      return nullptr;
    }
    boot::ForkFd owned = std::move(tracked);  // after acceptor: freed before it closes the socket
    return std::make_shared<Listener>(Opened{}, ioc, std::move(*acceptor), std::move(owned), handler);
  }

  Listener(Opened, net::io_context& ioc, typename Protocol::acceptor&& acceptor, boot::ForkFd&& tracked,
           Handler& handler)
      : ioc_(ioc),
        acceptor_(std::move(acceptor)),
        tracked_(std::move(tracked)),
        backoff_(ioc),
        handler_(handler) {}
  ~Listener() { close_if_ours(acceptor_, tracked_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  std::uint16_t port() const requires std::is_same_v<Protocol, tcp> {
    boost::system::error_code ec;  // cannot fail on a bound socket; 0 if it did
    return acceptor_.local_endpoint(ec).port();
  }

  void run() { do_accept(); }

 private:
  using std::enable_shared_from_this<Listener>::shared_from_this;

  void do_accept() {
    // Each session gets its own strand.
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, typename Protocol::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors, say: wait a little rather than spin on the same error.
      fail(ec, "accept");
      backoff_.expires_after(kAcceptBackoff);
      return backoff_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
        if (!wait_ec) self->do_accept();
      });
    }
    if (book_->make_room()) {
      auto session = std::make_shared<Session<Protocol>>(std::move(socket), handler_, book_);
      book_->add(session);
      session->run();
    }  // else every session is busy with a request: the new socket closes here
    do_accept();
  }

  net::io_context& ioc_;
  typename Protocol::acceptor acceptor_;
  // And closed in a child forked without exec (fork_fds.hpp), for the same reasons. Only a
  // listening socket is tracked: a failed bind leaves nothing behind.
  boot::ForkFd tracked_;
  net::steady_timer backoff_;
  Handler& handler_;
  std::shared_ptr<SessionBook<Protocol>> book_ = std::make_shared<SessionBook<Protocol>>();
};

}  // namespace

tcp::endpoint resolve_tcp(const std::string& host, std::uint16_t port) {
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  const auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service);
  return results.begin()->endpoint();
}

// Members in this order: the io_context outlives the Handler, whose pending responses
// hold sessions (and so sockets) of this io_context.
struct Server::Impl {
  explicit Impl(Config config) : handler(std::move(config)) {
    const engine::BlockedSignals quiet;  // the host's signals are the host's threads'
    thread = std::thread([this] {
      IgnoreScope ignore;  // for the thread's whole life: serving is never the host's growth
      mark_reactor_thread();
      for (;;) {
        try {
          ioc.run();
          return;
        } catch (...) {
          // A fault in one session: its connection is gone; keep serving the others.
        }
      }
    });
  }

  ~Impl() {
    work.reset();
    ioc.stop();
    thread.join();
  }

  net::io_context ioc{1};
  // Keeps run() going while there is no listener yet.
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  Handler handler;
  std::thread thread;
};

Server::Server(Config config) : impl_(new Impl(std::move(config))), owner_(::getpid()) {}

Server::~Server() {
  if (::getpid() == owner_) delete impl_;
}

Handler& Server::handler() noexcept { return impl_->handler; }

net::io_context& Server::io() noexcept { return impl_->ioc; }

std::uint16_t Server::listen_tcp(const tcp::endpoint& endpoint) {
  check_listen_policy(impl_->handler.config(), endpoint.address(), endpoint.address().to_string(),
                      endpoint.port());
  boost::system::error_code ec;
  const std::uint16_t port = listen_tcp(endpoint, ec);
  if (ec) throw boost::system::system_error(ec);
  return port;
}

std::uint16_t Server::listen_tcp(const tcp::endpoint& endpoint, boost::system::error_code& ec) noexcept {
  try {
    auto listener = Listener<tcp>::open(impl_->ioc, endpoint, impl_->handler, ec);
    if (!listener) return 0;
    listener->run();  // the pending accept holds it
    return listener->port();
  } catch (...) {  // out of memory: the listener, if made, untracked and closed its socket
    ec = make_error_code(boost::system::errc::not_enough_memory);
    return 0;
  }
}

void Server::listen_local(const std::string& path, boost::system::error_code& ec) noexcept {
  // Checked here: Asio's endpoint would throw a system_error, which formats its message.
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    ec = make_error_code(boost::system::errc::filename_too_long);
    return;
  }
  ::unlink(path.c_str());  // a socket file left by an earlier process with our pid
  try {
    auto listener = Listener<local>::open(impl_->ioc, local::endpoint(path), impl_->handler, ec);
    if (listener) listener->run();
  } catch (...) {
    ec = make_error_code(boost::system::errc::not_enough_memory);
  }
}

void Server::adopt_local(int fd, boot::ForkFd&& tracked, boost::system::error_code& ec) noexcept {
  try {
    auto listener = Listener<local>::adopt(impl_->ioc, fd, std::move(tracked), impl_->handler, ec);
    if (listener) listener->run();
  } catch (...) {  // as above: whatever was made of it freed the entry, then closed the socket
    ec = make_error_code(boost::system::errc::not_enough_memory);
  }
}

std::uint16_t Server::adopt_tcp(int fd, boot::ForkFd&& tracked, boost::system::error_code& ec) noexcept {
  try {
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    const tcp protocol =
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0 && bound.ss_family == AF_INET6
            ? tcp::v6()
            : tcp::v4();
    auto listener = Listener<tcp>::adopt(impl_->ioc, fd, std::move(tracked), impl_->handler, ec, protocol);
    if (!listener) return 0;
    listener->run();
    return listener->port();
  } catch (...) {  // as adopt_local
    ec = make_error_code(boost::system::errc::not_enough_memory);
    return 0;
  }
}

struct AdminServer::Impl {
  Impl(Config config, const std::string& host, std::uint16_t port) : server(std::move(config)) {
    try {
      bound_port = server.listen_tcp(resolve_tcp(host, port));
    } catch (const boost::system::system_error& e) {
      throw std::runtime_error("cannot serve on " + host + ":" + std::to_string(port) + ": " +
                               e.code().message());
    }
  }

  Server server;
  std::uint16_t bound_port = 0;
};

AdminServer::AdminServer(Config config, const std::string& host, std::uint16_t port) {
  IgnoreScope ignore;
  // The bound address is a Host a browser may use for us; an IPv6 one is written "[addr]".
  config.allowed_hosts.push_back(host_header_name(host));
  if (config.metrics_path.empty()) config.metrics_path = "/metrics";  // where scrapers look
  impl_ = std::make_unique<Impl>(std::move(config), host, port);
}

AdminServer::~AdminServer() {
  IgnoreScope ignore;
  impl_.reset();
}

std::uint16_t AdminServer::port() const noexcept { return impl_->bound_port; }

Handler& AdminServer::handler() noexcept { return impl_->server.handler(); }

}  // namespace http
LIVEHEAP_NAMESPACE_END
