// The route of the request a thread is handling: a small id per route name, interned in a
// fixed table, carried per thread and, while a request is open, added to each stack its
// allocations intern as one synthetic outermost frame (engine.cpp), so that every report can
// fold stacks by route and a block keeps the route that allocated it, whoever frees it.
// Thread-safety: every function may be called from any thread, also in a forked child
// (interning takes no lock: a slot is claimed by compare-exchange).
#pragma once

#include <cstddef>
#include <cstdint>

#include "shared.hpp"
#include "thread_state.hpp"

namespace liveheap::engine {

using RouteId = std::uint16_t;
inline constexpr RouteId kNoRoute = 0;
// Names 1..kNamedRoutes; past them every new name is kOtherRoutes, "(other routes)".
inline constexpr RouteId kNamedRoutes = 255;
inline constexpr RouteId kOtherRoutes = kNamedRoutes + 1;
// Bytes of a name kept (longer ones are cut at a character's start).
inline constexpr std::size_t kMaxRouteName = 127;

// A route's frame: below any code address, so it can never be a return address, and above
// kOverCapFrame. It is the outermost frame of a stack allocated inside a request.
inline constexpr std::uintptr_t kRouteFrameBase = 0x200;
inline constexpr std::uintptr_t route_frame(RouteId id) noexcept { return kRouteFrameBase + id; }
inline constexpr bool is_route_frame(std::uintptr_t frame) noexcept {
  return frame > kRouteFrameBase && frame <= kRouteFrameBase + kOtherRoutes;
}
inline constexpr RouteId route_of_frame(std::uintptr_t frame) noexcept {
  return static_cast<RouteId>(frame - kRouteFrameBase);
}
// Frames below this are named by the engine, never symbolized (kOverCapFrame, routes).
inline constexpr std::uintptr_t kFirstCodeAddress = 4096;

// The id of `name` (`length` bytes, need not be NUL-terminated), interning it on first
// sight: bytes that are not UTF-8 or are control characters are kept as '?', a name longer
// than kMaxRouteName is cut, an empty one reads "(unnamed)". kOtherRoutes once the table is
// full. Lock-free.
LIVEHEAP_SHARED RouteId intern_route(const char* name, std::size_t length) noexcept;
// A request of route `name` begins on this thread: counted, and its tag set. Returns the
// tag it replaces (to be put back with set_route when the request ends).
LIVEHEAP_SHARED RouteId begin_request(const char* name, std::size_t length) noexcept;
// This thread's tag now: what a continuation of the request re-enters with set_route.
LIVEHEAP_SHARED RouteId current_route() noexcept;
// Sets this thread's tag (kNoRoute: outside any request); an id never interned is ignored.
LIVEHEAP_SHARED void set_route(RouteId id) noexcept;
// The name of `id` (NUL-terminated, valid for the life of the process), or nullptr when no
// route has that id (yet).
LIVEHEAP_SHARED const char* route_name(RouteId id) noexcept;
// The name a route frame shows: its route's, or "(unknown route)" when its id names none.
inline const char* route_frame_name(std::uintptr_t frame) noexcept {
  const char* name = route_name(route_of_frame(frame));
  return name != nullptr ? name : "(unknown route)";
}
// begin_request calls for `id` since the process started.
LIVEHEAP_SHARED std::uint64_t route_requests(RouteId id) noexcept;

// Read on every traced allocation: one load from the thread's state.
inline RouteId thread_route() noexcept { return t_thread.route; }

}  // namespace liveheap::engine
