// The history recorder: a liveheap thread that, every interval, records the traced heap,
// RSS and the biggest stacks' live totals by stack id (integers only: no symbolization on
// the tick), in bounded memory. Thread-safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "liveheap/history.hpp"

namespace liveheap::tracker {

// The bounds: an hour at the default 10 s, the biggest 512 stacks per point, 32 bytes each
// (~5.9 MiB of points at most), and the stacks a report symbolizes.
inline constexpr std::size_t kHistoryPoints = 360;
inline constexpr std::size_t kHistoryStacksPerPoint = 512;
inline constexpr std::size_t kHistoryReportStacks = 2048;

// One stack's totals at one point: live now, and allocated since the process started (the
// work the verdict weighs the live size against).
struct HistoryEntry {
  std::uint32_t id = 0;
  std::uint32_t count = 0;  // live blocks, capped at 2^32 - 1
  std::int64_t size = 0;
  std::int64_t alloc_size = 0;
  std::int64_t alloc_count = 0;
};
static_assert(sizeof(HistoryEntry) == 32);

// What the recorder holds, unsymbolized.
struct RawHistory {
  unsigned interval_s = 0;
  std::vector<HistoryPoint> points;
  std::vector<std::vector<HistoryEntry>> entries;  // per point
  std::uint64_t points_dropped = 0;
};

// Records every `interval_s` seconds (0: off) from now on, forgetting what was recorded;
// with run_now false the thread waits for history_run(). An idle stretch (intervals in which
// the process allocated no more than max(noise, kVerdictIdleBytes) in all) is kept as one
// point, its latest.
void history_start(unsigned interval_s, bool run_now = true, std::uint64_t noise = 0);
// Starts the thread history_start() left waiting (or lost in a fork); no-op if it runs.
void history_run();
// Stops the thread (joins it) and forgets the points.
void history_stop();
// Forgets the points; the thread goes on.
void history_clear();
// Records one point now (the thread's tick; tests call it to control time).
void history_tick();
// A copy of what is recorded; restarts the thread first in a forked child.
RawHistory history_raw();

}  // namespace liveheap::tracker
