// Per thread: which interned stack a stack id becomes inside a request's route (the same
// frames with the route's frame outermost, request_route.hpp). The walk and its memo of
// stack ids know nothing of routes; a traced allocation inside a request maps the walk's id
// here, so a request costs one lookup in a small direct-mapped table, and a stack walked
// afresh per route only on first sight. Ids are never freed nor renumbered, so an entry
// never goes stale (clear, stop/start and fork keep them).
// Thread-safety: the thread's own (initial-exec TLS).
#pragma once

#include <cstdint>

#include "request_route.hpp"
#include "stack_table.hpp"

namespace liveheap::engine {

class RoutedStacks {
 public:
  // The routed id of `stack` in `route`, or kNoStack when not known here.
  StackId find(StackId stack, RouteId route) const noexcept {
    const std::uint64_t e = entries_[slot(stack, route)];
    return (e >> 24) == key(stack, route) ? static_cast<StackId>(e & kMaxStacks) : kNoStack;
  }
  void keep(StackId stack, RouteId route, StackId routed) noexcept {
    entries_[slot(stack, route)] = key(stack, route) << 24 | routed;
  }

 private:
  static constexpr unsigned kSlots = 64;
  // 24 bits of stack, 9 of route: never 0 for a real stack, so an empty entry matches none.
  static std::uint64_t key(StackId stack, RouteId route) noexcept {
    return std::uint64_t{stack} << 9 | route;
  }
  static unsigned slot(StackId stack, RouteId route) noexcept {
    return (stack * 0x9E3779B1u + route * 0x85EBCA6Bu) >> 26;  // the top 6 bits
  }
  std::uint64_t entries_[kSlots] = {};
};
static_assert(kOtherRoutes < (1u << 9) && kStackIdBits == 24, "a key is 33 bits above the id's 24");

}  // namespace liveheap::engine
