// Where the admin server may listen: a non-loopback address without a token is refused
// unless the user opted in (Config::allow_open_without_token).
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <boost/asio/ip/address.hpp>

#include "liveheap/http.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// Throws std::runtime_error naming host:port, the token and the opt-in when `config`
// may not serve `address`.
void check_listen_policy(const Config& config, const boost::asio::ip::address& address,
                         const std::string& host, std::uint16_t port);

// How a browser writes `host` in a Host header: an IPv6 address in brackets.
std::string host_header_name(const std::string& host);

}  // namespace http
LIVEHEAP_NAMESPACE_END
