// liveheap::http::Handler: prefix matching, and answering on the caller's thread (handle)
// or on liveheap's worker thread (handle_async), where ?seconds=N windows wait on timers
// and requests forwarded to other processes wait on their sockets, asynchronously.
#include <atomic>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "blocked_signals.hpp"
#include "reactor_guard.hpp"
#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"
#include "auth.hpp"
#include "reply.hpp"
#include "routes.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace net = boost::asio;

// Reports queued or running on the worker beyond which a new one gets 503 and Retry-After:
// each holds a snapshot in the host's memory, and a long queue only delays every answer.
// Cheap reads (is_cheap_request) bypass the queue.
constexpr int kMaxPendingReports = 8;

// One handle_async call in flight.
struct Job {
  Request req;
  net::any_io_executor executor;
  std::function<void(Response)> done;
  std::atomic<bool> cancelled{false};       // set from the caller's thread
  std::optional<net::steady_timer> window;  // the worker thread's: a window's wait
  std::weak_ptr<PeerExchanges> forward;     // the worker thread's: a forwarded window's
};

// What a cancelled window gets: its client is gone (or half-closed: then it reads this).
Response cancelled_response(const Request& req) {
  return make_error(reply_to(req), Status::service_unavailable,
                    "cancelled: the client went away before the answer was ready");
}

}  // namespace

// "" or "/a/b": no trailing slash, nothing a raw target could spell two ways.
std::string checked_prefix(std::string prefix, std::string_view what) {
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty() && prefix.front() != '/')
    throw std::invalid_argument(std::string(what) + " '" + prefix + "' must start with '/'");
  for (const char c : prefix)
    if (c <= ' ' || c == '?' || c == '#' || c == '%' || c == 0x7F)
      throw std::invalid_argument(std::string(what) + " '" + prefix +
                                  "' must be a plain path (no spaces, '?', '#' or '%')");
  return prefix;
}

// Thread-safety: state is shared by every request; the worker is started once (call_once)
// and its io_context is thread-safe for post.
struct Handler::Impl {
  explicit Impl(Config config) : state(std::move(config)) {
    if (state.config.compare_requests)
      comparison = std::make_unique<RequestComparison>(*state.config.compare_requests);
  }

  // A request that is not ours is the host's: it counts for the per-request comparison.
  void count_host_request() noexcept {
    if (comparison) comparison->on_request();
  }

  ~Impl() {
    if (!worker.joinable()) return;
    work.reset();
    worker_io.stop();
    worker.join();
  }

  void start_worker() {
    std::call_once(worker_started, [this] {
      work.emplace(worker_io.get_executor());
      const engine::BlockedSignals quiet;  // the host's signals are the host's threads'
      worker = std::thread([this] {
        IgnoreScope ignore;  // for the thread's whole life: everything it does is ours
        mark_reactor_thread();
        for (;;) {
          try {
            worker_io.run();
            return;
          } catch (...) {
            // A fault in one job: its client's connection closes; the rest go on.
          }
        }
      });
    });
  }

  void run(const std::shared_ptr<Job>& job) {
    // A report is made even when its client has signalled that it left: an end of stream
    // may be a client that half-closed and still reads, and a report is bounded work.
    Outcome outcome = answer(state, job->req);
    if (auto* forward = std::get_if<Forward>(&outcome)) return run_forward(job, std::move(*forward));
    pending.fetch_sub(1);  // a window's wait holds no snapshot work: it does not count
    if (auto* res = std::get_if<Response>(&outcome)) return deliver(job, std::move(*res));
    Window window = std::get<Window>(std::move(outcome));
    if (job->cancelled) return deliver(job, cancelled_response(job->req));
    job->window.emplace(worker_io, window.wait);
    // The handler holds the window's slot (Config::max_windows) until it has run: a
    // cancelled window gives its slot back at once.
    job->window->async_wait([job, finish = std::move(window.finish)](boost::system::error_code ec) {
      // The timer is the worker's io_context's: it goes now, not with the job, which the
      // delivery takes to the caller's executor and which may outlive this Handler.
      job->window.reset();
      if (!ec) return deliver(job, finish());
      if (job->cancelled) deliver(job, cancelled_response(job->req));
    });
  }

  // The other processes' exchanges run on this worker's io_context, asynchronously: the
  // worker goes on with other reports while they wait (a forwarded window, a stopped
  // process), and finish -- a merge is report work -- runs here, one at a time, as every
  // report does. No thread of its own: the waits cost sockets and timers, and short
  // timeouts (local_client.hpp) bound them. A forward that is not a window keeps its
  // report place until answered; a forwarded window, like a window here, holds a window
  // place instead and is cancelled when its client leaves.
  void run_forward(const std::shared_ptr<Job>& job, Forward forward) {
    if (forward.window) pending.fetch_sub(1);
    const bool counted = !forward.window;
    if (forward.window && job->cancelled) return deliver(job, cancelled_response(job->req));
    auto finish =
        std::make_shared<std::function<Response(std::vector<PeerAnswer>)>>(std::move(forward.finish));
    const auto exchanges = PeerExchanges::start(
        worker_io, std::move(forward.asks), [this, job, finish, counted](std::vector<PeerAnswer> answers) {
          Response res =
              counted || !job->cancelled ? (*finish)(std::move(answers)) : cancelled_response(job->req);
          *finish = nullptr;  // a window's place goes back before its answer leaves
          if (counted) pending.fetch_sub(1);
          deliver(job, std::move(res));
        });
    if (forward.window) job->forward = exchanges;  // the rest is answered as a report is
  }

