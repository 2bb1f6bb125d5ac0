// The heap at its high-water mark (heaptrack's "peak" view), recorded off the allocation path:
// a liveheap thread sleeps until the allocation that takes the traced total past a mark (the
// last recorded peak plus a margin) wakes it, then records what each stack holds (integers
// per stack, no symbols). No timer: an idle process is never woken for it.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace liveheap::peak {

// A new record once the traced heap exceeds the recorded one by 1/32 of it (at least 64 KiB).
inline constexpr std::int64_t kMarginDivisor = 32;
inline constexpr std::int64_t kMinMargin = 64 * 1024;

// One stack's live totals when the record was taken, in 16 B: a record holds every live
// stack. `id`: the engine's stack id (24 bits; stable for the life of the process,
// engine::stack_frames() reads its frames).
struct StackAtPeak {
  std::int64_t bytes = 0;
  std::uint64_t id : 24 = 0;
  std::int64_t count : 40 = 0;
};
static_assert(sizeof(StackAtPeak) == 16);

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
// clear(), stop(): forgets the record; the next traced allocation wakes the thread, which
// records the heap as it is then.
void forget() noexcept;
// reset_peak(): the record becomes the heap now (recorded on the calling thread).
void record_now() noexcept;
// The latest record; null before the first one of this session.
std::shared_ptr<const Record> latest();
// How many times the thread has compared the traced total with the mark (once as it starts,
// then once per wake-up).
std::uint64_t looks() noexcept;
// True when the thread has looked since the last wake-up the allocation path sent it (or
// none was ever sent): what it would record, it has. Tests wait on it, not on a sleep.
bool caught_up() noexcept;

}  // namespace liveheap::peak
