// Refusing what only a browser tricked by another site would send (see request_policy.hpp).
#include "request_policy.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "query.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

namespace bh = boost::beast::http;

// "name", "name:port", "[v6]" or "[v6]:port" -> the name ("[v6]" keeps its brackets).
std::string_view host_name(std::string_view host) {
  if (host.starts_with('[')) {
    const auto close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(0, close + 1);
  }
  return host.substr(0, host.find(':'));
}

bool is_loopback_address(std::string_view name) {
  if (name.starts_with('[') && name.ends_with(']')) name = name.substr(1, name.size() - 2);
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(name), ec);
  return !ec && address.is_loopback();
}

// The Host header names one of Config::allowed_hosts: by name, or by name and port.
bool is_allowed_host(std::string_view host, const Config& config) {
  for (const std::string& allowed : config.allowed_hosts)
    if (boost::beast::iequals(allowed, host) || boost::beast::iequals(allowed, host_name(host)))
      return true;
  return false;
}

// "http://host:port" -> "host:port", without the scheme's default port, as a Host header
// for the same server would be written by a browser.
std::string_view origin_authority(std::string_view origin, std::string_view& scheme) {
  const auto separator = origin.find("://");
  if (separator == std::string_view::npos) return {};
  scheme = origin.substr(0, separator);
  return origin.substr(separator + 3);
}

std::string_view without_default_port(std::string_view authority, std::string_view scheme) {
  const std::string_view port = scheme == "https" ? ":443" : ":80";
  return authority.ends_with(port) ? authority.substr(0, authority.size() - port.size())
                                   : authority;
}

bool same_origin(std::string_view origin, std::string_view host) {
  std::string_view scheme;
  const std::string_view authority = origin_authority(origin, scheme);
  if (authority.empty()) return false;  // "null" (a sandboxed frame, a file:) or nonsense
  return boost::beast::iequals(without_default_port(authority, scheme),
                               without_default_port(host, scheme));
}

Response forbidden(const ReplyTo& to, const std::string& reason) {
  return make_error(to, Status::forbidden, reason);
}

}  // namespace

std::vector<std::string> parse_allowed_hosts(std::string_view list) {
  std::vector<std::string> hosts;
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) hosts.emplace_back(item);
  }
  return hosts;
}

bool is_loopback_host(std::string_view host) {
  const std::string_view name = host_name(host);
  return boost::beast::iequals(name, "localhost") || is_loopback_address(name);
}

std::optional<Response> check_request_policy(const Request& req, const Config& config,
                                             const ReplyTo& to) {
  const std::string_view host = req[bh::field::host];
  if (config.token.empty() && !is_loopback_host(host) && !is_allowed_host(host, config))
    return forbidden(to, "Host " + excerpt(host) +
                             " is not served without a token: only localhost, 127.0.0.0/8, "
                             "[::1] and the bound address are; set LIVEHEAP_TOKEN, or add the "
                             "name to LIVEHEAP_ALLOWED_HOSTS (Config::allowed_hosts)");
  if (req.method() != bh::verb::post) return std::nullopt;
  const std::string_view site = req["Sec-Fetch-Site"];
  if (site == "cross-site" || site == "same-site")
    return forbidden(to, "a " + std::string(site) + " request may not change liveheap's state "
                         "(Sec-Fetch-Site); send it from the dashboard or a script");
  const auto origin = req.find(bh::field::origin);
  if (origin != req.end() && !same_origin(origin->value(), host))
    return forbidden(to, "Origin " + excerpt(origin->value()) + " is not this server (" +
                             excerpt(host) + "): a page elsewhere may not change liveheap's "
                             "state; send it from the dashboard or a script");
  return std::nullopt;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
