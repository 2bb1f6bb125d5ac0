// take_route_report(): the engine's stacks summed by the route frame each ends with, and its
// request counts; nothing is symbolized.
#include <map>
#include <string>

#include "engine.hpp"
#include "liveheap/tracker.hpp"
#include "request_route.hpp"

LIVEHEAP_NAMESPACE_BEGIN
namespace {

// The route of an interned stack: its outermost frame's, or kNoRequest.
std::string route_of_stack(const std::uintptr_t* frames, std::uint32_t depth) {
  if (depth == 0 || !engine::is_route_frame(frames[depth - 1])) return std::string(kNoRequest);
  return engine::route_frame_name(frames[depth - 1]);
}

std::string route_of_id(std::uint32_t id) {
  std::uintptr_t frames[engine::kMaxStackFrames];
  const std::uint32_t depth = engine::stack_frames(id, frames);
  return route_of_stack(frames, depth);
}

}  // namespace

RouteReport take_route_report(const StackSnapshot* baseline) {
  IgnoreScope ignore;
  if (!is_tracing()) throw std::runtime_error("tracing is off: start it first (liveheap::start)");
  std::map<std::string, RouteLine> lines;
  const auto line = [&](const std::string& route) -> RouteLine& {
    RouteLine& l = lines[route];
    l.route = route;
    return l;
  };
  engine::visit_stacks(
      [](void* ctx, const std::uintptr_t* frames, std::uint32_t depth, const engine::StackSums& s) {
        auto& add = *static_cast<decltype(line)*>(ctx);
        RouteLine& l = add(route_of_stack(frames, depth));
        l.live_bytes += s.bytes;
        l.live_blocks += s.count;
        l.allocated_bytes += s.alloc_bytes;
      },
      const_cast<void*>(static_cast<const void*>(&line)), true);
  for (const RouteRequests& r : requests_by_route()) line(r.route).requests = r.requests;
  for (auto& [route, l] : lines) {
    l.retained_bytes = l.live_bytes;
    l.retained_requests = l.requests;
  }
  RouteReport report;
  if (baseline != nullptr) {
    report.since_baseline = true;
    for (const StackSnapshot::Stack& s : baseline->stacks) line(route_of_id(s.id)).retained_bytes -= s.size;
    for (const RouteRequests& r : baseline->route_requests) line(r.route).retained_requests -= r.requests;
  }
  for (auto& [route, l] : lines) report.routes.push_back(std::move(l));
  finish(report);
  return report;
}

LIVEHEAP_NAMESPACE_END
