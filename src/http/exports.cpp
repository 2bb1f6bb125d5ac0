// pprof profiles and Prometheus metrics over HTTP (exports.hpp).
#include "exports.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>

#include <boost/beast/http/field.hpp>
#include <unistd.h>

#include "file_lines.hpp"
#include "liveheap/allocator.hpp"
#include "liveheap/tracker.hpp"
#include "process_memory.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace http {
namespace {

constexpr unsigned kDefaultCallsites = 20;

// One metric family: HELP and TYPE lines, then its samples.
class Exposition {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    text_ += "# HELP " + std::string(name) + " " + std::string(help) + "\n";
    text_ += "# TYPE " + std::string(name) + " " + std::string(type) + "\n";
  }
  void sample(std::string_view name, std::int64_t value, std::string_view labels = "") {
    text_ += std::string(name) + std::string(labels) + " " + std::to_string(value) + "\n";
  }
  void single(std::string_view name, std::string_view type, std::string_view help, std::int64_t value) {
    family(name, type, help);
    sample(name, value);
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

// VmSize from /proc/self/statm (pages); -1 when unknown.
std::int64_t virtual_memory_bytes() {
  std::istringstream statm(tracker::read_file_text("/proc/self/statm"));
  std::int64_t pages = -1;
  if (!(statm >> pages)) return -1;
  return pages * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

void tracker_metrics(Exposition& out) {
  const HeapTotals heap = heap_totals();
  const TracedMemory traced = traced_memory();
  const Options opts = options();
  out.single("liveheap_inuse_bytes", "gauge",
             "Traced heap bytes live now (an unbiased estimate in sampled mode).", heap.inuse_bytes);
  out.single("liveheap_inuse_objects", "gauge", "Traced heap blocks live now.", heap.inuse_blocks);
  out.single("liveheap_peak_bytes", "gauge", "Highest liveheap_inuse_bytes since start, clear or reset-peak.",
             traced.peak);
  out.single("liveheap_allocated_bytes_total", "counter",
             "Bytes allocated since the process started, freed or not.", heap.allocated_bytes);
  out.single("liveheap_allocations_total", "counter",
             "Blocks allocated since the process started, freed or not.", heap.allocations);
  out.single("liveheap_tracker_bytes", "gauge", "Bytes liveheap itself holds.", tracker_memory());
  const TrackerMemoryCap cap = engine_stats().cap;
  out.single("liveheap_tracker_max_bytes", "gauge", "The tracker-memory cap (LIVEHEAP_MAX_TRACKER_MEMORY).",
             cap.max_bytes);
  out.single("liveheap_folded_allocations_total", "counter",
             "Allocations traced at the over-the-cap stack instead of their own, since start-up.",
             static_cast<std::int64_t>(cap.folded_blocks));
  out.single("liveheap_folded_bytes_total", "counter",
             "Bytes of those allocations (they count in liveheap_inuse_bytes).", cap.folded_bytes);
  out.single("liveheap_dropped_allocations_total", "counter",
             "Allocations not traced at all (no room in liveheap's tables), since start-up.",
             static_cast<std::int64_t>(cap.dropped_blocks));
  out.single("liveheap_dropped_bytes_total", "counter",
             "Bytes of those allocations (missing from liveheap_inuse_bytes while live).", cap.dropped_bytes);
  const std::int64_t interval = !is_tracing()                ? 0
                                : opts.mode == Mode::sampled ? static_cast<std::int64_t>(opts.sample_interval)
                                                             : 1;
  out.single("liveheap_sample_interval_bytes", "gauge",
             "Mean bytes between samples: 1 when every allocation is traced, 0 when off.", interval);
}

// The allocator's own figures, as /stats names them: the difference between liveheap's
// bytes and the process's resident bytes is what the allocator holds.
void allocator_metrics(Exposition& out) {
  const AllocatorInfo allocator = read_allocator();
  out.family("liveheap_allocator_bytes", "gauge",
             "The allocator's own figures (jemalloc's stats.*, tcmalloc's properties, mimalloc's "
             "process info, glibc's mallinfo2), labelled by allocator and figure.");
  for (const auto& [figure, bytes] : allocator.figures)
    out.sample("liveheap_allocator_bytes", bytes,
               "{allocator=\"" + escape_label_value(allocator.name) + "\",figure=\"" +
                   escape_label_value(figure) + "\"}");
}

void process_metrics(Exposition& out) {
  out.single("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
             read_process_memory().rss);
  out.single("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
             virtual_memory_bytes());
}

// The `limit` biggest callsites by live bytes, one gauge each; labels merged so that no
// label set appears twice.
void callsite_metrics(Exposition& out, unsigned limit) {
  out.family("liveheap_callsite_inuse_bytes", "gauge",
             "Traced bytes live now per allocating line (the biggest callsites only).");
  if (limit == 0 || !is_tracing()) return;
  Snapshot now;
  try {
    now = take_snapshot();
  } catch (const std::runtime_error&) {  // tracing stopped since the check
    return;
  }
  std::map<std::string, std::int64_t> by_labels;
  std::vector<std::string> order;
  for (const Statistic& s : now.statistics(KeyType::line)) {
    if (order.size() >= limit) break;
    if (s.traceback.empty() || s.size <= 0) continue;
    const Frame& f = s.traceback[0];
    const std::string labels = "{callsite=\"" + escape_label_value(f.file + ":" + std::to_string(f.line)) +
                               "\",function=\"" + escape_label_value(f.function) + "\"}";
    auto [it, added] = by_labels.try_emplace(labels, 0);
    if (added) order.push_back(labels);
    it->second += s.size;
  }
  for (const std::string& labels : order)
    out.sample("liveheap_callsite_inuse_bytes", by_labels[labels], labels);
}

// The `limit` routes of the host's requests holding most now (then most requested), a gauge
// of live bytes and a counter of requests each: bounded as the callsites are.
void route_metrics(Exposition& out, unsigned limit) {
  RouteReport report;
  try {
    if (limit > 0 && is_tracing()) report = take_route_report();
  } catch (const std::runtime_error&) {  // tracing stopped since the check
  }
  std::sort(report.routes.begin(), report.routes.end(), [](const RouteLine& a, const RouteLine& b) {
    return a.live_bytes != b.live_bytes ? a.live_bytes > b.live_bytes : a.requests > b.requests;
  });
  if (report.routes.size() > limit) report.routes.resize(limit);
  const auto labels = [](const RouteLine& line) {
    return "{route=\"" + escape_label_value(line.route) + "\"}";
  };
  // Each family's samples together, after its TYPE line, as the format requires.
  out.family("liveheap_route_inuse_bytes", "gauge",
             "Traced bytes live now that requests of a route allocated (the biggest routes only).");
  for (const RouteLine& line : report.routes)
    out.sample("liveheap_route_inuse_bytes", line.live_bytes, labels(line));
  out.family("liveheap_route_requests_total", "counter", "Requests of a route since the process started.");
  for (const RouteLine& line : report.routes)
    if (line.requests > 0)
      out.sample("liveheap_route_requests_total", static_cast<std::int64_t>(line.requests), labels(line));
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

unsigned metrics_callsites(const Config& config) {
  return metrics_callsites(config, std::getenv("LIVEHEAP_METRICS_CALLSITES"));
}

unsigned metrics_callsites(const Config& config, const char* env) {
  if (config.metrics_callsites) {
    if (*config.metrics_callsites > kMaxMetricsCallsites)
      throw std::invalid_argument("liveheap::http::Config::metrics_callsites must be 0.." +
                                  std::to_string(kMaxMetricsCallsites));
    return *config.metrics_callsites;
  }
  if (env == nullptr || *env == '\0') return kDefaultCallsites;
  const auto n = settings::parse_whole(env, settings::kMetricsCallsites);
  if (!n)
    throw std::invalid_argument("LIVEHEAP_METRICS_CALLSITES must be 0.." +
                                std::to_string(kMaxMetricsCallsites) + ", got '" +
                                std::string(env).substr(0, 40) + "'");
  return static_cast<unsigned>(*n);
}

Response profile_response(const ReplyTo& to, const Snapshot& now, ProfileView view, const Snapshot* base) {
  const std::string body = gzip(pprof_profile(now, executable_mappings(), view, base));
  Response res = make_response(to, Status::ok, body, "application/octet-stream");
  res.set(boost::beast::http::field::content_disposition,
          view == ProfileView::heap ? "attachment; filename=\"heap\"" : "attachment; filename=\"allocs\"");
  return res;
}

Response metrics_response(const ReplyTo& to, unsigned callsites) {
  Exposition out;
  tracker_metrics(out);
  allocator_metrics(out);
  process_metrics(out);
  callsite_metrics(out, callsites);
  route_metrics(out, callsites);
  return make_response(to, Status::ok, out.take(), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace http
LIVEHEAP_NAMESPACE_END
