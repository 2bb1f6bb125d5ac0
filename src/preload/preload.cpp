// LD_PRELOAD entry point: configures tracking from LIVEHEAP_* variables before main
// (sampled by default: cheap enough to leave on) and,
// with LIVEHEAP_ADDR=[host:]port, starts the process's endpoint (endpoint.hpp): the port
// when it is free, a socket in the private registry always. A bad value is
// reported once on stderr and tracking stays off: the host program always runs on.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "endpoint.hpp"
#include "liveheap/http.hpp"
#include "liveheap/tracker.hpp"

namespace {

struct Address {
  std::string host = "127.0.0.1";
  unsigned short port = 0;
};

// "port", ":port" or "host:port"; the host defaults to loopback.
Address parse_address(std::string_view text) {
  Address address;
  std::string_view port = text;
  if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    if (colon > 0) address.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
    throw std::invalid_argument("LIVEHEAP_ADDR='" + std::string(text) +
                                "' is not [host:]port with a port from 0 to 65535");
  address.port = static_cast<unsigned short>(value);
  return address;
}

void start_tracking() {
  try {
    if (const auto options = liveheap::options_from_environment(liveheap::Mode::sampled))
      liveheap::start(*options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "liveheap: %s; tracking stays off\n", e.what());
  }
}

void start_admin_server() {
  const char* addr = std::getenv("LIVEHEAP_ADDR");
  if (addr == nullptr) return;
  try {
    liveheap::IgnoreScope ignore;
    const Address address = parse_address(addr);
    liveheap::http::Config config;
    if (const char* token = std::getenv("LIVEHEAP_TOKEN")) config.token = token;
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
