// The route table: paths, methods and parameters, each route's work, and the mapping of
// every failure to a 4xx (or, for liveheap's own faults only, a 5xx) with a one-line reason.
// A request for another process goes to forward.hpp's stage before any route runs.
#include "routes.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "liveheap/allocator.hpp"
#include "auth.hpp"
#include "embedded_assets.hpp"
#include "exports.hpp"
#include "forward.hpp"
#include "liveheap/tracker.hpp"
#include "query.hpp"
#include "reports.hpp"
#include "request_policy.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace bh = boost::beast::http;
using Verb = bh::verb;

using RouteFn = Outcome (*)(RouteState&, const ReplyTo&, const Query&);
struct Route {
  std::string_view path;  // below the prefix
  Verb method;
  ParamSet params;  // the query parameters it takes
  RouteFn run;
  std::string_view what;  // for the index
};

[[noreturn]] void conflict(const std::string& reason) { throw RequestError(Status::conflict, reason); }

[[noreturn]] void tracing_off(const RouteState& state) {
  conflict("tracing is off: POST " + state.config.prefix + "/start first");
}

void require_tracing(const RouteState& state) {
  if (!is_tracing()) tracing_off(state);
}

// take() while tracing; else, also when tracing stopped between the check and the take,
// the 409 that says how to start it.
template <typename Take>
auto while_tracing(const RouteState& state, Take take) -> decltype(take()) {
  require_tracing(state);
  try {
    return take();
  } catch (const std::runtime_error&) {  // tracing stopped since the check
    tracing_off(state);
  }
}

Snapshot snapshot_now(const RouteState& state) {
  return while_tracing(state, [] { return take_snapshot(); });
}

// The heap now as integers (a baseline, a window's start): nothing symbolized.
StackSnapshot stacks_now(const RouteState& state) {
  return while_tracing(state, [] { return take_stack_snapshot(); });
}

// `now` and `old` symbolized together, at the moment a report shows them. `old_is` says
// what `old` is and `again` how to take it afresh, for the 409 when its code was unloaded.
SymbolizedPair shown(const StackSnapshot& now, const StackSnapshot& old, const std::string& old_is,
                     const std::string& again) {
  try {
    return symbolized(now, old);
  } catch (const UnloadedCodeError& e) {
    conflict(old_is + " cannot be shown: " + e.what() + "; " + again);
  }
}

// ?seconds=N, as Go's pprof: the heap now, and after N seconds what changed.
Outcome window(RouteState& state, const ReplyTo& to, const Query& query) {
  auto slot = std::make_shared<WindowSlot>(state);
  auto first = std::make_shared<const StackSnapshot>(stacks_now(state));
  return Window{std::chrono::seconds(query.seconds), [&state, to, query, first, slot]() mutable {
                  Response res;
                  try {
                    const SymbolizedPair both =
                        shown(stacks_now(state), *first, "the window's start", "ask for the window again");
                    res = diff_report(to, both.now, both.old, query,
                                      "the heap " + std::to_string(query.seconds) + " s ago");
                  } catch (...) {
                    res = failure_response(to);
                  }
                  // The place is given back before the answer leaves: a client that has it
                  // may open the next window at once.
                  slot.reset();
                  return res;
                }};
}

Outcome stats(RouteState& state, const ReplyTo& to, const Query&) {
  return typed_response(to, stats_now(state.windows.load()));
}

Outcome get_baseline(RouteState& state, const ReplyTo& to, const Query&) {
  const auto baseline = state.baseline.get();
  if (!baseline) conflict("no baseline yet: POST " + state.config.prefix + "/baseline first");
  return typed_response(to, baseline_report_of(*baseline, group_size()));
}

Outcome post_baseline(RouteState& state, const ReplyTo& to, const Query&) {
  StackSnapshot snapshot = stacks_now(state);
  Response res = typed_response(to, baseline_report_of(snapshot, group_size()));
  state.baseline.set(std::move(snapshot));
  return res;
}

