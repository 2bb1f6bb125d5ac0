// POST /trim as one value: what the allocator was asked to give back, and the resident
// memory before and after. Written as JSON or one text line, read back strictly.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "liveheap/export.hpp"

LIVEHEAP_API_BEGIN

struct TrimReport {
  bool released = false;              // glibc says so; for the other allocators, RSS went down
  std::string allocator;              // its name: "glibc", "jemalloc", ...
  std::string action;                 // what was asked: "malloc_trim(0) released memory"
  std::int64_t tracker_released = 0;  // bytes of freed sampled blocks liveheap gave back
  std::int64_t rss_before = 0;
  std::int64_t rss_after = 0;

  friend bool operator==(const TrimReport&, const TrimReport&) = default;
};

// Whether memory went back: glibc's malloc_trim says so, for the others RSS does.
bool trim_released(std::string_view action, std::int64_t rss_before, std::int64_t rss_after);

// {"released", "allocator", "action", "tracker_released", "rss_before", "rss_after"}, one line.
std::string to_json(const TrimReport& report);
// Throws std::invalid_argument naming a missing or mistyped field ("trim JSON: rss_after is missing").
TrimReport trim_report_from_json(std::string_view text);
// "malloc_trim(0) released memory: rss 40.0 MiB -> 12.0 MiB; liveheap gave back 1.0 MiB of
// freed samples" (no newline).
std::string to_text(const TrimReport& report);

LIVEHEAP_API_END
