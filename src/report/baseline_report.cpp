// The /baseline values: JSON, strict reading, text.
#include "liveheap/baseline_report.hpp"

#include <climits>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "strict_json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using namespace report;

json baseline_json(const BaselineReport& r) {
  json j = {{"mode", to_string(r.mode)},
            {"sample_interval", r.sample_interval},
            {"max_frames", r.max_frames},
            {"taken_at_ms", r.taken_at_ms},
            {"age_ms", r.age_ms},
            {"total", {{"size", r.total_size}, {"count", r.total_count}}},
            {"stacks", r.stacks},
            {"traced", {{"current", r.traced_current}, {"peak", r.traced_peak}}},
            {"tracker_memory", r.tracker_memory},
            {"tracker_memory_cap", to_json(r.cap)}};
  if (r.group_processes) j["group"] = {{"processes", *r.group_processes}};
  return j;
}

}  // namespace

namespace {

BaselineReport read_baseline(const json& j, const std::string& path) {
  BaselineReport r;
  r.mode = word(j, path, "mode", [](const std::string& v) { return parse_mode(v); });
  r.sample_interval = whole(j, path, "sample_interval");
  r.max_frames = static_cast<unsigned>(whole(j, path, "max_frames", UINT_MAX));
  r.taken_at_ms = integer(j, path, "taken_at_ms");
  r.age_ms = integer(j, path, "age_ms");
  const json& total = object(j, path, "total");
  r.total_size = integer(total, join(path, "total"), "size");
  r.total_count = integer(total, join(path, "total"), "count");
  r.stacks = whole(j, path, "stacks", SIZE_MAX);
  const json& traced = object(j, path, "traced");
  r.traced_current = integer(traced, join(path, "traced"), "current");
  r.traced_peak = integer(traced, join(path, "traced"), "peak");
  r.tracker_memory = integer(j, path, "tracker_memory");
  r.cap = cap_from(j, path, "tracker_memory_cap");
  if (j.contains("group"))
    r.group_processes = whole(object(j, path, "group"), join(path, "group"), "processes", SIZE_MAX);
  return r;
}

BaselinesReport read_baselines(const json& j) {
  BaselinesReport r;
  const json& list = array(j, "", "processes");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = "processes[" + std::to_string(i) + "]";
    expect_object(list[i], at);
    ProcessBaseline p;
    p.pid = static_cast<long>(integer(list[i], at, "pid"));
    p.status = static_cast<int>(integer(list[i], at, "status"));
    if (list[i].contains("baseline")) {
      expect_object(list[i]["baseline"], join(at, "baseline"));
      p.baseline = read_baseline(list[i]["baseline"], join(at, "baseline"));
    } else {
      p.error = text(list[i], at, "error");
    }
    r.processes.push_back(std::move(p));
  }
  return r;
}

}  // namespace

std::string to_json(const BaselineReport& report) { return dump(baseline_json(report)); }

BaselineReport baseline_report_from_json(std::string_view text) {
  return read_strictly("baseline JSON", text, [](const json& j) { return read_baseline(j, ""); });
}

std::string to_text(const BaselineReport& r) {
  const std::string others = r.group_processes && *r.group_processes > 1
                                 ? " (this is 1 of the " + std::to_string(*r.group_processes) +
                                       " processes of this program: pid=all sets them all)"
                                 : "";
  return "baseline taken " + std::to_string(r.age_ms / 1000) +
         " s ago: size=" + format_size(static_cast<double>(r.total_size), false) +
         ", count=" + std::to_string(r.total_count) + ", stacks=" + std::to_string(r.stacks) +
         " (mode=" + std::string(to_string(r.mode)) + ")" + others;
}

std::string to_json(const BaselinesReport& report) {
  json list = json::array();
  for (const ProcessBaseline& p : report.processes) {
    json entry = {{"pid", p.pid}, {"status", p.status}};
    if (p.baseline) entry["baseline"] = baseline_json(*p.baseline);
    else entry["error"] = p.error;
    list.push_back(std::move(entry));
  }
  return dump({{"processes", list}});
}

BaselinesReport baselines_report_from_json(std::string_view text) {
  return read_strictly("baselines JSON", text, read_baselines);
}

std::string to_text(const BaselinesReport& report) {
  std::string text;
  for (const ProcessBaseline& p : report.processes) {
    text += "pid " + std::to_string(p.pid) + ": ";
    if (p.baseline)
      text += "baseline of " + format_size(static_cast<double>(p.baseline->total_size), false) + " in " +
              std::to_string(p.baseline->total_count) + " blocks\n";
    else text += p.error + "\n";
  }
  return text;
}

LIVEHEAP_NAMESPACE_END
