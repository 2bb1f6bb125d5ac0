// Addresses -> frames from the debug information of the objects loaded in the process,
// kept true while objects are loaded and unloaded (dlopen/dlclose).
// Thread-safety: none; the symbolizer's worker thread alone uses it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "liveheap/snapshot.hpp"

struct backtrace_state;

namespace liveheap::symbolize {

// What the dynamic loader has done so far: objects loaded and unloaded since the start.
struct LoaderCounts {
  unsigned long long adds = 0;
  unsigned long long subs = 0;
  bool operator==(const LoaderCounts&) const = default;
};
LoaderCounts loader_counts();

// libbacktrace (as bundled by Boost.Stacktrace's backtrace backend) gives the inline chain
// that Boost's frame API does not. A libbacktrace state knows the objects loaded when it was
// created, for ever: one loaded later is unknown to it, and one loaded where an unloaded one
// was would get the old one's lines. A state cannot be freed either (it holds the debug
// information it read), so a new one is made only when an address to resolve lies in an
// object the current one did not read, and at most kMaxStates in all; past that, such
// objects get names without lines, never another object's lines.
class DebugInfo {
 public:
  static constexpr int kMaxStates = 4;  // each costs what the first did (~21 MB with libc6-dbg)

  // Before each batch of resolve(): takes in what the loader did since the last one.
  void refresh(LoaderCounts now);

  // The functions inlined at `address` (a return address), innermost first, then the
  // function the code is in: at least one frame.
  std::vector<Frame> resolve(std::uintptr_t address);

  // Any thread may ask (tests, reports).
  int states_made() const { return states_made_.load(std::memory_order_relaxed); }

 private:
  // A loaded segment of an object: [start, end) in memory.
  struct Segment {
    std::uintptr_t end;
    std::uintptr_t object_base;  // dl_iterate_phdr's dlpi_addr
    std::string object_name;     // "" for the main program
  };
  using Segments = std::map<std::uintptr_t, Segment>;  // by start
  static Segments loaded_segments();

  backtrace_state* state_for(std::uintptr_t pc, const char* object_name) const;
  void make_state();
  void forget_unloaded();

  backtrace_state* state_ = nullptr;
  std::atomic<int> states_made_{0};
  LoaderCounts counts_;        // as of the last refresh()
  LoaderCounts state_counts_;  // when state_ was made
  Segments known_;             // the code state_ read, less what was unloaded since
};

}  // namespace liveheap::symbolize
