// The report document as JSON, written (with a byte budget for its lines) and read back
// strictly: every field of the schema must be there with its type, or the error names it.
#include <climits>
#include <stdexcept>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "liveheap/report.hpp"
#include "report_lines.hpp"
#include "strict_json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using nlohmann::json;

bool shows_traceback(const Report& report, const ReportLine& line) {
  return line.traceback && (report.request.key == KeyType::traceback || report.request.traceback);
}

json line_json(const Report& report, const ReportLine& line) {
  return report::line_json(line, report.diff.has_value(), shows_traceback(report, line));
}

// Everything but the lines.
json head_json(const Report& report) {
  const ReportRequest& r = report.request;
  json j = {{"schema", kReportSchema},
            {"mode", to_string(report.mode)},
            {"sample_interval", report.sample_interval},
            {"max_frames", report.max_frames},
            {"taken_at_ms", report.taken_at_ms},
            {"key", to_string(r.key)},
            {"cumulative", r.cumulative},
            {"limit", r.limit},
            {"include", r.include},
            {"exclude", r.exclude},
            {"keys", report.keys},
            {"tracker_memory_cap", to_json(report.cap)}};
  if (!r.routes.empty()) j["route"] = r.routes;  // added later: written only when asked
  json total = {{"size", report.total.size}, {"count", report.total.count}};
  if (report.diff) {
    j["against"] = report.diff->against;
    j["old_taken_at_ms"] = report.diff->old_taken_at_ms;
    total["size_diff"] = report.total.size_diff;
    total["count_diff"] = report.total.count_diff;
  }
  j["total"] = std::move(total);
  if (report.pids) {
    j["pids"] = *report.pids;
    json failed = json::array();
    for (const ReportFailure& f : report.failed)
      failed.push_back({{"pid", f.pid}, {"status", f.status}, {"error", f.error}});
    j["failed"] = std::move(failed);
    json each = json::array();
    for (const Report::Process& p : report.processes) {
      json one = {{"pid", p.pid}, {"size", p.total.size}, {"count", p.total.count}};
      if (report.diff) {
        one["size_diff"] = p.total.size_diff;
        one["count_diff"] = p.total.count_diff;
        one["new"] = p.joined;
      }
      each.push_back(std::move(one));
    }
    j["processes"] = std::move(each);
  }
  if (report.group_processes) j["group"] = {{"processes", *report.group_processes}};
  return j;
}

// ---- reading ----

using namespace report;  // the strict readers: field, integer, whole, text, word, ...

}  // namespace

json to_json_value(const Report& report) {
  json j = head_json(report);
  j["truncated"] = report.truncated;
  json stats = json::array();
  for (const ReportLine& line : report.lines) stats.push_back(line_json(report, line));
  j["stats"] = std::move(stats);
  return j;
}

// The lines are serialized once each, straight into the output (not as a second document
// held whole), and stop at `max_bytes`: 10,000 stacks with tracebacks would be ~0.5 GB.
std::string to_json(const Report& report, std::size_t max_bytes) {
  std::string rows = "[";
  bool truncated = report.truncated;
  for (std::size_t i = 0; i < report.lines.size(); ++i) {
    std::string one = dump(line_json(report, report.lines[i]));
    if (rows.size() + one.size() > max_bytes) {
      truncated = true;
      break;
    }
    if (i != 0) rows += ',';
    rows += one;
  }
  rows += ']';
  json body = head_json(report);
  body["truncated"] = truncated;
  body["stats"] = nullptr;  // a placeholder the rows replace: keys are unique, strings escaped
  std::string out = dump(body);
  const std::string placeholder = "\"stats\":null";
  out.replace(out.find(placeholder), placeholder.size(), "\"stats\":" + rows);
  return out;
}

