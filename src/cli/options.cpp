// Parses liveheap-watch's command line strictly: a bad value is an error that names it.
#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "liveheap/settings.hpp"
#include "liveheap/snapshot.hpp"

namespace liveheap::cli {
namespace {

constexpr std::string_view kUsage =
    "Usage: liveheap-watch [options]\n"
    "Polls a server's liveheap /diff every interval and prints what grew since the baseline,\n"
    "each line with the server's verdict on its trend (growing, plateaued, stable, shrinking,\n"
    "or unknown while the server's history is short).\n"
    "\n"
    "  --url URL          the liveheap routes (default http://127.0.0.1:8080/debug/memory)\n"
    "  --host H --port P --prefix /path   the same, part by part (override --url)\n"
    "  --interval SECONDS between rounds, and before the first (default 5; 0 allowed)\n"
    "  --rounds N         stop after N rounds (default: until interrupted)\n"
    "  --key K            line|file|function|traceback|route (default line)\n"
    "  --limit N          lines per round, 1..10000 (default 10)\n"
    "  --include GLOB     only these files (repeatable; function:GLOB for functions)\n"
    "  --exclude GLOB     not these files (repeatable)\n"
    "  --token T          bearer token (default: $LIVEHEAP_TOKEN)\n"
    "  --json             one JSON object per round (JSON lines), for scripts\n"
    "  --baseline         POST /baseline first, so growth counts from now\n"
    "  --fail-over BYTES  exit 1 as soon as total growth exceeds BYTES (e.g. 10MiB)\n"
    "  --fail-on-growing BYTES\n"
    "                     exit 1 as soon as a printed callsite the server calls growing has grown\n"
    "                     by more than BYTES since the baseline (its size_diff; e.g. 10MiB)\n"
    "  --timeout SECONDS  per request (default 30)\n"
    "  --pid N|all|port   ask process N of a prefork server or wrapper, all of them merged, or\n"
    "                     the one holding the port (sent as pid= on every request; default: all,\n"
    "                     merged, when the program has more than one process; GET /processes\n"
    "                     lists them)\n"
    "  --help\n"
    "\n"
    "Options take their value as the next argument or after '=' (--limit=20).\n"
    "Exit status: 0 done, 1 growth over --fail-over or --fail-on-growing, 2 bad usage or an\n"
    "unreachable or misbehaving server.\n";

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// The whole of `text` as an unsigned number in [min, max], else a UsageError naming `what`.
std::uint64_t parse_unsigned(std::string_view text, std::string_view what, std::uint64_t min,
                             std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max)
    throw UsageError(std::string(what) + " must be a whole number in " + std::to_string(min) + ".." +
                     std::to_string(max) + ", not '" + std::string(text) + "'");
  return value;
}

// A non-negative decimal number of seconds ("5", "0.5"), at most a day.
std::chrono::milliseconds parse_seconds(std::string_view text, std::string_view what) {
  double seconds = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !(seconds >= 0) || seconds > 86400)
    throw UsageError(std::string(what) + " must be seconds in 0..86400, not '" + std::string(text) + "'");
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

// A key /diff takes; checked here so that a typo is a usage error, not a server's 400.
std::string parse_key(std::string_view value) {
  try {
    parse_key_type(value);
  } catch (const std::invalid_argument&) {
    throw UsageError("--key must be " + key_type_names() + ", not '" + std::string(value) + "'");
  }
  return std::string(value);
}

// A process id the server's pid= takes (settings::kPid: 1..4194304, the kernel's limit), "all"
// or "port".
std::string parse_pid(std::string_view value) {
  if (value == "all" || value == "port") return std::string(value);
  return std::to_string(
      parse_unsigned(value, "--pid (a process id, all or port)", settings::kPid.min, settings::kPid.max));
}

}  // namespace

std::string Endpoint::authority() const { return host + ":" + std::to_string(port); }

std::string Endpoint::url() const { return "http://" + authority() + prefix; }

std::string_view usage() { return kUsage; }

std::int64_t parse_size(std::string_view text) {
  const std::string_view trimmed = trim(text);
  double number = -1;
  const auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), number);
  const std::string unit = lower(trim({end, trimmed.data() + trimmed.size()}));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  const double bytes = number * scale;
  if (ec != std::errc() || scale == 0 || !(number >= 0) || bytes > 1e18)
    throw UsageError(
        "a size is bytes with an optional unit B, KiB, MiB or GiB "
        "(e.g. 1048576, 512KiB, 1.5MiB), not '" +
        std::string(text) + "'");
  return static_cast<std::int64_t>(std::llround(bytes));
}

