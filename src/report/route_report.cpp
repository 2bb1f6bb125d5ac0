// The /routes value: per-request figures, merging by route, JSON and text.
#include "liveheap/route_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "liveheap/format.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using nlohmann::json;

double per(double total, std::uint64_t requests) {
  return requests == 0 ? 0.0 : total / static_cast<double>(requests);
}

template <typename T>
T route_field(const json& j, const char* name, std::size_t i) {
  const std::string at = "routes[" + std::to_string(i) + "]." + name;
  if (!j.contains(name)) throw std::invalid_argument("routes JSON: " + at + " is missing");
  try {
    return j.at(name).get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument("routes JSON: " + at + " has the wrong type");
  }
}

}  // namespace

void finish(RouteReport& report) {
  for (RouteLine& line : report.routes) {
    line.allocated_per_request = per(static_cast<double>(line.allocated_bytes), line.requests);
    line.retained_per_request = per(static_cast<double>(line.retained_bytes), line.retained_requests);
  }
  std::sort(report.routes.begin(), report.routes.end(), [](const RouteLine& a, const RouteLine& b) {
    if (a.retained_bytes != b.retained_bytes) return a.retained_bytes > b.retained_bytes;
    return a.route < b.route;
  });
}

RouteReport merge(const std::vector<RouteReport>& reports) {
  RouteReport merged;
  std::map<std::string, std::size_t> index;
  std::vector<std::int64_t> verdict_bytes;  // the live bytes of the process whose verdict is kept
  for (const RouteReport& report : reports) {
    merged.since_baseline = merged.since_baseline || report.since_baseline;
    if (report.since_ms != 0 && (merged.since_ms == 0 || report.since_ms < merged.since_ms))
      merged.since_ms = report.since_ms;  // the oldest window's
    for (const RouteLine& line : report.routes) {
      const auto [it, added] = index.try_emplace(line.route, merged.routes.size());
      if (added) {
        merged.routes.push_back(line);
        verdict_bytes.push_back(line.live_bytes);
        continue;
      }
      RouteLine& into = merged.routes[it->second];
      into.requests += line.requests;
      into.live_bytes += line.live_bytes;
      into.live_blocks += line.live_blocks;
      into.allocated_bytes += line.allocated_bytes;
      into.retained_bytes += line.retained_bytes;
      into.retained_requests += line.retained_requests;
      if (line.live_bytes > verdict_bytes[it->second]) {
        verdict_bytes[it->second] = line.live_bytes;
        into.verdict = line.verdict;
      }
    }
  }
  finish(merged);
  return merged;
}

std::string to_json(const RouteReport& report) {
  json routes = json::array();
  for (const RouteLine& l : report.routes)
    routes.push_back({{"route", l.route},
                      {"requests", l.requests},
                      {"live_bytes", l.live_bytes},
                      {"live_blocks", l.live_blocks},
                      {"allocated_bytes", l.allocated_bytes},
                      {"allocated_per_request", l.allocated_per_request},
                      {"retained_per_request", l.retained_per_request},
                      {"retained_bytes", l.retained_bytes},
                      {"retained_requests", l.retained_requests},
                      {"verdict", l.verdict}});
  json j = {{"routes", routes},
            {"since", report.since_baseline  ? "the baseline"
                      : report.since_ms != 0 ? "the history window"
                                             : "start-up"}};
  if (!report.since_baseline && report.since_ms != 0) j["since_ms"] = report.since_ms;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

RouteReport route_report_from_json(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("routes JSON: not a JSON object");
  if (!j.contains("routes") || !j["routes"].is_array())
    throw std::invalid_argument("routes JSON: routes is missing or not an array");
  RouteReport report;
  report.since_baseline = j.value("since", "") == "the baseline";
  if (!report.since_baseline && j.contains("since_ms")) {
    if (!j["since_ms"].is_number_integer())
      throw std::invalid_argument("routes JSON: since_ms has the wrong type");
    report.since_ms = j["since_ms"].get<std::int64_t>();
  }
  for (std::size_t i = 0; i < j["routes"].size(); ++i) {
    const json& r = j["routes"][i];
    RouteLine l;
    l.route = route_field<std::string>(r, "route", i);
    l.requests = route_field<std::uint64_t>(r, "requests", i);
    l.live_bytes = route_field<std::int64_t>(r, "live_bytes", i);
    l.live_blocks = route_field<std::int64_t>(r, "live_blocks", i);
    l.allocated_bytes = route_field<std::int64_t>(r, "allocated_bytes", i);
    l.allocated_per_request = route_field<double>(r, "allocated_per_request", i);
    l.retained_per_request = route_field<double>(r, "retained_per_request", i);
    l.retained_bytes = route_field<std::int64_t>(r, "retained_bytes", i);
    l.retained_requests = route_field<std::uint64_t>(r, "retained_requests", i);
    l.verdict = route_field<std::string>(r, "verdict", i);
    report.routes.push_back(std::move(l));
  }
  return report;
}

std::string to_text(const RouteReport& report) {
  std::string out;
  for (const RouteLine& l : report.routes) {
    char size[64];
    const double retained = l.retained_per_request;
    // Three significant figures: "6.19 MiB" (format_size keeps one decimal).
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = retained;
    int u = 0;
    while (std::abs(v) >= 1024 && u < 4) v /= 1024, ++u;
    std::snprintf(size, sizeof size,
                  u == 0              ? "%.0f %s"
                  : std::abs(v) < 10  ? "%.2f %s"
                  : std::abs(v) < 100 ? "%.1f %s"
                                      : "%.0f %s",
                  v, units[u]);
    out += l.route + ": requests=" + std::to_string(l.requests) + ", retained " + size + "/request, live " +
           format_size(static_cast<double>(l.live_bytes), false) + " [" + l.verdict + "]\n";
  }
  if (out.empty()) out = "no requests yet (tag them: liveheap::RequestScope, liveheap_request_begin)\n";
  return out;
}

LIVEHEAP_NAMESPACE_END
