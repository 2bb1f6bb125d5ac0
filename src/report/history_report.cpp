// The GET /history value: made from a History, JSON (held to a byte budget), strict
// reading, text.
#include "liveheap/history_report.hpp"

#include <algorithm>
#include <climits>

#include "liveheap/format.hpp"
#include "liveheap/stats_report.hpp"
#include "report_lines.hpp"
#include "strict_json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using namespace report;

bool with_traceback(const ReportRequest& request) {
  return request.key == KeyType::traceback || request.traceback;
}

json samples_json(const std::vector<HistoryReport::Sample>& samples) {
  json out = json::array();
  for (const HistoryReport::Sample& s : samples) out.push_back({s.t_ms, s.bytes, s.blocks});
  return out;
}

json point_json(const HistoryReport::Point& point) {
  const HistoryPoint& p = point.at;
  json allocator = json::object();
  for (const auto& [name, bytes] : p.allocator) allocator[name] = bytes;
  json route_requests = json::object();
  for (const auto& [route, requests] : p.route_requests) route_requests[route] = requests;
  return {{"t_ms", p.t_ms},
          {"traced", p.traced},
          {"peak", p.peak},
          {"rss", p.rss},
          {"allocator", std::move(allocator)},
          {"route_requests", std::move(route_requests)},
          {"stacks_dropped", p.stacks_dropped},
          {"bytes_dropped", p.bytes_dropped},
          {"allocated", p.allocated},
          {"allocations", p.allocations},
          {"idle", point.idle}};
}

json line_json(const HistoryReport::Line& line, const ReportRequest& request) {
  json j = report::line_json(line.stat, false, with_traceback(request));
  j["series"] = samples_json(line.series);
  j["allocated_series"] = samples_json(line.allocated_series);
  return j;
}

std::vector<HistoryReport::Sample> samples_from(const json& j, const std::string& path,
                                                std::string_view name) {
  std::vector<HistoryReport::Sample> out;
  const json& list = array(j, path, name);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = join(path, name) + "[" + std::to_string(i) + "]";
    const json& v = list[i];
    expect(v.is_array() && v.size() == 3 &&
               std::all_of(v.begin(), v.end(), [](const json& n) { return n.is_number_integer(); }),
           v, at, "an array of three integers");
    out.push_back({v[0].get<std::int64_t>(), v[1].get<std::int64_t>(), v[2].get<std::int64_t>()});
  }
  return out;
}

HistoryReport::Point point_from(const json& j, const std::string& at, const std::string& allocator_name) {
  expect_object(j, at);
  HistoryReport::Point point;
  HistoryPoint& p = point.at;
  p.t_ms = integer(j, at, "t_ms");
  p.traced = integer(j, at, "traced");
  p.peak = integer(j, at, "peak");
  p.rss = integer(j, at, "rss");
  const json& figures = object(j, at, "allocator");
  for (const auto& [name, value] : figures.items())
    p.allocator.emplace_back(name, integer(figures, join(at, "allocator"), name));
  order_figures(allocator_name, p.allocator);
  // By route name, as the recorder keeps them; absent from an older server's points.
  if (j.contains("route_requests")) {
    const json& routes = object(j, at, "route_requests");
    for (const auto& [route, value] : routes.items())
      p.route_requests.emplace_back(route, whole(routes, join(at, "route_requests"), route));
  }
  p.stacks_dropped = integer(j, at, "stacks_dropped");
  p.bytes_dropped = integer(j, at, "bytes_dropped");
  p.allocated = integer(j, at, "allocated");
  p.allocations = integer(j, at, "allocations");
  point.idle = boolean(j, at, "idle");
  return point;
}

HistoryReport read_history(const json& j) {
  HistoryReport r;
  r.interval_s = number(j, "", "interval_s");
  r.allocator = text(j, "", "allocator");
  r.max_points = whole(j, "", "max_points", SIZE_MAX);
  r.points_dropped = whole(j, "", "points_dropped");
  r.stacks_per_point = whole(j, "", "stacks_per_point", SIZE_MAX);
  ReportRequest& request = r.request;
  request.key = word(j, "", "key", [](const std::string& v) { return parse_key_type(v); });
  request.limit = whole(j, "", "limit", SIZE_MAX);
  request.include = strings(j, "", "include");
  request.exclude = strings(j, "", "exclude");
  r.keys = whole(j, "", "keys", SIZE_MAX);
  const json& points = array(j, "", "points");
  for (std::size_t i = 0; i < points.size(); ++i)
    r.points.push_back(point_from(points[i], "points[" + std::to_string(i) + "]", r.allocator));
  const json& stats = array(j, "", "stats");
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const std::string at = "stats[" + std::to_string(i) + "]";
    HistoryReport::Line line{line_from(stats[i], at, request.key, false),
                             samples_from(stats[i], at, "series"),
                             samples_from(stats[i], at, "allocated_series")};
    r.lines.push_back(std::move(line));
  }
  // traceback=1 is not a field: it is whether the lines carried their stacks.
  request.traceback = request.key != KeyType::traceback && !r.lines.empty() && r.lines.front().stat.traceback;
  for (std::size_t i = 0; i < r.lines.size(); ++i) {
    ReportLine& stat = r.lines[i].stat;
    if (request.key != KeyType::traceback && stat.traceback.has_value() != request.traceback)
      fail("stats[" + std::to_string(i) + "].traceback",
           request.traceback ? "is missing (stats[0] has one)" : "is there (stats[0] has none)");
    if (!stat.traceback) stat.traceback = Traceback{stat.frame};
  }
  r.truncated = boolean(j, "", "truncated");
  return r;
}

}  // namespace

