// The report document as JSON, written (with a byte budget for its lines) and read back
// strictly: every field of the schema must be there with its type, or the error names it.
#include <charconv>
#include <climits>
#include <stdexcept>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "liveheap/report.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using nlohmann::json;

bool shows_traceback(const Report& report, const ReportLine& line) {
  return line.traceback &&
         (report.request.key == KeyType::traceback || report.request.traceback);
}

json line_json(const Report& report, const ReportLine& line) {
  json j = {{"key", line.key},
            {"function", line.frame.function},
            {"short_function", shown_function(line.frame)},
            {"kind", frame_kind(line.frame)},
            {"file", line.frame.file},
            {"line", line.frame.line},
            {"module", line.frame.module},
            {"size", line.size},
            {"count", line.count},
            {"average", line.average}};
  if (report.diff) {
    j["size_diff"] = line.size_diff;
    j["count_diff"] = line.count_diff;
  }
  if (shows_traceback(report, line)) j["traceback"] = to_json(*line.traceback);
  add_verdict_json(j, line.verdict.value_or(Verdict{}));
  return j;
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

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// ---- reading ----

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument("report JSON: " + path + " " + what);
}

std::string join(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

const json& field(const json& object, const std::string& path, std::string_view name) {
  const auto it = object.find(name);
  if (it == object.end()) fail(join(path, name), "is missing");
  return *it;
}

// What `value` is, for a message: where a number was expected, why this one will not do.
std::string describe(const json& value, bool numeric) {
  if (value.is_number()) {
    if (!numeric) return "a number";
    if (value.is_number_float()) return "a fraction";
    return !value.is_number_unsigned() && value.get<std::int64_t>() < 0 ? "negative" : "too large";
  }
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_string()) return "a string";
  return value.is_array() ? "an array" : "an object";
}

void expect(bool ok, const json& value, const std::string& path, const char* type) {
  const std::string_view t(type);
  const bool numeric = t == "an integer" || t == "a whole number" || t == "a process id";
  if (!ok) fail(path, "is " + describe(value, numeric) + ", not " + type);
}

std::int64_t integer(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_number_integer() && (!v.is_number_unsigned() ||
                                    v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX)),
         v, join(path, name), "an integer");
  return v.get<std::int64_t>();
}

// A number >= 0 (parsed text gives an unsigned one; a value built in C++ may be signed).
bool non_negative(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

std::uint64_t whole(const json& object, const std::string& path, std::string_view name,
                    std::uint64_t max = UINT64_MAX) {
  const json& v = field(object, path, name);
  expect(non_negative(v) && v.get<std::uint64_t>() <= max, v, join(path, name), "a whole number");
  return v.get<std::uint64_t>();
}

double number(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_number(), v, join(path, name), "a number");
  return v.get<double>();
}

bool boolean(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_boolean(), v, join(path, name), "true or false");
  return v.get<bool>();
}

std::string text(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_string(), v, join(path, name), "a string");
  return v.get<std::string>();
}

const json& array(const json& object, const std::string& path, std::string_view name) {
  const json& v = field(object, path, name);
  expect(v.is_array(), v, join(path, name), "an array");
  return v;
}

void expect_object(const json& v, const std::string& path) { expect(v.is_object(), v, path, "an object"); }

