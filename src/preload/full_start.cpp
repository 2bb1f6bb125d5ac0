// The full library's two ways in (libliveheap_preload_full.so, loaded by the preload
// library, boot/full_library.hpp). At start, when a variable needs it (preload.cpp):
// configures tracking from LIVEHEAP_* variables before main (sampled by default: cheap
// enough to leave on) and, with LIVEHEAP_ADDR=[host:]port, starts the process's endpoint
// (endpoint.hpp): the port when it is free, a socket in the private registry always. Every
// variable is checked at start: a bad value is reported once on stderr, naming the
// variable, and tracking (or, for the endpoint's variables, the endpoint) stays off: the
// host program always runs on. Later, when the early endpoint first needs it
// (boot/early_endpoint.hpp): takes up the session the preload library started and the
// endpoint's sockets. Variables are read from the copy made at start
// (boot/start_environment.hpp): the second way runs beside the host's threads.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "auth.hpp"
#include "early_endpoint.hpp"
#include "endpoint.hpp"
#include "exports.hpp"
#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"
#include "preloaded_session.hpp"
#include "request_policy.hpp"
#include "routes.hpp"
#include "start_environment.hpp"

namespace {

using liveheap::boot::start_env;

// LIVEHEAP_ALLOW_OPEN: "1" opts in to a non-loopback address without a token.
bool allow_open() {
  const char* value = start_env("LIVEHEAP_ALLOW_OPEN");
  if (value == nullptr || std::string_view(value) == "0") return false;
  if (std::string_view(value) == "1") return true;
  throw std::invalid_argument("LIVEHEAP_ALLOW_OPEN='" + std::string(value) + "' is not 0 or 1");
}

// Tracking as the variables say; `engine_started`: the preload library started the
// engine's session with them already.
void start_tracking(bool engine_started = false) {
  try {
    if (auto options = liveheap::tracker::options_from(liveheap::Mode::sampled, start_env)) {
      // The endpoint starts the recorders once the process has lived a moment; without
      // LIVEHEAP_ADDR nothing could read them, and they never start.
      options->defer_recorders = true;
      if (engine_started) liveheap::tracker::adopt_engine_session(*options);
      else liveheap::start(*options);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "liveheap: %s; tracking stays off\n", e.what());
  }
}

// The endpoint's variables, each checked now: a bad one is a configuration error that keeps
// the endpoint off (the program runs on), rather than a failure on every request later.
liveheap::http::Config endpoint_config() {
  namespace http = liveheap::http;
  http::Config config;
  if (const char* token = start_env("LIVEHEAP_TOKEN")) {
    if (*token == '\0') throw std::invalid_argument("LIVEHEAP_TOKEN is empty");
    if (auto problem = http::token_problem(token)) throw std::invalid_argument("LIVEHEAP_TOKEN " + *problem);
    config.token = token;
  }
  config.allow_open_without_token = allow_open();
  if (const char* hosts = start_env("LIVEHEAP_ALLOWED_HOSTS")) {
    config.allowed_hosts = http::parse_allowed_hosts(hosts);
    for (const std::string& host : config.allowed_hosts)
      if (auto problem = http::allowed_host_problem(host))
        throw std::invalid_argument("LIVEHEAP_ALLOWED_HOSTS: " + *problem);
  }
  if (const char* prefix = start_env("LIVEHEAP_PREFIX"))
    config.prefix = http::checked_prefix(prefix, "LIVEHEAP_PREFIX");
  // Read once here: a scrape then never meets a bad value.
  config.metrics_callsites = http::metrics_callsites(config, start_env("LIVEHEAP_METRICS_CALLSITES"));
  return config;
}

void start_admin_server() {
  const char* addr = start_env("LIVEHEAP_ADDR");
  if (addr == nullptr) return;
  try {
    liveheap::IgnoreScope ignore;
    const auto address = liveheap::http::parse_listen_address(addr);
    liveheap::http::start_process_endpoint(endpoint_config(), address.host, address.port);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "liveheap: admin server not started: %s\n", e.what());
  }
}

}  // namespace

// Called once, from the preload library's constructor, on the thread that loads the process.
extern "C" [[gnu::visibility("default")]] void liveheap_preload_full_start() {
  start_tracking();
  start_admin_server();
}

// Called once, on the early endpoint's thread (boot::kTakeOverFunction). The variables were
// read by the preload library with these parsers' ranges, and the endpoint's own settings
// are unset (else the full start would have run): nothing here can be a bad value.
extern "C" [[gnu::visibility("default")]] void liveheap_preload_take_over(
    liveheap::boot::EarlyEndpoint& early) {
  start_tracking(true);
  try {
    liveheap::IgnoreScope ignore;
    liveheap::http::take_over_process_endpoint(endpoint_config(), early);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "liveheap: admin server not started: %s\n", e.what());
  }
}