HistoryReport make_history_report(const History& history, const ReportRequest& request,
                                  std::string allocator) {
  HistoryIndex index(history, request.key, request.cumulative, filters_of(request));
  HistoryReport r;
  r.interval_s = history.interval_s;
  r.allocator = std::move(allocator);
  r.max_points = history.max_points;
  r.points_dropped = history.points_dropped;
  r.stacks_per_point = history.stacks_per_point;
  r.request = request;
  const std::vector<bool> idle = idle_points(history);
  for (std::size_t i = 0; i < history.points.size(); ++i) r.points.push_back({history.points[i], idle[i]});
  const std::vector<std::int64_t> times = point_times(history);
  const std::vector<KeySeries>& all = index.all();
  r.keys = all.size();
  const std::size_t shown = std::min(all.size(), request.limit);
  const auto last = [](const std::vector<std::int64_t>& v) { return v.empty() ? 0 : v.back(); };
  for (std::size_t i = 0; i < shown; ++i) {
    const KeySeries& s = all[i];
    HistoryReport::Line line{line_of(s.key, request.key, last(s.sizes), last(s.counts)), {}, {}};
    line.stat.verdict = classify(history, s);
    for (std::size_t p = 0; p < times.size(); ++p) {
      line.series.push_back({times[p], s.sizes[p], s.counts[p]});
      line.allocated_series.push_back({times[p], s.allocated[p], s.allocations[p]});
    }
    r.lines.push_back(std::move(line));
  }
  return r;
}

std::string to_json(const HistoryReport& r, std::size_t max_bytes) {
  json points = json::array();
  for (const HistoryReport::Point& point : r.points) points.push_back(point_json(point));
  json stats = json::array();
  std::size_t stats_bytes = 0;
  bool truncated = r.truncated;
  for (const HistoryReport::Line& line : r.lines) {
    json stat = line_json(line, r.request);
    // Each series is a few KB: 10,000 keys (with their stacks) would be hundreds of MB.
    const std::size_t stat_bytes = dump(stat).size() + 1;
    if (stats_bytes + stat_bytes > max_bytes) {
      truncated = true;
      break;
    }
    stats_bytes += stat_bytes;
    stats.push_back(std::move(stat));
  }
  return dump({{"interval_s", r.interval_s},
               {"allocator", r.allocator},
               {"max_points", r.max_points},
               {"points_dropped", r.points_dropped},
               {"stacks_per_point", r.stacks_per_point},
               {"key", to_string(r.request.key)},
               {"limit", r.request.limit},
               {"include", r.request.include},
               {"exclude", r.request.exclude},
               {"keys", r.keys},
               {"points", std::move(points)},
               {"stats", std::move(stats)},
               {"truncated", truncated}});
}

HistoryReport history_report_from_json(std::string_view text) {
  return read_strictly("history JSON", text, read_history);
}

std::string to_text(const HistoryReport& r, std::size_t max_bytes) {
  const auto size = [](std::int64_t bytes) { return format_size(static_cast<double>(bytes), false); };
  std::string text = "History: " + std::to_string(r.points.size()) + " points every " +
                     std::to_string(static_cast<unsigned>(r.interval_s)) + " s";
  if (!r.points.empty()) {
    const HistoryPoint& p = r.points.back().at;
    text += " over " + std::to_string((p.t_ms - r.points.front().at.t_ms) / 1000) +
            " s; last: traced=" + size(p.traced) + ", peak=" + size(p.peak) + ", rss=" + size(p.rss);
  }
  const std::size_t shown = r.lines.size();
  text += "\nTop " + std::to_string(shown) + " of " + std::to_string(r.keys) + " " +
          std::string(to_string(r.request.key)) + "s by size now:\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const ReportLine& stat = r.lines[i].stat;
    const std::string row = to_text(stat, false) + verdict_text(stat.verdict.value_or(Verdict{})) + "\n";
    if (text.size() + row.size() > max_bytes) {  // as the reports' text says it
      text += "(truncated at " + format_size(static_cast<double>(max_bytes), false) + ": " +
              std::to_string(i) + " of " + std::to_string(shown) +
              " rows shown; ask for a smaller limit= or narrow with include=)\n";
      break;
    }
    text += row;
  }
  return text;
}

LIVEHEAP_NAMESPACE_END
