// liveheap over HTTP: a request handler any Boost.Beast server mounts in one line, and a
// standalone admin server (its own thread and port) for servers that are not Beast.
//
// Routes, under Config::prefix (default /debug/memory); reads are GET, changes are POST:
//   GET  /             the dashboard (a plain index of the routes without it)
//   GET  /stats        tracing state, traced and tracker memory (its cap, and what the cap
//                      folded or dropped), RSS, mallinfo2, the allocator underneath (glibc,
//                      jemalloc, tcmalloc, mimalloc) and its figures, the ?seconds= windows
//                      open now (JSON "windows")
//   POST /baseline     remember the heap now;  GET /baseline  when, and its totals
//   GET  /diff         the heap now against the baseline
//   GET  /top          statistics of the heap now
//   GET  /tracebacks   the biggest stacks, whole, most recent call first
//   GET  /routes       per route of the host's requests (request_scope, RequestScope,
//                      liveheap_request_begin): requests, live and allocated bytes, what each
//                      request retained (since the baseline, else start-up), verdict
//   POST /start /stop /clear /reset-peak   control tracing (they answer /stats)
//   POST /trim         the allocator gives free memory back (malloc_trim(0), jemalloc's purge,
//                      tcmalloc's ReleaseFreeMemory, mi_collect), with RSS before and after
//   GET  /static/<name>  the dashboard's files
//   GET  /pprof/heap /pprof/allocs   gzip'd pprof heap profiles (also at Config::pprof_prefix)
//   GET  /metrics      Prometheus text exposition 0.0.4 (also at Config::metrics_path)
// Query parameters (a route rejects those it does not take, naming them):
//   format=text|json    default from Accept (application/json -> JSON, else text)
//   key=line|file|function|traceback|route   limit=1..10000   cumulative=0|1
//   route=GLOB (repeatable) on /top /diff /peak /tracebacks /pprof/*: the request's route
//   traceback=0|1 on /diff and /top: each JSON stat with its whole stack (key=traceback
//       and /tracebacks always have them; otherwise they are left out)
//   include=GLOB exclude=GLOB (repeatable): fnmatch globs on the user frame's file;
//       prefix "function:" to match its function instead, e.g. include=function:std::*
//   seconds=1..60 on /diff and /top: a window, as Go's pprof: snapshot now, wait, diff;
//       on /pprof/heap and /pprof/allocs: a delta profile over that window
//   format=folded on /top /diff /tracebacks: folded stacks (flamegraph.pl); folded2 on /diff
//   mode=exact|sampled frames=1..128 sample_interval=4096..2^40 BYTES on POST /start,
//       and max_tracker_memory=1MiB..1TiB (a size: 268435456, 256MiB, 1GiB), the cap
//
// Requests are answered under liveheap::IgnoreScope: looking never shows up as growth.
// Every failure is a 4xx (5xx only for liveheap's own faults) with a one-line reason,
// as {"error": "..."} in JSON. With Config::token set, every route except the dashboard's
// files (which hold no data) requires "Authorization: Bearer <token>". What a browser could
// be tricked into sending is refused with a 403 first: a POST from another origin (Origin,
// Sec-Fetch-Site), any other request from another site (Sec-Fetch-Site cross-site or
// same-site) but a top-level navigation or the dashboard's page and files, and, without a
// token, a Host that is not this machine's (DNS rebinding).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "liveheap/export.hpp"
#include "liveheap/request_comparison.hpp"
#include "liveheap/request_scope.hpp"

LIVEHEAP_API_BEGIN

namespace http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

struct Config {
  std::string prefix = "/debug/memory";  // where the routes live; "" for the root
  std::string token{};                   // bearer token; empty = no authentication
  // Without a token, only requests whose Host is a loopback name (localhost, 127.0.0.0/8,
  // [::1]), the admin server's bound address or one of these names ("name" or
  // "name:port") are served: a page that rebinds its own name to 127.0.0.1 reads nothing.
  // With a token, any Host is. (LIVEHEAP_ALLOWED_HOSTS, comma-separated, in preload mode.)
  std::vector<std::string> allowed_hosts{};
  // The admin server refuses to listen on an address that is not loopback (0.0.0.0, a
  // LAN address) without a token, unless this says so (LIVEHEAP_ALLOW_OPEN=1): then
  // anyone who can reach the port may read the heap and stop tracing.
  bool allow_open_without_token = false;
  unsigned max_windows = 4;  // ?seconds=N requests waiting at once; more get 429
  // Also answer GET {pprof_prefix}/heap and {pprof_prefix}/allocs, where pprof scrapers
  // look; "" for only {prefix}/pprof/heap and /allocs.
  std::string pprof_prefix = "/debug/pprof";
  // Also answer GET metrics_path with {prefix}/metrics; "" for none (AdminServer: "/metrics").
  std::string metrics_path{};
  // Callsites given a liveheap_callsite_inuse_bytes gauge, 0..1000; unset: the environment's
  // LIVEHEAP_METRICS_CALLSITES, else 20.
  std::optional<unsigned> metrics_callsites{};
  // A report (/top, /diff, /tracebacks) stops adding rows past this many bytes and says so
  // ("truncated": true, or a last text line): it is built in the host's memory.
  std::size_t max_report_bytes = std::size_t{8} << 20;
  // Opt-in per-request comparison (request_comparison.hpp): every request the Handler
  // declines -- the host's own -- is counted, and every N of them the heap is compared
  // with a snapshot taken at the first and the top K growth lines are logged. The
  // comparison runs on a liveheap thread: the request that asks for one does not wait.
  std::optional<ComparisonConfig> compare_requests{};
};

