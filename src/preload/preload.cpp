// LD_PRELOAD entry point: configures tracking from LIVEHEAP_* variables before main
// (sampled by default: cheap enough to leave on) and,
// with LIVEHEAP_ADDR=[host:]port, starts the process's endpoint (endpoint.hpp): the port
// when it is free, a socket in the private registry always. A bad value is
// reported once on stderr and tracking stays off: the host program always runs on.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "endpoint.hpp"
#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"

namespace {

// LIVEHEAP_ALLOW_OPEN: "1" opts in to a non-loopback address without a token.
bool allow_open() {
  const char* value = std::getenv("LIVEHEAP_ALLOW_OPEN");
  if (value == nullptr || std::string_view(value) == "0") return false;
  if (std::string_view(value) == "1") return true;
  throw std::invalid_argument("LIVEHEAP_ALLOW_OPEN='" + std::string(value) + "' is not 0 or 1");
}

void start_tracking() {
  try {
    if (auto options = liveheap::options_from_environment(liveheap::Mode::sampled)) {
      // The endpoint starts the recorders once the process has lived a moment; without
      // LIVEHEAP_ADDR nothing could read them, and they never start.
      options->defer_recorders = true;
      liveheap::start(*options);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "liveheap: %s; tracking stays off\n", e.what());
  }
}

void start_admin_server() {
  const char* addr = std::getenv("LIVEHEAP_ADDR");
  if (addr == nullptr) return;
  try {
    liveheap::IgnoreScope ignore;
    const auto address = liveheap::http::parse_listen_address(addr);
    liveheap::http::Config config;
    if (const char* token = std::getenv("LIVEHEAP_TOKEN")) {
      if (*token == '\0') throw std::invalid_argument("LIVEHEAP_TOKEN is empty");
      config.token = token;
    }
    config.allow_open_without_token = allow_open();
    if (const char* hosts = std::getenv("LIVEHEAP_ALLOWED_HOSTS"))
      config.allowed_hosts = liveheap::http::parse_allowed_hosts(hosts);
    if (const char* prefix = std::getenv("LIVEHEAP_PREFIX")) config.prefix = prefix;
    liveheap::http::start_process_endpoint(config, address.host, address.port);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "liveheap: admin server not started: %s\n", e.what());
  }
}

[[gnu::constructor]] void liveheap_preload_init() {
  start_tracking();
  start_admin_server();
}

}  // namespace
