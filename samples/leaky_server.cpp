// A Boost.Beast HTTP server with liveheap mounted and one route per classic server-memory
// story (leak_stories.hpp), to watch liveheap find each one. Modelled on Beast's
// example/http/server/async (Boost 1.81: handle_request returns a message_generator).
//
//   leaky_server [--host 127.0.0.1] [--port 8080] [--mode exact|sampled] [--compare-every N]
//
// --port 0 picks a free port. Tracking: --mode, else LIVEHEAP_MODE (and LIVEHEAP_FRAMES,
// LIVEHEAP_SAMPLE_INTERVAL), else exact, so that the numbers are exact. The history records a
// point a second unless LIVEHEAP_HISTORY_INTERVAL says otherwise: the walkthrough's traffic
// lasts seconds, and its verdicts need the points of work in it. LIVEHEAP_TOKEN, when
// set, guards the /debug/memory routes. On start it prints the dashboard URL and a curl
// walkthrough; the first line is "leaky_server: listening on http://HOST:PORT/".
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>
#include <nlohmann/json.hpp>

#include "leak_stories.hpp"
#include "beast_session.hpp"
#include "liveheap/http.hpp"
#include "liveheap/request_comparison.hpp"
#include "liveheap/request_scope.hpp"
#include "liveheap/tracker.hpp"
#include "walkthrough.hpp"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;

//------------------------------------------------------------------------------

constexpr std::size_t kDefaultRows = 50'000;
constexpr std::size_t kDefaultScratchKiB = 256;
constexpr std::string_view kRoutes =
    "GET /client, GET /figure, GET /figure/async, GET /convert?rows=N, GET /cache?shape=WxH, "
    "GET /ok?kb=N, POST /release, and liveheap under /debug/memory/";

// A bad request: answered 400 (or `status`) with {"error": what()}.
struct BadRequest : std::invalid_argument {
  BadRequest(const std::string& what, http::status status = http::status::bad_request)
      : std::invalid_argument(what), status(status) {}
  http::status status;
};

// Returns a response with `status` and a JSON body.
http::message_generator json_response(const http::request<http::string_body>& req,
                                      http::status status, const json& body) {
  http::response<http::string_body> res{status, req.version()};
  res.set(http::field::server, BOOST_BEAST_VERSION_STRING);
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  // Replace, not throw on, bytes that are not UTF-8: an error may quote the request.
  res.body() = body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  res.prepare_payload();
  return res;
}

// The value of `name` in `query` ("a=1&b=2"), if present. Any other parameter is a
// BadRequest: a typo should not silently fall back to a default.
std::optional<std::string_view> only_param(std::string_view query, std::string_view name) {
  std::optional<std::string_view> value;
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    const auto equals = pair.find('=');
    if (name.empty() || pair.substr(0, equals) != name || equals == pair.npos || value) {
      const std::string takes = name.empty() ? "no parameters" : "only " + std::string(name) + "=";
      throw BadRequest("unexpected parameter '" + std::string(pair.substr(0, 40)) +
                       "' (this route takes " + takes + ")");
    }
    value = pair.substr(equals + 1);
  }
  return value;
}

// `text` as a whole number, else a BadRequest naming `name`.
std::size_t parse_count(std::string_view text, std::string_view name) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw BadRequest(std::string(name) + " must be a whole number, not '" +
                     std::string(text.substr(0, 40)) + "'");
  return value;
}

// What a story did, as the response body: the truth liveheap's diff is held to.
json story_json(std::string_view story, const leaky::StoryResult& result) {
  json body = {{"story", story},
               {"retained_bytes", result.kept.bytes},
               {"retained_blocks", result.kept.blocks},
               {"site_bytes", result.site.bytes},
               {"site_blocks", result.site.blocks},
               {"story_bytes", result.held.bytes},
               {"story_blocks", result.held.blocks}};
  if (story == "cache")
    body.update({{"hit", result.hit}, {"entries", result.entries},
                 {"capacity", leaky::kPlanCacheCapacity}});
  if (story == "ok") body["checksum"] = result.checksum;
  return body;
}