Outcome diff(RouteState& state, const ReplyTo& to, const Query& query) {
  if (query.seconds != 0) return window(state, to, query);
  require_tracing(state);
  const auto baseline = state.baseline.get();
  if (!baseline && query.diff_nothing_without_baseline)  // joined after the baseline
    return diff_report(to, snapshot_now(state), Snapshot{}, query, kAgainstNothing, group_size());
  if (!baseline)
    conflict("no baseline to diff against: POST " + state.config.prefix +
             "/baseline first, or ask for a window with ?seconds=N");
  const SymbolizedPair both =
      shown(stacks_now(state), *baseline, "the baseline", "POST " + state.config.prefix + "/baseline again");
  return diff_report(to, both.now, both.old, query, "the baseline", group_size());
}

Outcome top(RouteState& state, const ReplyTo& to, const Query& query) {
  if (query.seconds != 0) return window(state, to, query);
  return top_report(to, snapshot_now(state), query, group_size());
}

// The heap at its high-water mark, as /top shows the heap now.
Outcome peak(RouteState& state, const ReplyTo& to, const Query& query) {
  require_tracing(state);
  try {
    return top_report(to, take_peak_snapshot(), query);
  } catch (const std::runtime_error&) {  // tracing stopped since the check
    tracing_off(state);
  }
}

// Per route of the host's requests: requests, live and allocated bytes, and what each request
// left behind since the baseline (without one, over the history window).
Outcome routes(RouteState& state, const ReplyTo& to, const Query&) {
  require_tracing(state);
  const auto baseline = state.baseline.get();
  try {
    return routes_report(to, take_route_report(baseline.get()));
  } catch (const std::runtime_error&) {  // tracing stopped since the check
    tracing_off(state);
  }
}

Outcome tracebacks(RouteState& state, const ReplyTo& to, const Query& query) {
  Query whole = query;
  whole.key = KeyType::traceback;
  return tracebacks_report(to, snapshot_now(state), whole);
}

Outcome history(RouteState& state, const ReplyTo& to, const Query& query) {
  require_tracing(state);
  return history_report(to, liveheap::history(), query);
}

Outcome start_tracing(RouteState& state, const ReplyTo& to, const Query& query) {
  // tracemalloc's start() would keep going; here a second start would silently clear
  // every trace, so it is refused.
  if (is_tracing())
    conflict("tracing is already on: POST " + state.config.prefix +
             "/stop first to start again with other options");
  Options options = liveheap::options();
  if (options.mode == Mode::off) options.mode = Mode::exact;
  if (query.mode) options.mode = *query.mode;
  if (query.frames) options.max_frames = *query.frames;
  if (query.sample_interval) options.sample_interval = *query.sample_interval;
  if (query.max_tracker_memory) options.max_tracker_memory = *query.max_tracker_memory;
  try {
    start(options);
  } catch (const std::invalid_argument& e) {
    throw RequestError(Status::bad_request, e.what());
  } catch (const std::runtime_error& e) {
    conflict(e.what());
  }
  return typed_response(to, stats_now(state.windows.load()));
}

Outcome stop_tracing(RouteState& state, const ReplyTo& to, const Query&) {
  stop();
  return typed_response(to, stats_now(state.windows.load()));
}

Outcome clear_traces(RouteState& state, const ReplyTo& to, const Query&) {
  clear();
  return typed_response(to, stats_now(state.windows.load()));
}

Outcome reset_traced_peak(RouteState& state, const ReplyTo& to, const Query&) {
  reset_peak();
  return typed_response(to, stats_now(state.windows.load()));
}

Outcome trim(RouteState&, const ReplyTo& to, const Query&) { return typed_response(to, trim_now()); }

Snapshot allocations_now(const RouteState& state) {
  return while_tracing(state, [] { return take_allocation_snapshot(); });
}

