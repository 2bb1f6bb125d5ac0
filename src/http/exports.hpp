// What liveheap hands to other tools: pprof heap profiles (go tool pprof, Grafana Alloy,
// Parca) and Prometheus metrics. Thread-safety: pure functions plus reads of the process.
#pragma once

#include <string>

#include "liveheap/pprof.hpp"
#include "liveheap/settings.hpp"
#include "reply.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {

// GET {pprof prefix}/heap and /allocs: `now` (a take_allocation_snapshot()) as a gzip'd
// profile; with `base`, the delta since it (?seconds=N).
Response profile_response(const ReplyTo& to, const Snapshot& now, ProfileView view,
                          const Snapshot* base = nullptr);

// GET /metrics: Prometheus text exposition 0.0.4. `callsites` = how many of the biggest
// callsites get a liveheap_callsite_inuse_bytes gauge (0..kMaxMetricsCallsites).
Response metrics_response(const ReplyTo& to, unsigned callsites);
inline constexpr unsigned kMaxMetricsCallsites = static_cast<unsigned>(settings::kMetricsCallsites.max);

// Config::metrics_callsites, else LIVEHEAP_METRICS_CALLSITES, else 20. Throws
// std::invalid_argument naming the variable and its bad value.
unsigned metrics_callsites(const Config& config);
// The same with the variable's value given (nullptr: unset).
unsigned metrics_callsites(const Config& config, const char* variable);

// A Prometheus label value with \, " and newline escaped as the text format requires.
std::string escape_label_value(std::string_view value);

}  // namespace http
LIVEHEAP_NAMESPACE_END
