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

bool is_ipv6_literal(std::string_view text) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(text), ec);
  return !ec && address.is_v6();
}

// The Host header names one of Config::allowed_hosts: by name, or by name and port.
bool is_allowed_host(std::string_view host, const Config& config) {
  for (const std::string& allowed : config.allowed_hosts)
    if (boost::beast::iequals(allowed, host) || boost::beast::iequals(allowed, host_name(host))) return true;
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
  return authority.ends_with(port) ? authority.substr(0, authority.size() - port.size()) : authority;
}

bool same_origin(std::string_view origin, std::string_view host) {
  std::string_view scheme;
  const std::string_view authority = origin_authority(origin, scheme);
  if (authority.empty()) return false;  // "null" (a sandboxed frame, a file:) or nonsense
  return boost::beast::iequals(without_default_port(authority, scheme), without_default_port(host, scheme));
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

std::optional<std::string> allowed_host_problem(std::string_view host) {
  const std::string_view name = host_name(host);
  std::string_view port = host.substr(name.size());
  bool good = !name.empty() && (port.empty() || (port.size() >= 2 && port.size() <= 6 && port[0] == ':'));
  if (good && !port.empty()) {
    port.remove_prefix(1);
    unsigned value = 0;
    for (const char c : port) {
      good = good && c >= '0' && c <= '9';
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    good = good && value <= 65535;
  }
  if (good && name.front() == '[') {
    good = name.size() > 2 && name.back() == ']' && is_ipv6_literal(name.substr(1, name.size() - 2));
  } else if (good) {
    for (const char c : name)
      good = good && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_');
  }
  if (good) return std::nullopt;
  return excerpt(host) +
         " is not a name a Host header could carry: write name, name:port, "
         "[v6] or [v6]:port, e.g. heap.internal or heap.internal:6060";
}

bool is_loopback_host(std::string_view host) {
  const std::string_view name = host_name(host);
  return boost::beast::iequals(name, "localhost") || is_loopback_address(name);
}

std::optional<Response> check_request_policy(const Request& req, const Config& config, bool page_or_file,
                                             const ReplyTo& to) {
  const std::string_view host = req[bh::field::host];
  if (config.token.empty() && !is_loopback_host(host) && !is_allowed_host(host, config))
    return forbidden(to, "Host " + excerpt(host) +
                             " is not served without a token: only localhost, 127.0.0.0/8, "
                             "[::1] and the bound address are; set LIVEHEAP_TOKEN, or add the "
                             "name to LIVEHEAP_ALLOWED_HOSTS (Config::allowed_hosts)");
  const std::string_view site = req["Sec-Fetch-Site"];
  if (req.method() != bh::verb::post) {
    // A page elsewhere can make a browser send a GET it may not read (an <img>, a no-cors
    // fetch): the report would still be built, in the host's memory, for nobody. So only
    // a top-level navigation (a link the user follows), the dashboard's page and its files
    // are served to other sites. same-site counts as other: on localhost and IP addresses
    // the site ignores the port, so it may be any other web app on this machine, and no
    // page of another origin can read these answers anyway (there is no CORS).
    const bool other_site = site == "cross-site" || site == "same-site";
    const bool navigation = req["Sec-Fetch-Mode"] == "navigate" && req["Sec-Fetch-Dest"] == "document";
    if (other_site && !navigation && !page_or_file)
      return forbidden(to, "a " + std::string(site) +
                               " request may not make liveheap build an "
                               "answer (Sec-Fetch-Site): a page elsewhere could not read it; open "
                               "the dashboard, or use curl or a script");
    return std::nullopt;
  }
  if (site == "cross-site" || site == "same-site")
    return forbidden(to, "a " + std::string(site) +
                             " request may not change liveheap's state "
                             "(Sec-Fetch-Site); send it from the dashboard or a script");
  const auto origin = req.find(bh::field::origin);
  if (origin != req.end() && !same_origin(origin->value(), host))
    return forbidden(to, "Origin " + excerpt(origin->value()) + " is not this server (" + excerpt(host) +
                             "): a page elsewhere may not change liveheap's "
                             "state; send it from the dashboard or a script");
  return std::nullopt;
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
