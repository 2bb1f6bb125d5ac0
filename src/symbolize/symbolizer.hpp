// Addresses -> Frames (function, file, line, module) with Boost.Stacktrace, cached.
// Thread-safety: symbolize() may be called from any thread; the work happens on one
// long-lived worker thread, because Boost.Stacktrace's libbacktrace state costs ~125 ms
// and ~22 MB per thread that uses it and is never freed.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "liveheap/snapshot.hpp"

namespace liveheap::symbolize {

// `on_worker_start` runs first on the worker thread (the tracker uses it to exclude the
// worker's allocations from traces). Must be set before the first symbolize() call.
void set_worker_start_hook(std::function<void()> on_worker_start);

// For each address, in order, its frames: the functions inlined at that address, innermost
// first, then the function the code is in (at least one Frame each). Addresses are return
// addresses: the line looked up is the call's (address - 1).
std::vector<std::vector<Frame>> symbolize(std::span<const std::uintptr_t> addresses);

// Addresses asked of symbolize() since start-up, and of them those not in its cache, looked
// up in the debug information: what reports cost in symbols (/stats shows them).
struct Counts {
  std::uint64_t asked = 0;
  std::uint64_t resolved = 0;
};
Counts counts() noexcept;

// How many debug-information states the symbolizer has made (DebugInfo::kMaxStates at most).
int debug_info_states();

}  // namespace liveheap::symbolize
