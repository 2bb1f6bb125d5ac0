// GET and POST /baseline as one value: when the baseline was taken, how, and its totals
// (nothing symbolized); POST /baseline?pid=all as each process's answer. Written as JSON or
// text, read back strictly.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"
#include "liveheap/snapshot.hpp"

LIVEHEAP_API_BEGIN

struct BaselineReport {
  Mode mode = Mode::exact;
  std::uint64_t sample_interval = 0;
  unsigned max_frames = 0;
  std::int64_t taken_at_ms = 0;
  std::int64_t age_ms = 0;  // at the answer
  std::int64_t total_size = 0;
  std::int64_t total_count = 0;
  std::size_t stacks = 0;
  std::int64_t traced_current = 0;
  std::int64_t traced_peak = 0;
  std::int64_t tracker_memory = 0;
  TrackerMemoryCap cap;
  // One process's answer in a group of several: how many processes the group has.
  std::optional<std::size_t> group_processes;

  friend bool operator==(const BaselineReport&, const BaselineReport&) = default;
};

// POST /baseline?pid=all: one entry a process, in pid order.
struct ProcessBaseline {
  long pid = 0;
  int status = 0;                          // its HTTP status (502: it did not answer)
  std::optional<BaselineReport> baseline;  // with status 200
  std::string error;                       // otherwise, why

  friend bool operator==(const ProcessBaseline&, const ProcessBaseline&) = default;
};
struct BaselinesReport {
  std::vector<ProcessBaseline> processes;

  friend bool operator==(const BaselinesReport&, const BaselinesReport&) = default;
};

// {"mode", "sample_interval", "max_frames", "taken_at_ms", "age_ms", "total": {"size",
// "count"}, "stacks", "traced": {"current", "peak"}, "tracker_memory", "tracker_memory_cap",
// and "group": {"processes"} in a group}, one line.
std::string to_json(const BaselineReport& report);
// Throws std::invalid_argument naming a missing or mistyped field ("baseline JSON: total.size
// is missing").
BaselineReport baseline_report_from_json(std::string_view text);
// "baseline taken 3 s ago: size=1.2 MiB, count=300, stacks=42 (mode=exact)" (no newline).
std::string to_text(const BaselineReport& report);

// {"processes": [{"pid", "status", "baseline" | "error"}]}, one line.
std::string to_json(const BaselinesReport& report);
BaselinesReport baselines_report_from_json(std::string_view text);
// "pid 42: baseline of 1.2 MiB in 300 blocks" or "pid 43: <error>", a line each.
std::string to_text(const BaselinesReport& report);

LIVEHEAP_API_END
