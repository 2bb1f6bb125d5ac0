// The GET /processes value: JSON, strict reading, the table.
#include "liveheap/processes_report.hpp"

#include <climits>
#include <cstdio>

#include "liveheap/format.hpp"
#include "strict_json.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

using namespace report;

json or_null(const std::optional<std::int64_t>& value) { return value ? json(*value) : json(nullptr); }

ProcessesReport read_processes(const json& j) {
  ProcessesReport r;
  const json& list = array(j, "", "processes");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = "processes[" + std::to_string(i) + "]";
    const json& p = list[i];
    expect_object(p, at);
    r.processes.push_back({static_cast<long>(integer(p, at, "pid")),
                           static_cast<long>(integer(p, at, "ppid")), text(p, at, "cmdline"),
                           text(p, at, "mode"), integer_or_null(p, at, "traced"),
                           integer_or_null(p, at, "rss"), integer(p, at, "started_ms")});
  }
  r.this_pid = static_cast<long>(integer(j, "", "this_pid"));
  return r;
}

}  // namespace

std::string to_json(const ProcessesReport& report) {
  json list = json::array();
  for (const ProcessEntry& p : report.processes)
    list.push_back({{"pid", p.pid},
                    {"ppid", p.ppid},
                    {"cmdline", p.cmdline},
                    {"mode", p.mode},
                    {"traced", or_null(p.traced)},
                    {"rss", or_null(p.rss)},
                    {"started_ms", p.started_ms}});
  return dump({{"processes", list}, {"this_pid", report.this_pid}});
}

ProcessesReport processes_report_from_json(std::string_view text) {
  return read_strictly("processes JSON", text, read_processes);
}

std::string to_text(const ProcessesReport& report) {
  const std::size_t n = report.processes.size();
  std::string text = std::to_string(n) + " process" + (n == 1 ? "" : "es") + " (this one: pid " +
                     std::to_string(report.this_pid) + ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "%8s %8s %-11s %11s %11s  %s\n", "PID", "PPID", "MODE", "TRACED", "RSS",
                "CMDLINE");
  text += line;
  const auto size = [](const std::optional<std::int64_t>& v) {
    return v ? format_size(static_cast<double>(*v), false) : std::string("-");
  };
  for (const ProcessEntry& p : report.processes) {
    std::snprintf(line, sizeof line, "%8ld %8ld %-11s %11s %11s  ", p.pid, p.ppid, p.mode.c_str(),
                  size(p.traced).c_str(), size(p.rss).c_str());
    text += line + p.cmdline + "\n";
  }
  return text;
}

LIVEHEAP_NAMESPACE_END
