// The heap at its high-water mark (heaptrack's "peak" view), recorded off the allocation path:
// a liveheap thread reads the traced total every kPeakPoll and, when it has passed the last
// recorded peak by a margin, records what each stack holds (integers per stack, no symbols).
// Thread-safety: every function may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace liveheap::peak {

inline constexpr std::chrono::milliseconds kPeakPoll{5};
// A new record once the traced heap exceeds the recorded one by 1/32 of it (at least 64 KiB).
inline constexpr std::int64_t kMarginDivisor = 32;
inline constexpr std::int64_t kMinMargin = 64 * 1024;

// One stack's live totals when the record was taken. `frames` points into the engine's stack
// table, whose records are never freed.
struct StackAtPeak {
  const std::uintptr_t* frames = nullptr;
  std::uint32_t depth = 0;
  std::int64_t bytes = 0;
  std::int64_t count = 0;
};

struct Record {
  std::int64_t taken_at_ms = 0;
  std::int64_t total = 0;  // the sum of stacks[].bytes
  std::vector<StackAtPeak> stacks;
};

// Tracing (re)started: forgets the record; starts the thread once if run_now (else at
// run()), and again in a forked child if restart_in_child (else at the child's run()).
void on_start(bool run_now = true, bool restart_in_child = true);
// Starts the thread on_start() left waiting (or a forked child lost); no-op if it runs.
void run();
// clear(), stop(): forgets the record; the next poll records the heap as it is then.
void forget() noexcept;
// reset_peak(): the record becomes the heap now (recorded on the calling thread).
void record_now() noexcept;
// The latest record; null before the first one of this session.
std::shared_ptr<const Record> latest();
// How many times the thread has compared the traced total with the record while tracing
// (each kPeakPoll): tests wait on it to know that the thread has looked, not on a sleep.
std::uint64_t polls() noexcept;

}  // namespace liveheap::peak