Endpoint parse_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme))
    throw UsageError("--url must start with http:// (https is not supported), not '" + std::string(url) +
                     "'");
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos)
    throw UsageError("--url takes no query or fragment: '" + std::string(url) + "'");
  const auto slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  Endpoint endpoint;
  endpoint.prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (endpoint.prefix.ends_with('/')) endpoint.prefix.pop_back();
  // An IPv6 literal is bracketed: [::1]:8080.
  const auto bracket = authority.rfind(']');
  const auto colon = authority.rfind(':');
  const bool has_port =
      colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
  std::string_view host = has_port ? authority.substr(0, colon) : authority;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) throw UsageError("--url has no host: '" + std::string(url) + "'");
  endpoint.host = std::string(host);
  endpoint.port = has_port ? static_cast<std::uint16_t>(
                                 parse_unsigned(authority.substr(colon + 1), "the port of --url", 1, 65535))
                           : 80;
  return endpoint;
}

std::optional<WatchOptions> parse_command_line(int argc, const char* const argv[],
                                               const char* token_from_env) {
  WatchOptions options;
  if (token_from_env != nullptr) options.token = token_from_env;
  std::optional<std::string> host, prefix;
  std::optional<std::uint16_t> port;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::nullopt;
    if (flag == "--json") {
      options.json = true;
      continue;
    }
    if (flag == "--baseline") {
      options.baseline = true;
      continue;
    }
    if (!flag.starts_with("--")) throw UsageError("unexpected argument '" + std::string(flag) + "'");
    // "--flag=value", as many tools take it: the value is the rest, even when empty.
    std::optional<std::string_view> inline_value;
    if (const auto eq = flag.find('='); eq != std::string_view::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      if (flag == "--json" || flag == "--baseline" || flag == "--help")
        throw UsageError(std::string(flag) + " takes no value");
    }
    if (!inline_value && i + 1 >= argc) throw UsageError(std::string(flag) + " needs a value");
    const std::string_view value = inline_value ? *inline_value : std::string_view(argv[++i]);
    if (flag == "--url") {
      options.endpoint = parse_url(value);
    } else if (flag == "--host") {
      host = std::string(value);
    } else if (flag == "--port") {
      port = static_cast<std::uint16_t>(parse_unsigned(value, flag, 1, 65535));
    } else if (flag == "--prefix") {
      prefix = std::string(value);
    } else if (flag == "--interval") {
      options.interval = parse_seconds(value, flag);
    } else if (flag == "--timeout") {
      options.timeout = parse_seconds(value, flag);
    } else if (flag == "--rounds") {
      options.rounds = parse_unsigned(value, flag, 1, UINT32_MAX);
    } else if (flag == "--limit") {
      options.limit =
          static_cast<unsigned>(parse_unsigned(value, flag, settings::kLimit.min, settings::kLimit.max));
    } else if (flag == "--include") {
      options.include.emplace_back(value);
    } else if (flag == "--exclude") {
      options.exclude.emplace_back(value);
    } else if (flag == "--token") {
      options.token = std::string(value);
    } else if (flag == "--fail-over") {
      options.fail_over = parse_size(value);
    } else if (flag == "--fail-on-growing") {
      try {
        options.fail_on_growing = parse_size(value);
      } catch (const UsageError& e) {
        throw UsageError("--fail-on-growing: " + std::string(e.what()));
      }
    } else if (flag == "--pid") {
      options.pid = parse_pid(value);
    } else if (flag == "--key") {
      options.key = parse_key(value);
    } else {
      throw UsageError("unknown option " + std::string(flag));
    }
  }
  if (host) options.endpoint.host = *host;
  if (port) options.endpoint.port = *port;
  if (prefix) {
    if (!prefix->empty() && !prefix->starts_with('/'))
      throw UsageError("--prefix must start with '/', not '" + *prefix + "'");
    options.endpoint.prefix = *prefix;
    while (options.endpoint.prefix.ends_with('/')) options.endpoint.prefix.pop_back();
  }
  if (options.timeout.count() == 0) throw UsageError("--timeout must be more than 0");
  return options;
}

}  // namespace liveheap::cli
