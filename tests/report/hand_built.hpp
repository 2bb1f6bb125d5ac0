// Frames and snapshots built by hand, shared by the report tests (one unity batch may hold
// several of their files: one definition each).
#pragma once

#include <utility>
#include <vector>

#include "liveheap/snapshot.hpp"

namespace liveheap::hand_built {

inline const Frame kMalloc{"malloc", "", 0, "/usr/lib/libliveheap.so", 0x3};

// A frame of the program's own code at file:line.
inline Frame user(const char* file, unsigned line, const char* function = "work()") {
  return Frame{function, file, line, "/bin/app", 0x1000u + line};
}

inline Snapshot snap(std::vector<Trace> traces) { return Snapshot(std::move(traces), SnapshotInfo{}); }

}  // namespace liveheap::hand_built
