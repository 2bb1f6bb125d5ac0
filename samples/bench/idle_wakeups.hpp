// How often liveheap wakes a traced process in which nothing happens: `sleep` under the
// preload library in each mode, with and without an endpoint, and as the second process of a
// group (another holds the port), beside the same `sleep` untraced, all at once; the voluntary context switches of all their threads over one
// window. A library inside someone else's process must not keep its CPU from idling.
// Thread-safety: none needed; the driver is single-threaded.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace bench {

struct IdleWakeups {
  std::string name;
  int threads = 0;              // at the end of the window
  double per_second = 0;        // voluntary context switches of all threads, per second
  std::string failed;           // why there is no figure; empty when there is
};

// The untraced row first. About 1.5 s to settle, then `window`.
std::vector<IdleWakeups> measure_idle_wakeups(const std::string& liveheap_preload,
                                              std::chrono::seconds window);
void print_idle_wakeups_table(const std::vector<IdleWakeups>& rows, std::chrono::seconds window);

}  // namespace bench