// One story's route: its method, the one parameter it may take, and what it runs.
struct StoryRoute {
  std::string_view path;  // "/figure"; the story's name without the '/'
  http::verb method;
  std::string_view param;  // "" when it takes none
  leaky::StoryResult (*run)(std::optional<std::string_view> param);
};

constexpr StoryRoute kStoryRoutes[] = {
    {"/client", http::verb::get, "", [](auto) { return leaky::create_api_client(); }},
    {"/figure", http::verb::get, "", [](auto) { return leaky::render_figure(); }},
    {"/convert", http::verb::get, "rows",
     [](auto rows) {
       return leaky::convert_result(rows ? parse_count(*rows, "rows") : kDefaultRows);
     }},
    {"/cache", http::verb::get, "shape",
     [](auto shape) {
       if (!shape) throw BadRequest("/cache needs ?shape=WxH, e.g. /cache?shape=640x480");
       return leaky::lookup_plan(*shape);
     }},
    {"/ok", http::verb::get, "kb",
     [](auto kb) {
       return leaky::well_behaved(kb ? parse_count(*kb, "kb") : kDefaultScratchKiB);
     }},
    {"/release", http::verb::post, "", [](auto) { return leaky::release_leaks(); }},
};

// Runs the story a request names; throws BadRequest.
json run_story(http::verb method, std::string_view path, std::string_view query) {
  for (const StoryRoute& route : kStoryRoutes) {
    if (route.path != path) continue;
    if (method != route.method)
      throw BadRequest(std::string(path) + " takes " + std::string(http::to_string(route.method)),
                       http::status::method_not_allowed);
    try {
      return story_json(path.substr(1), route.run(only_param(query, route.param)));
    } catch (const BadRequest&) {
      throw;
    } catch (const std::invalid_argument& e) {  // a story's own validation
      throw BadRequest(e.what());
    }
  }
  throw BadRequest("no route " + std::string(path.substr(0, 60)) + "; try " +
                       std::string(kRoutes),
                   http::status::not_found);
}

// The server's own routes: the stories, and an index at /.
http::message_generator sample::handle_request(http::request<http::string_body>&& req) {
  const std::string_view target = req.target();
  const auto question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query = question == target.npos ? "" : target.substr(question + 1);
  if (path == "/") return json_response(req, http::status::ok, {{"routes", kRoutes}});
  try {
    return json_response(req, http::status::ok, run_story(req.method(), path, query));
  } catch (const BadRequest& e) {
    return json_response(req, e.status, {{"error", e.what()}});
  }
}

// GET /figure/async: /figure rendered on a worker thread, as a handler that awaits work
// elsewhere. The request's route goes with the work as a continuation carries its context:
// a token taken on the I/O thread, re-entered on the worker.
bool render_elsewhere(net::thread_pool& workers, http::request<http::string_body>& req,
                      sample::Reply reply) {
  if (req.method() != http::verb::get || req.target() != "/figure/async") return false;
  auto request = std::make_shared<http::request<http::string_body>>(std::move(req));
  auto work = [token = liveheap::current_request(), request, reply = std::move(reply)]() mutable {
    std::optional<http::message_generator> res;
    {
      liveheap::RequestScope again(token);  // not counted again: the same request
      res.emplace(json_response(*request, http::status::ok, story_json("figure", leaky::render_figure())));
    }
    request.reset();  // the request's memory goes before its answer does
    reply(std::move(*res));  // handing the answer back is the server's, not the route's
  };
  // Outside the request while posting: Asio keeps its operations' memory for reuse.
  liveheap::RequestScope outside{liveheap::RequestToken{}};
  net::post(workers, std::move(work));
  return true;
}

//------------------------------------------------------------------------------

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: any free port
  std::optional<liveheap::Mode> mode;  // --mode; else the environment's, else exact
  unsigned compare_every = 0;          // 0: no per-request comparison
};

