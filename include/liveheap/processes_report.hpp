// GET /processes as one value: every process of the program's group (the one holding the
// port and those it forwards to), each with its parent, command line, start time and, from
// its own /stats, its mode, traced bytes and RSS. Written as JSON or a table, read back
// strictly. Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"

LIVEHEAP_API_BEGIN

struct ProcessEntry {
  long pid = 0;
  long ppid = 0;
  std::string cmdline;                 // its arguments joined by spaces
  std::string mode;                    // "exact", "sampled", "off", or "unreachable"
  std::optional<std::int64_t> traced;  // none while unreachable
  std::optional<std::int64_t> rss;
  std::int64_t started_ms = 0;  // unix time

  friend bool operator==(const ProcessEntry&, const ProcessEntry&) = default;
};

struct ProcessesReport {
  std::vector<ProcessEntry> processes;  // ascending pid
  long this_pid = 0;                    // who answers a request without pid=

  friend bool operator==(const ProcessesReport&, const ProcessesReport&) = default;
};

// {"processes": [{"pid", "ppid", "cmdline", "mode", "traced", "rss", "started_ms"}],
// "this_pid"}, one line; traced and rss null while unreachable.
std::string to_json(const ProcessesReport& report);
// Throws std::invalid_argument naming a missing or mistyped field ("processes JSON:
// processes[1].pid is missing").
ProcessesReport processes_report_from_json(std::string_view text);
// "2 processes (this one: pid 42)", then a table: PID PPID MODE TRACED RSS CMDLINE.
std::string to_text(const ProcessesReport& report);

LIVEHEAP_API_END