// Every stack that allocated since start-up, as integers (a pprof window's start).
StackSnapshot allocation_stacks_now(const RouteState& state) {
  return while_tracing(state, [] { return take_allocation_stack_snapshot(); });
}

// A pprof profile; with ?seconds=N the delta over N seconds, as Go's net/http/pprof. The
// window's start is integers, symbolized with its end when the profile is written.
Outcome profile(RouteState& state, const ReplyTo& to, const Query& query, ProfileView view) {
  const std::vector<std::string> routes = query.routes;  // route=: the requests' stacks only
  if (query.seconds == 0) return profile_response(to, allocations_now(state).filter_routes(routes), view);
  auto slot = std::make_shared<WindowSlot>(state);
  auto first = std::make_shared<const StackSnapshot>(allocation_stacks_now(state));
  return Window{std::chrono::seconds(query.seconds), [&state, to, first, slot, view, routes]() mutable {
                  Response res;
                  try {
                    const SymbolizedPair both = shown(allocation_stacks_now(state), *first,
                                                      "the window's start", "ask for the window again");
                    const Snapshot old = both.old.filter_routes(routes);
                    res = profile_response(to, both.now.filter_routes(routes), view, &old);
                  } catch (...) {
                    res = failure_response(to);
                  }
                  slot.reset();  // before the answer leaves, as in window()
                  return res;
                }};
}

Outcome pprof_heap(RouteState& state, const ReplyTo& to, const Query& query) {
  return profile(state, to, query, ProfileView::heap);
}

Outcome pprof_allocs(RouteState& state, const ReplyTo& to, const Query& query) {
  return profile(state, to, query, ProfileView::allocs);
}

Outcome metrics(RouteState& state, const ReplyTo& to, const Query&) {
  if (const auto* error = std::get_if<std::string>(&state.metrics_callsites))
    throw RequestError(Status::internal_server_error, *error);
  return metrics_response(to, std::get<unsigned>(state.metrics_callsites));
}

Outcome processes(RouteState& state, const ReplyTo& to, const Query&) { return processes_report(state, to); }

Outcome route_index(RouteState& state, const ReplyTo& to, const Query& query);

constexpr ParamSet kReport = kFormat | kKey | kLimit | kCumulative | kFilters | kTraceback;
const Route kRoutes[] = {
    {"/", Verb::get, kFormat, route_index, "the dashboard, or this index"},
    {"/stats", Verb::get, kFormat, stats,
     "tracing state, traced and tracker memory, RSS, the allocator and its figures"},
    {"/baseline", Verb::get, kFormat, get_baseline, "when the baseline was taken, and its totals"},
    {"/baseline", Verb::post, kFormat, post_baseline, "remember the heap now as the baseline"},
    {"/diff", Verb::get,
     kReport | kRouteFilter | kSeconds | kFolded | kFolded2 | kVerdicts | kMissingBaseline, diff,
     "the heap now against the baseline"},
    {"/top", Verb::get, kReport | kRouteFilter | kSeconds | kFolded | kVerdicts, top,
     "statistics of the heap now"},
    {"/history", Verb::get, kReport, history,
     "the heap over time: points, and each callsite's series and verdict"},
    {"/peak", Verb::get, kReport | kRouteFilter | kFolded | kVerdicts, peak,
     "statistics of the heap at its high-water mark (as /top)"},
    {"/tracebacks", Verb::get, kFormat | kLimit | kFilters | kRouteFilter | kFolded, tracebacks,
     "the biggest stacks, whole"},
    {"/routes", Verb::get, kFormat, routes,
     "per route of the requests: requests, live bytes, what each request left behind, verdict"},
    {"/start", Verb::post, kFormat | kStartOptions, start_tracing, "start tracing"},
    {"/stop", Verb::post, kFormat, stop_tracing, "stop tracing and forget the traces"},
    {"/clear", Verb::post, kFormat, clear_traces, "forget the traces, keep tracing"},
    {"/reset-peak", Verb::post, kFormat, reset_traced_peak,
     "reset the traced peak (and /peak's record) to now"},
    {"/trim", Verb::post, kFormat, trim,
     "the allocator gives free memory back (malloc_trim(0) on glibc), with RSS before and after"},
    {"/pprof/heap", Verb::get, kSeconds | kRouteFilter, pprof_heap,
     "gzip'd pprof heap profile (inuse_space first)"},
    {"/pprof/allocs", Verb::get, kSeconds | kRouteFilter, pprof_allocs,
     "the same profile, alloc_space first"},
    {"/metrics", Verb::get, 0, metrics, "Prometheus metrics (text exposition 0.0.4)"},
    {"/processes", Verb::get, kFormat, processes, "every process of this program (pid=N asks one)"},
};