std::vector<std::string> strings(const json& object, const std::string& path, std::string_view name) {
  std::vector<std::string> out;
  const json& list = array(object, path, name);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = join(path, name) + "[" + std::to_string(i) + "]";
    expect(list[i].is_string(), list[i], at, "a string");
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

// A word of the schema: `parse` throws std::invalid_argument for anything else.
template <typename Parse>
auto word(const json& object, const std::string& path, std::string_view name, Parse parse) {
  const std::string value = text(object, path, name);
  try {
    return parse(value);
  } catch (const std::invalid_argument& e) {
    fail(join(path, name), std::string("is not known: ") + e.what());
  }
}

Frame frame_from(const json& j, const std::string& path, bool with_address) {
  Frame f;
  f.function = text(j, path, "function");
  text(j, path, "short_function");  // derived from function: checked, not kept
  f.file = text(j, path, "file");
  f.line = static_cast<unsigned>(whole(j, path, "line", UINT_MAX));
  f.module = text(j, path, "module");
  if (with_address) {
    const std::string address = text(j, path, "address");
    const char* first = address.data() + 2;
    const char* last = address.data() + address.size();
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(first, last, value, 16);
    if (!address.starts_with("0x") || first == last || ec != std::errc() || end != last)
      fail(join(path, "address"), "'" + address + "' is not a hex address like 0x1f");
    f.address = static_cast<std::uintptr_t>(value);
  }
  return f;
}

std::optional<Verdict> verdict_from(const json& j, const std::string& path) {
  const Trend trend = word(j, path, "verdict", [](const std::string& v) {
    const std::optional<Trend> t = parse_trend(v);
    if (!t) throw std::invalid_argument("'" + v + "' (expected growing, plateaued, stable, shrinking or unknown)");
    return *t;
  });
  Verdict verdict;
  verdict.trend = trend;
  for (const char* name : {"growth_per_min", "since_last_growth_s"}) {
    const json& v = field(j, path, name);
    if (trend == Trend::unknown) expect(v.is_null(), v, join(path, name), "null (the verdict is unknown)");
  }
  if (trend != Trend::unknown) {
    verdict.growth_per_min = number(j, path, "growth_per_min");
    verdict.since_last_growth_s = number(j, path, "since_last_growth_s");
  }
  // The reasons: absent from an older server's report, null where unknown.
  const auto optional_number = [&](const char* name) -> std::optional<double> {
    const auto it = j.find(name);
    if (it == j.end() || it->is_null()) return std::nullopt;
    expect(it->is_number(), *it, join(path, name), "a number or null");
    return it->get<double>();
  };
  verdict.retention = optional_number("retention");
  verdict.idle_s = optional_number("idle_s");
  verdict.allocated = optional_number("allocated_in_window").value_or(0);
  return verdict;
}

ReportLine line_from(const json& j, const std::string& path, KeyType key, bool diff) {
  expect_object(j, path);
  ReportLine line;
  line.key = text(j, path, "key");
  line.frame = frame_from(j, path, false);
  line.size = integer(j, path, "size");
  line.count = integer(j, path, "count");
  line.average = number(j, path, "average");
  if (diff) {
    line.size_diff = integer(j, path, "size_diff");
    line.count_diff = integer(j, path, "count_diff");
  }
  if (key == KeyType::traceback || j.contains("traceback")) {
    const json& frames = array(j, path, "traceback");
    std::vector<Frame> list;
    list.reserve(frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const std::string at = join(path, "traceback") + "[" + std::to_string(i) + "]";
      expect_object(frames[i], at);
      list.push_back(frame_from(frames[i], at, true));
    }
    line.traceback = Traceback(std::move(list));
  }
  line.verdict = verdict_from(j, path);
  return line;
}

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

Report report_from_json(const json& j) {
  expect_object(j, "the document");
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
  const json& cap = field(j, "", "tracker_memory_cap");
  expect_object(cap, "tracker_memory_cap");
  report.cap.max_bytes = integer(cap, "tracker_memory_cap", "max_bytes");
  report.cap.reached = boolean(cap, "tracker_memory_cap", "reached");
  report.cap.folded_blocks = whole(cap, "tracker_memory_cap", "folded_blocks");
  report.cap.folded_bytes = integer(cap, "tracker_memory_cap", "folded_bytes");
  report.cap.dropped_blocks = whole(cap, "tracker_memory_cap", "dropped_blocks");
  report.cap.dropped_bytes = integer(cap, "tracker_memory_cap", "dropped_bytes");
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
    report.lines.push_back(line_from(stats[i], "stats[" + std::to_string(i) + "]", r.key, report.diff.has_value()));
  // traceback=1 is not a field: it is whether the lines carried their stacks.
  r.traceback = r.key != KeyType::traceback && !report.lines.empty() &&
                report.lines.front().traceback.has_value();
  for (std::size_t i = 0; i < report.lines.size(); ++i)
    if (r.key != KeyType::traceback && report.lines[i].traceback.has_value() != r.traceback)
      fail("stats[" + std::to_string(i) + "].traceback",
           r.traceback ? "is missing (stats[0] has one)" : "is there (stats[0] has none)");
    else if (!report.lines[i].traceback)
      report.lines[i].traceback = Traceback{report.lines[i].frame};
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

Report report_from_json(std::string_view text) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) throw std::invalid_argument("report JSON: the text is not JSON");
  return report_from_json(document);
}

LIVEHEAP_NAMESPACE_END