  // On the caller's thread, when its cancellation slot is emitted.
  void on_cancel(const std::shared_ptr<Job>& job) {
    job->cancelled = true;
    net::post(worker_io, [job] {
      if (job->window) job->window->cancel();
      if (const auto forward = job->forward.lock()) forward->cancel();
    });
  }

  static void deliver(const std::shared_ptr<Job>& job, Response res) {
    net::post(job->executor, [job, res = std::move(res)]() mutable {
      IgnoreScope ignore;  // what the caller's send allocates for our response is ours too
      job->done(std::move(res));
    });
  }

  // Declared first, destroyed last: pending windows refer to it.
  RouteState state;
  std::unique_ptr<RequestComparison> comparison;           // null unless Config::compare_requests
  std::atomic<int> pending{0};                             // jobs posted to the worker, not yet run
  std::shared_ptr<void> alive = std::make_shared<int>(0);  // cancellation handlers' check
  net::io_context worker_io{1};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::once_flag worker_started;
  std::thread worker;
};

Handler::Handler(Config config) {
  config.prefix = checked_prefix(std::move(config.prefix), "liveheap::http::Config::prefix");
  config.pprof_prefix =
      checked_prefix(std::move(config.pprof_prefix), "liveheap::http::Config::pprof_prefix");
  config.metrics_path =
      checked_prefix(std::move(config.metrics_path), "liveheap::http::Config::metrics_path");
  // A token no request can present would lock every client out, silently.
  if (auto problem = token_problem(config.token))
    throw std::invalid_argument("liveheap::http::Config::token " + *problem);
  impl_ = std::make_unique<Impl>(std::move(config));
}

Handler::~Handler() = default;

const Config& Handler::config() const noexcept { return impl_->state.config; }

bool Handler::accepts(const Request& req) const noexcept {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const Config& config = impl_->state.config;
  const std::string& prefix = config.prefix;
  return (path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '/')) ||
         !alias_of(config, path).empty();
}

std::optional<Response> Handler::handle(const Request& req) {
  if (!accepts(req)) {
    impl_->count_host_request();
    return std::nullopt;
  }
  IgnoreScope ignore;
  Outcome outcome = answer(impl_->state, req);
  // A window would sleep on the host's own thread for up to a minute: refused here.
  const auto* forward = std::get_if<Forward>(&outcome);
  if (std::holds_alternative<Window>(outcome) || (forward != nullptr && forward->window))
    return make_error(reply_to(req), Status::bad_request,
                      "seconds= windows are not served by Handler::handle (it would sleep on "
                      "this thread); mount liveheap with handle_async, or use the admin server");
  if (forward != nullptr) return forward->finish(exchange_now(std::move(std::get<Forward>(outcome).asks)));
  return std::get<Response>(std::move(outcome));
}

bool Handler::handle_async(Request&& req, boost::asio::any_io_executor executor,
                           std::function<void(Response)> done) {
  return handle_async(std::move(req), std::move(executor), std::move(done), boost::asio::cancellation_slot());
}

bool Handler::handle_async(Request&& req, boost::asio::any_io_executor executor,
                           std::function<void(Response)> done, boost::asio::cancellation_slot cancel) {
  if (!accepts(req)) {
    impl_->count_host_request();
    return false;
  }
  IgnoreScope ignore;
  auto job = std::make_shared<Job>();
  job->req = std::move(req);
  job->executor = std::move(executor);
  job->done = std::move(done);
  if (cancel.is_connected()) {
    // A weak reference: the signal may outlive the job (and the session owning the signal
    // is kept alive by `done`, which the job holds).
    cancel.assign([impl = impl_.get(), handler_alive = std::weak_ptr<void>(impl_->alive),
                   weak = std::weak_ptr<Job>(job)](net::cancellation_type) {
      const auto impl_alive = handler_alive.lock();  // emitted after the Handler went: nothing
      if (auto alive = weak.lock(); alive && impl_alive) impl->on_cancel(alive);
    });
  }
  if (is_cheap_request(impl_->state.config, job->req)) {  // never behind the reports
    Impl::deliver(job, std::get<Response>(answer(impl_->state, job->req)));
    return true;
  }
  if (impl_->pending.fetch_add(1) >= kMaxPendingReports) {
    impl_->pending.fetch_sub(1);
    Response busy = make_error(
        reply_to(job->req), Status::service_unavailable,
        "busy: " + std::to_string(kMaxPendingReports) + " reports are queued or running; retry in a second");
    busy.set(boost::beast::http::field::retry_after, "1");
    Impl::deliver(job, std::move(busy));
    return true;
  }
  impl_->start_worker();
  net::post(impl_->worker_io, [impl = impl_.get(), job] { impl->run(job); });
  return true;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