Outcome route_index(RouteState& state, const ReplyTo& to, const Query& query) {
  const web::Asset* page = web::find_asset("index.html");
  if (page != nullptr && !query.format && to.format == Format::text)
    return make_response(to, Status::ok, std::string(page->body), page->content_type);
  nlohmann::json routes = nlohmann::json::array();
  std::string text = "liveheap routes (parameters: see liveheap/http.hpp):\n";
  for (const Route& route : kRoutes) {
    const std::string method(bh::to_string(route.method));
    const std::string path = state.config.prefix + std::string(route.path);
    routes.push_back({{"method", method}, {"path", path}, {"what", route.what}});
    text += method + (method.size() < 4 ? "  " : " ") + path + "  " + std::string(route.what) + "\n";
  }
  if (to.format == Format::json) return make_json(to, Status::ok, {{"routes", routes}});
  return make_text(to, Status::ok, std::move(text));
}

Response method_not_allowed(const Request& req, const ReplyTo& to, const std::string& allow) {
  Response res = make_error(to, Status::method_not_allowed,
                            "method " + excerpt(req.method_string()) + " is not allowed here; use " + allow);
  res.set(bh::field::allow, allow);
  return res;
}

// The dashboard's files: "/static/<name>", or "/<name>" for a name that is a file. Their
// query is ignored (cache busters), and they need no token: they hold no data.
std::optional<Response> static_file(const Request& req, const ReplyTo& to, std::string_view rest) {
  constexpr std::string_view kStatic = "/static/";
  std::string_view name;
  if (rest.starts_with(kStatic)) name = rest.substr(kStatic.size());
  else if (rest.size() > 1 && web::find_asset(rest.substr(1)) != nullptr) name = rest.substr(1);
  else return std::nullopt;
  if (req.method() != Verb::get) return method_not_allowed(req, to, "GET");
  // Files live in one flat folder: a name with a separator or a leading dot is refused
  // before any lookup, so no spelling of ".." can reach outside it.
  if (name.empty() || name.front() == '.' || name.find_first_of("/\\") != std::string_view::npos)
    throw RequestError(Status::bad_request, "bad file name " + excerpt(name));
  const web::Asset* asset = web::find_asset(name);
  if (asset == nullptr)
    throw RequestError(Status::not_found, "no file " + excerpt(name) + " in the dashboard");
  return make_response(to, Status::ok, std::string(asset->body), asset->content_type);
}

// `route` run here for `target` (its path and another query), as if `req` had asked it
// without pid=: this process's share of a pid=all merge. The request passed the checks.
Response run_here(RouteState& state, const Request& req, const Route& route, const std::string& target) {
  ReplyTo to = reply_to(req);
  to.max_report_bytes = state.config.max_report_bytes;
  try {
    const Query query = parse_query(split_target(target).query, route.params | kPid);
    if (query.format) to.format = *query.format;
    Outcome outcome = route.run(state, to, query);
    if (auto* res = std::get_if<Response>(&outcome)) return std::move(*res);
    throw std::runtime_error("a window cannot be merged");  // refused before: cannot happen
  } catch (...) {
    return failure_response(to);
  }
}