// The request's allocations tagged with its route, "METHOD /path" (the query left out; at
// most 127 bytes), while the returned scope lives: one line in a Beast session, around the
// host's handler (samples/beast_session.hpp):
//
//   auto scope = liveheap::http::request_scope(req);
//
// A host that knows its route pattern ("GET /users/{id}") names it with RequestScope itself.
RequestScope request_scope(const Request& req) noexcept;

// LIVEHEAP_ADDR's syntax: "port", ":port", "host:port", "[v6addr]:port" (e.g. [::1]:6060);
// the host defaults to 127.0.0.1. Throws std::invalid_argument naming LIVEHEAP_ADDR.
struct ListenAddress {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
};
ListenAddress parse_listen_address(std::string_view text);

// LIVEHEAP_ALLOWED_HOSTS's syntax: "a.example, b.example:8080" -> {"a.example",
// "b.example:8080"} (spaces and empty items dropped).
std::vector<std::string> parse_allowed_hosts(std::string_view list);

// Answers requests under Config::prefix and declines every other one.
// Thread-safety: handle and handle_async may be called from any number of threads at once;
// the baseline is shared by all of them (guarded by a mutex inside).
//
// Mounting, in a Beast session that reads into `req_` (see samples/beast_server.cpp):
//
//   if (liveheap_.handle_async(std::move(req_), stream_.get_executor(),
//           [self = shared_from_this()](auto res) { self->send_response(std::move(res)); }))
//     return;
//
// or, in a synchronous handle_request that returns a message_generator:
//
//   if (auto res = liveheap_.handle(req)) return std::move(*res);
//
// The trade-off: handle() does the work on the calling thread, so a report (a snapshot,
// symbolization on a cold cache) blocks that thread, and it refuses ?seconds=N windows,
// which would stall a single-threaded io_context for N seconds. handle_async()
// runs every request on a liveheap-owned worker thread (a timer for windows, so several
// windows wait at once) and posts the response to the executor you give: the I/O thread
// never waits. Prefer handle_async; handle() suits thread-per-request servers and tests.
class Handler {
 public:
  // Throws std::invalid_argument for a prefix that is not "" or "/path" without a query, and
  // for a token with whitespace at either end or a control character (it could never match).
  explicit Handler(Config config = {});
  ~Handler();  // joins the worker; responses still pending are dropped, never delivered
  Handler(const Handler&) = delete;
  Handler& operator=(const Handler&) = delete;

  const Config& config() const noexcept;
  // True when the request's path is the prefix or below it.
  bool accepts(const Request& req) const noexcept;

  // std::nullopt when the request is not under the prefix; else the answer, made on this
  // thread. A ?seconds=N window is refused (400): it would sleep on this thread.
  std::optional<Response> handle(const Request& req);

  // False, leaving `req` untouched, when the request is not under the prefix. Otherwise
  // takes `req`, answers it on liveheap's worker thread and calls `done` exactly once,
  // through `executor` (as boost::asio::post does), unless the Handler is destroyed first.
  bool handle_async(Request&& req, boost::asio::any_io_executor executor, std::function<void(Response)> done);

  // The same, and a ?seconds=N window stops waiting when `cancel` is emitted (as Asio's
  // per-operation cancellation: emit from the thread that called handle_async, e.g. when the
  // client has gone away); other requests are answered as usual. `done` is still called
  // exactly once, for a stopped window with 503 "cancelled". The admin server does this for
  // its clients.
  bool handle_async(Request&& req, boost::asio::any_io_executor executor, std::function<void(Response)> done,
                    boost::asio::cancellation_slot cancel);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A Beast HTTP server on its own thread and port that serves only a Handler's routes.
// Bounded requests (8 KiB of headers, 1 KiB of body), 5 s to send a request head, one async
// session per connection: a slow or half-sent request never blocks another client; 10 s for
// a client to take each answer. At 64 connections, a new one closes the one that has waited
// longest for a request, else the one writing its answer longest. Without a token, a client
// on this machine whose socket belongs to another user (root excepted) gets 403.
// Thread-safety: construct and destroy on one thread; port() from any.
class AdminServer {
 public:
  // Binds host:port (port 0 picks a free one; host "127.0.0.1" keeps it to this machine)
  // and starts serving. Throws std::runtime_error naming the address on any failure, and
  // for an address that is not loopback when there is no token and no
  // Config::allow_open_without_token.
  AdminServer(Config config, const std::string& host, std::uint16_t port);
  ~AdminServer();  // stops serving and joins its threads
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  std::uint16_t port() const noexcept;
  Handler& handler() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace http

LIVEHEAP_API_END
