// A statistic line shared by the report document and the /history answer: made from a key,
// written as JSON, read back strictly (see report_lines.hpp).
#include "report_lines.hpp"

#include <charconv>
#include <climits>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "strict_json.hpp"

namespace liveheap::report {
namespace {

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
    if (!t)
      throw std::invalid_argument("'" + v + "' (expected growing, plateaued, stable, shrinking or unknown)");
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

}  // namespace

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

bool includes_every_frame(const ReportRequest& request) {
  return request.cumulative && !request.include.empty() && request.key != KeyType::traceback &&
         request.key != KeyType::route;
}

std::vector<Filter> filters_of(const ReportRequest& request) {
  std::vector<Filter> filters;
  for (const std::string& spec : request.include) {
    filters.push_back(Filter::parse(true, spec));
    filters.back().all_frames = includes_every_frame(request);
  }
  for (const std::string& spec : request.exclude) filters.push_back(Filter::parse(false, spec));
  return filters;
}

ReportLine line_of(const Traceback& key, KeyType key_type, std::int64_t size, std::int64_t count) {
  ReportLine line;
  line.key = format_key(key, key_type);
  if (!key.empty()) line.frame = key_type == KeyType::traceback ? key[user_frame_index(key)] : key.front();
  line.traceback = key;
  line.size = size;
  line.count = count;
  line.average = count == 0 ? 0.0 : static_cast<double>(size) / static_cast<double>(count);
  return line;
}

json line_json(const ReportLine& line, bool diff, bool with_traceback) {
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
  if (diff) {
    j["size_diff"] = line.size_diff;
    j["count_diff"] = line.count_diff;
  }
  if (with_traceback && line.traceback) j["traceback"] = to_json(*line.traceback);
  add_verdict_json(j, line.verdict.value_or(Verdict{}));
  return j;
}

}  // namespace liveheap::report
