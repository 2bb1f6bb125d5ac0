// GET /routes as one value: per route of the requests a process handled (RequestScope,
// liveheap_request_begin), its requests, what its stacks hold and allocated, and what each
// request left behind. Built by take_route_report() (liveheap/tracker.hpp), merged across
// processes by route name, written as JSON {"routes": [...]} or one text line a route.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "liveheap/export.hpp"

LIVEHEAP_API_BEGIN

struct RouteLine {
  std::string route;            // the name (kNoRequest: blocks allocated outside any)
  std::uint64_t requests = 0;   // seen since the process started
  std::int64_t live_bytes = 0;  // held now by blocks the route's requests allocated
  std::int64_t live_blocks = 0;
  std::int64_t allocated_bytes = 0;  // allocated by them since start-up, freed or not
  double allocated_per_request = 0;  // allocated_bytes / requests
  // What a request left behind: retained_bytes / retained_requests.
  double retained_per_request = 0;
  // The live bytes' growth since the baseline (without one: since the history window's
  // first point, or without a history, the live bytes), and the requests since the same
  // moment: what merging processes adds.
  std::int64_t retained_bytes = 0;
  std::uint64_t retained_requests = 0;
  std::string verdict = "unknown";  // the history's verdict on the route's live bytes

  friend bool operator==(const RouteLine&, const RouteLine&) = default;
};

struct RouteReport {
  bool since_baseline = false;    // retained_* count from the baseline, else from since_ms
  std::int64_t since_ms = 0;      // the history window's first point (unix ms); 0: start-up
  std::vector<RouteLine> routes;  // biggest retained_bytes first, then by name

  friend bool operator==(const RouteReport&, const RouteReport&) = default;
};

// Fills the per-request figures from the totals and sorts the lines.
void finish(RouteReport& report);
struct History;
// Each route's verdict: the history's rule on the route's live bytes (its stacks grouped as
// key=route groups) with the route's requests as the work axis (classify_on_requests; the
// process's work for blocks allocated outside any request). Without a baseline, retained_*
// count from the history window's first point (since_ms), where the history has two points
// or more. Then finish(). Stacks the history did not record at its first point (past
// History::stacks_per_point) count as 0 there.
void judge_on_history(RouteReport& report, const History& history);
// pid=all: lines of the same route added up (the verdict: the one of the process holding
// most of the route's live bytes), then finish().
RouteReport merge(const std::vector<RouteReport>& reports);

// {"routes": [{"route", "requests", "live_bytes", "live_blocks", "allocated_bytes",
// "allocated_per_request", "retained_per_request", "retained_bytes", "retained_requests",
// "verdict"}], "since": "the baseline" | "the history window" | "start-up", "since_ms"}
// ("since_ms": the window's first point, with "the history window" only)
std::string to_json(const RouteReport& report);
// Throws std::invalid_argument naming a missing or mistyped field.
RouteReport route_report_from_json(std::string_view text);
// One line a route: "POST /karyogram: requests=20, retained 6.19 MiB/request, live 124 MiB
// [growing]".
std::string to_text(const RouteReport& report);

LIVEHEAP_API_END