// Throws std::invalid_argument naming the bad argument.
ServerOptions parse_command_line(int argc, char* argv[]) {
  ServerOptions options;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
    const std::string_view value = argv[i + 1];
    // A number of `flag` in 0..max.
    const auto number = [&](std::size_t max) {
      const std::size_t n = parse_count(value, flag);
      if (n > max)
        throw std::invalid_argument(std::string(flag) + " must be at most " + std::to_string(max));
      return n;
    };
    if (flag == "--host") {
      options.host = value;
    } else if (flag == "--port") {
      options.port = static_cast<std::uint16_t>(number(65535));
    } else if (flag == "--mode") {
      options.mode = liveheap::parse_mode(value);
    } else if (flag == "--compare-every") {
      options.compare_every = static_cast<unsigned>(number(1'000'000));
    } else {
      throw std::invalid_argument("unknown option " + std::string(flag));
    }
  }
  return options;
}

// Starts tracking as asked; false (and says why) when it stays off.
bool start_tracking(const ServerOptions& options) {
  try {
    auto tracking = liveheap::options_from_environment(liveheap::Mode::exact);
    if (options.mode) {
      if (!tracking) tracking = liveheap::Options{};
      tracking->mode = *options.mode;
    }
    if (!tracking || tracking->mode == liveheap::Mode::off) return false;
    if (std::getenv("LIVEHEAP_HISTORY_INTERVAL") == nullptr) tracking->history_interval_s = 1;
    liveheap::start(*tracking);
    return true;
  } catch (const std::exception& e) {
    std::cerr << "leaky_server: liveheap: " << e.what() << "; tracking stays off\n";
    return false;
  }
}

int main(int argc, char* argv[]) {
  ServerOptions options;
  try {
    options = parse_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "leaky_server: " << e.what() << "\nUsage: leaky_server [--host 127.0.0.1] "
              << "[--port 8080] [--mode exact|sampled] [--compare-every N]\n";
    return EXIT_FAILURE;
  }
  const bool tracking = start_tracking(options);

  // The routes under /debug/memory; LIVEHEAP_TOKEN, when set, guards them.
  liveheap::http::Config config;
  if (const char* token = std::getenv("LIVEHEAP_TOKEN")) config.token = token;
  // --compare-every: the tracemalloc workflow of comparing with the first request, logged.
  if (options.compare_every > 0) {
    config.compare_requests = liveheap::http::ComparisonConfig{
        .every_n = options.compare_every,
        .log = [](std::string_view line) { std::cerr << line << std::endl; }};
  }

  // The io_context is required for all I/O; one thread is enough for this sample. It is
  // declared first so that it outlives the handler's pending responses (which hold sessions).
  net::io_context ioc{1};
  liveheap::http::Handler liveheap_handler(config);
  net::thread_pool workers(1);  // joined before the io_context goes: it posts replies there
  sample::handle_deferred = [&workers](http::request<http::string_body>& req, sample::Reply reply) {
    return render_elsewhere(workers, req, std::move(reply));
  };
  try {
    const tcp::endpoint endpoint{net::ip::make_address(options.host), options.port};
    auto server =
        std::make_shared<sample::listener>(ioc, endpoint, liveheap_handler);
    const liveheap::Mode mode = tracking ? liveheap::options().mode : liveheap::Mode::off;
    leaky::print_walkthrough(std::cout, options.host, server->port(), mode, !config.token.empty());
    server->run();
  } catch (const boost::system::system_error& e) {  // its what() names Asio's source line
    std::cerr << "leaky_server: cannot serve on " << options.host << ":" << options.port << ": "
              << e.code().message() << "\n";
    return EXIT_FAILURE;
  } catch (const std::exception& e) {
    std::cerr << "leaky_server: cannot serve on " << options.host << ":" << options.port << ": "
              << e.what() << "\n";
    return EXIT_FAILURE;
  }

  // Stop cleanly on SIGINT and SIGTERM.
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
  ioc.run();
  return EXIT_SUCCESS;
}