Outcome dispatch(RouteState& state, const Request& req, ReplyTo& to) {
  const Target target = split_target(req.target());
  const std::string& prefix = state.config.prefix;
  std::string_view rest = alias_of(state.config, target.path);
  if (rest.empty()) {
    if (!target.path.starts_with(prefix))  // Handler::accepts let it through: cannot happen
      throw RequestError(Status::not_found, "not under " + prefix);
    rest = std::string_view(target.path).substr(prefix.size());
  }
  // The dashboard's page and files hold no data: a link from elsewhere may open them.
  const bool page_or_file = rest.empty() || rest == "/" || rest.starts_with("/static/") ||
                            (rest.size() > 1 && web::find_asset(rest.substr(1)) != nullptr);
  if (auto refused = check_request_policy(req, state.config, page_or_file, to)) return std::move(*refused);
  if (rest.empty()) {  // "/debug/memory": the dashboard's relative links need the slash
    Response res = make_error(to, Status::permanent_redirect, "see " + prefix + "/");
    res.set(bh::field::location,
            prefix + "/" + (target.query.empty() ? "" : "?") + std::string(target.query));
    return res;
  }
  if (auto file = static_file(req, to, rest)) return std::move(*file);

  const Route* match = nullptr;
  std::string allow;
  for (const Route& route : kRoutes) {
    if (route.path != rest) continue;
    allow += (allow.empty() ? "" : ", ") + std::string(bh::to_string(route.method));
    if (route.method == req.method()) match = &route;
  }
  if (allow.empty())
    throw RequestError(Status::not_found,
                       "no route " + excerpt(target.path) + "; see GET " + prefix + "/ for the list");
  if (match == nullptr) return method_not_allowed(req, to, allow);
  if (rest != "/")  // the index holds no data: the dashboard must load to ask for a token
    if (auto denied = check_bearer(req, state.config.token, to)) return std::move(*denied);
  const Query query = parse_query(target.query, match->params | kPid);  // every route takes pid=
  if (query.format) to.format = *query.format;
  const auto here = [&](const std::string& other_target) {
    return run_here(state, req, *match, other_target);
  };
  if (auto other = answer_for_pid(state, req, to, rest, query, here)) return std::move(*other);
  return match->run(state, to, query);
}

}  // namespace

std::string_view alias_of(const Config& config, std::string_view path) noexcept {
  if (!config.pprof_prefix.empty() && path.starts_with(config.pprof_prefix)) {
    const std::string_view rest = path.substr(config.pprof_prefix.size());
    if (rest == "/heap") return "/pprof/heap";
    if (rest == "/allocs") return "/pprof/allocs";
  }
  if (!config.metrics_path.empty() && path == config.metrics_path) return "/metrics";
  return {};
}

bool is_cheap_request(const Config& config, const Request& req) noexcept {
  if (req.method() != bh::verb::get) return false;
  Target target;
  try {
    target = split_target(req.target());
  } catch (...) {  // a malformed target: the worker answers it with its 400
    return false;
  }
  if (target.query.find("pid=") != std::string_view::npos) return false;  // another process
  if (!target.path.starts_with(config.prefix)) return false;
  const std::string_view rest = std::string_view(target.path).substr(config.prefix.size());
  return rest.empty() || rest == "/" || rest == "/stats" || rest.starts_with("/static/");
}

Outcome answer(RouteState& state, const Request& req) {
  ReplyTo to = reply_to(req);
  to.max_report_bytes = state.config.max_report_bytes;
  Outcome outcome = [&]() -> Outcome {
    try {
      return dispatch(state, req, to);
    } catch (...) {
      return failure_response(to);
    }
  }();
  // No route answers HEAD (a 405), and an answer to HEAD must not carry a body.
  if (auto* res = std::get_if<Response>(&outcome); res && req.method() == Verb::head) {
    res->body().clear();
    res->prepare_payload();
  }
  return outcome;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
