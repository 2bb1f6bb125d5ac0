// LIVEHEAP_ADDR's syntax, and which addresses may be served without a token.
#include "listen_address.hpp"

#include <charconv>
#include <cstdint>
#include <stdexcept>

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

[[noreturn]] void bad_address(std::string_view text) {
  throw std::invalid_argument("LIVEHEAP_ADDR='" + std::string(text) +
                              "' is not [host:]port with a port from 0 to 65535 (an IPv6 host "
                              "in brackets, e.g. [::1]:6060)");
}

}  // namespace

ListenAddress parse_listen_address(std::string_view text) {
  ListenAddress address;
  std::string_view port = text;
  if (text.starts_with('[')) {  // "[v6]:port"
    const auto close = text.find(']');
    if (close == std::string_view::npos || close == 1 || text.substr(close + 1, 1) != ":") bad_address(text);
    address.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    const std::string_view host = text.substr(0, colon);
    if (host.find(':') != std::string_view::npos) bad_address(text);  // v6 without brackets
    if (!host.empty()) address.host = std::string(host);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
    bad_address(text);
  address.port = static_cast<std::uint16_t>(value);
  return address;
}

void check_listen_policy(const Config& config, const boost::asio::ip::address& address,
                         const std::string& host, std::uint16_t port) {
  if (address.is_loopback() || !config.token.empty() || config.allow_open_without_token) return;
  throw std::runtime_error(
      "refusing to serve " + host_header_name(host) + ":" + std::to_string(port) +
      " without a token: anyone who can reach it could read the heap and stop tracing; set "
      "LIVEHEAP_TOKEN (Config::token), listen on 127.0.0.1, or opt in with "
      "LIVEHEAP_ALLOW_OPEN=1 (Config::allow_open_without_token)");
}

std::string host_header_name(const std::string& host) {
  return host.find(':') == std::string::npos ? host : "[" + host + "]";
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