namespace {

Report read_report(const json& j) {
  Report report;
  const json& schema = field(j, "", "schema");
  expect(schema.is_number_integer(), schema, "schema", "an integer");
  if (schema.get<std::int64_t>() != kReportSchema)
    fail("schema", std::to_string(schema.get<std::int64_t>()) + " is not the schema this build reads (" +
                       std::to_string(kReportSchema) + ")");
  report.mode = word(j, "", "mode", [](const std::string& v) { return parse_mode(v); });
  report.sample_interval = whole(j, "", "sample_interval");
  report.max_frames = static_cast<unsigned>(whole(j, "", "max_frames", UINT_MAX));
  report.taken_at_ms = integer(j, "", "taken_at_ms");
  ReportRequest& r = report.request;
  r.key = word(j, "", "key", [](const std::string& v) { return parse_key_type(v); });
  r.cumulative = boolean(j, "", "cumulative");
  r.limit = whole(j, "", "limit", SIZE_MAX);
  r.include = strings(j, "", "include");
  r.exclude = strings(j, "", "exclude");
  if (j.contains("route")) r.routes = strings(j, "", "route");
  report.cap = cap_from(j, "", "tracker_memory_cap");
  if (j.contains("against"))
    report.diff = ReportAgainst{text(j, "", "against"), integer(j, "", "old_taken_at_ms")};
  const json& total = field(j, "", "total");
  expect_object(total, "total");
  report.total.size = integer(total, "total", "size");
  report.total.count = integer(total, "total", "count");
  if (report.diff) {
    report.total.size_diff = integer(total, "total", "size_diff");
    report.total.count_diff = integer(total, "total", "count_diff");
  }
  report.keys = whole(j, "", "keys", SIZE_MAX);
  report.truncated = boolean(j, "", "truncated");
  const json& stats = array(j, "", "stats");
  report.lines.reserve(stats.size());
  for (std::size_t i = 0; i < stats.size(); ++i)
    report.lines.push_back(
        line_from(stats[i], "stats[" + std::to_string(i) + "]", r.key, report.diff.has_value()));
  // traceback=1 is not a field: it is whether the lines carried their stacks.
  r.traceback =
      r.key != KeyType::traceback && !report.lines.empty() && report.lines.front().traceback.has_value();
  for (std::size_t i = 0; i < report.lines.size(); ++i)
    if (r.key != KeyType::traceback && report.lines[i].traceback.has_value() != r.traceback)
      fail("stats[" + std::to_string(i) + "].traceback",
           r.traceback ? "is missing (stats[0] has one)" : "is there (stats[0] has none)");
    else if (!report.lines[i].traceback) report.lines[i].traceback = Traceback{report.lines[i].frame};
  if (j.contains("pids")) {
    std::vector<long> pids;
    const json& list = array(j, "", "pids");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = "pids[" + std::to_string(i) + "]";
      expect(non_negative(list[i]) && list[i].get<std::uint64_t>() <= LONG_MAX, list[i], at, "a process id");
      pids.push_back(list[i].get<long>());
    }
    report.pids = std::move(pids);
    const json& failed = array(j, "", "failed");
    for (std::size_t i = 0; i < failed.size(); ++i) {
      const std::string at = "failed[" + std::to_string(i) + "]";
      expect_object(failed[i], at);
      report.failed.push_back({static_cast<long>(integer(failed[i], at, "pid")),
                               static_cast<int>(integer(failed[i], at, "status")),
                               text(failed[i], at, "error")});
    }
    if (j.contains("processes")) {  // older servers merged without it
      const json& each = array(j, "", "processes");
      for (std::size_t i = 0; i < each.size(); ++i) {
        const std::string at = "processes[" + std::to_string(i) + "]";
        expect_object(each[i], at);
        Report::Process p;
        p.pid = static_cast<long>(integer(each[i], at, "pid"));
        p.total.size = integer(each[i], at, "size");
        p.total.count = integer(each[i], at, "count");
        if (report.diff) {
          p.total.size_diff = integer(each[i], at, "size_diff");
          p.total.count_diff = integer(each[i], at, "count_diff");
          p.joined = boolean(each[i], at, "new");
        }
        report.processes.push_back(p);
      }
    }
  }
  if (j.contains("group")) {
    const json& group = field(j, "", "group");
    expect_object(group, "group");
    report.group_processes = static_cast<std::size_t>(whole(group, "group", "processes", SIZE_MAX));
  }
  return report;
}

}  // namespace

Report report_from_json(const json& document) {
  return read_strictly("report JSON", document, [](const json& j) {
    expect_object(j, "the document");
    return read_report(j);
  });
}

Report report_from_json(std::string_view text) { return read_strictly("report JSON", text, read_report); }

LIVEHEAP_NAMESPACE_END
