// take_peak_snapshot: what was live at the traced heap's high-water mark, recorded by a
// liveheap thread, exactly, after the blocks that made the peak are gone.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../support/tracing_session.hpp"
#include "../support/wait.hpp"
#include "liveheap/tracker.hpp"
#include "engine.hpp"
#include "peak.hpp"
#include "peak_signal.hpp"

namespace {

using liveheap::Mode;
using liveheap::Snapshot;
using test_support::TracingSession;

// Live bytes and blocks attributed to this file at `line` in `snapshot`.
liveheap::Statistic at_line(const Snapshot& snapshot, int line) {
  for (const auto& s : snapshot.statistics(liveheap::KeyType::line)) {
    const liveheap::Frame& f = s.traceback.at(0);
    if (f.line == static_cast<unsigned>(line) && f.file.ends_with("peak_test.cpp")) return s;
  }
  return {};
}

// For a failure's message: what a record holds, and where the mark that wakes the recorder
// stands now (a second record means the traced total crossed it).
std::string held(const Snapshot& snapshot) {
  std::string text = "the record (taken at " + std::to_string(snapshot.info().taken_at_ms) + " ms) holds " +
                     std::to_string(snapshot.total_size()) + " B:";
  for (const auto& s : snapshot.statistics(liveheap::KeyType::line))
    text += " " + s.traceback.at(0).file + ":" + std::to_string(s.traceback.at(0).line) + " " +
            std::to_string(s.size) + " B;";
  const liveheap::TracedMemory traced = liveheap::traced_memory();
  return text + " traced now " + std::to_string(traced.current) + " B, peak " + std::to_string(traced.peak) +
         " B, mark " + std::to_string(liveheap::engine::peak_mark()) + " B";
}

// Until the peak record holds `bytes` at `line`.
testing::AssertionResult wait_for_record(int line, std::int64_t bytes) {
  return test_support::wait_until(test_support::kPatience, [&] {
    return at_line(liveheap::take_peak_snapshot(), line).size == bytes;
  }, std::chrono::milliseconds(1)) << ": the peak record never held " << bytes << " B at line " << line;
}

// Until the recorder's thread has looked since the last time the allocation path woke it:
// what it would record, it has.
testing::AssertionResult wait_for_recorder() {
  return test_support::wait_until(test_support::kPatience, [] { return liveheap::peak::caught_up(); },
                                  std::chrono::milliseconds(1))
         << ": the peak thread never looked after its last wake-up";
}

constexpr std::int64_t kA = 8 << 20;
constexpr std::int64_t kB = 2 << 20;

TEST(Peak, KeepsWhatWasLiveAtTheHighWaterMark) {
  std::optional<TracingSession> tracing(std::in_place, liveheap::Options{Mode::exact, 16});
  void* a = std::malloc(kA); const int line_a = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a, kA));
  std::free(a);
  void* b = std::malloc(kB); const int line_b = __LINE__;
  ASSERT_TRUE(wait_for_recorder());  // the record stays

  const Snapshot peak = liveheap::take_peak_snapshot();
  EXPECT_EQ(at_line(peak, line_a).size, kA) << held(peak);
  EXPECT_EQ(at_line(peak, line_a).count, 1);
  EXPECT_EQ(at_line(peak, line_b).size, 0);
  EXPECT_EQ(peak.info().traced_current, peak.total_size());
  EXPECT_GE(peak.info().traced_peak, peak.total_size());

  const Snapshot now = liveheap::take_snapshot();
  EXPECT_EQ(at_line(now, line_a).size, 0);
  EXPECT_EQ(at_line(now, line_b).size, kB);
  EXPECT_EQ(at_line(now, line_b).count, 1);

  liveheap::reset_peak();  // the record becomes the heap now
  const Snapshot reset = liveheap::take_peak_snapshot();
  EXPECT_EQ(at_line(reset, line_a).size, 0);
  EXPECT_EQ(at_line(reset, line_b).size, kB);
  std::free(b);
  tracing.reset();
  EXPECT_THROW(liveheap::take_peak_snapshot(), std::runtime_error);
}

// Distinct stacks on demand: three call sites a level, each block from path `g_branches`.
std::uint64_t g_branches = 0;
int g_branch_down_line = 0;
[[gnu::noinline]] void* branch_down(int depth) {
  if (depth == 0) { g_branch_down_line = __LINE__; return std::malloc(16); }
  void* p;
  const std::uint64_t branch = g_branches % 3;
  g_branches /= 3;
  if (branch == 0) { p = branch_down(depth - 1); asm volatile("nop" ::: "memory"); }
  else if (branch == 1) { p = branch_down(depth - 1); asm volatile("nop\n nop" ::: "memory"); }
  else { p = branch_down(depth - 1); asm volatile("nop\n nop\n nop" ::: "memory"); }
  return p;
}

// A record has room for the last one's live stacks and an eighth more (and 1024): when far
// more stacks hold blocks at the next crossing, it is taken again with room for them all.
TEST(Peak, ARecordHoldsEveryLiveStackWhenTheyFarOutnumberTheLastRecords) {
  TracingSession tracing({Mode::exact, 32});
  void* a = std::malloc(kA); const int line_a = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a, kA));  // one live stack
  constexpr int kStacks = 3000;  // 48 KB: under the mark, no record while they come
  std::vector<void*> blocks;
  blocks.reserve(kStacks);
  for (int i = 0; i < kStacks; ++i) {
    g_branches = static_cast<std::uint64_t>(i);
    blocks.push_back(branch_down(8));
  }
  void* b = std::malloc(kB); const int line_b = __LINE__;  // past the mark
  // The one record of this crossing (a record short of stacks would leave its mark below
  // the heap, and the next allocation would take another).
  ASSERT_TRUE(wait_for_recorder());
  const Snapshot peak = liveheap::take_peak_snapshot();
  EXPECT_EQ(at_line(peak, line_b).size, kB) << held(peak);
  EXPECT_EQ(at_line(peak, g_branch_down_line).count, kStacks) << held(peak);
  EXPECT_EQ(at_line(peak, g_branch_down_line).size, kStacks * 16);
  EXPECT_EQ(at_line(peak, line_a).size, kA);
  EXPECT_EQ(peak.info().traced_current, peak.total_size());
  for (void* p : blocks) std::free(p);
  std::free(a);
  std::free(b);
}

TEST(Peak, ClearAndRestartForgetTheRecord) {
  TracingSession tracing({Mode::exact, 16});
  void* a = std::malloc(kA); const int line_a = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a, kA));
  std::free(a);
  EXPECT_EQ(at_line(liveheap::take_peak_snapshot(), line_a).size, kA);
  liveheap::clear();
  EXPECT_EQ(at_line(liveheap::take_peak_snapshot(), line_a).size, 0);

  a = std::malloc(kA); const int line_a2 = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a2, kA));
  std::free(a);
  liveheap::stop();
  liveheap::start({Mode::exact, 16});
  EXPECT_EQ(at_line(liveheap::take_peak_snapshot(), line_a2).size, 0);
}

// A record taken on demand (the first take_peak_snapshot of a session) while the recorder,
// woken by the same rise, waits for its turn: the recorder must not then record the lower
// heap of its own later turn over it. Each round clears the record, so that the rise wakes
// the recorder and the snapshot records at once, and both race for the one lock.
TEST(Peak, TheRecorderNeverReplacesARecordWithALowerHeap) {
  TracingSession tracing({Mode::exact, 16});
  ASSERT_TRUE(wait_for_recorder());
  for (int round = 0; round < 400; ++round) {
    liveheap::clear();  // no record; the mark at 0: the next allocation wakes the recorder
    void* a = std::malloc(kA); const int line_a = __LINE__;
    ASSERT_EQ(at_line(liveheap::take_peak_snapshot(), line_a).size, kA) << "round " << round;
    std::free(a);
    void* b = std::malloc(kB);
    ASSERT_TRUE(wait_for_recorder());
    const Snapshot peak = liveheap::take_peak_snapshot();
    ASSERT_EQ(at_line(peak, line_a).size, kA) << "round " << round << ": " << held(peak);
    std::free(b);
  }
}

// A rise smaller than the margin (1/32 of the record, at least 64 KiB) keeps the old record.
TEST(Peak, ARiseWithinTheMarginIsNotRecorded) {
  TracingSession tracing({Mode::exact, 16});
  void* a = std::malloc(kA); const int line_a = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a, kA));
  void* small = std::malloc(16 * 1024); const int line_small = __LINE__;
  ASSERT_TRUE(wait_for_recorder());
  EXPECT_EQ(at_line(liveheap::take_peak_snapshot(), line_small).size, 0);
  void* big = std::malloc(kA / 16); const int line_big = __LINE__;  // 1/16: past the margin
  EXPECT_TRUE(wait_for_record(line_big, kA / 16));
  const Snapshot peak = liveheap::take_peak_snapshot();
  EXPECT_EQ(at_line(peak, line_small).size, 16 * 1024);
  EXPECT_EQ(at_line(peak, line_a).size, kA);
  std::free(big);
  std::free(small);
  std::free(a);
}

// The allocation that takes the heap past the record's mark wakes the recorder (no timer
// polls): a burst held only until the recorder has looked, and freed at once, is the record.
// `allocate` runs on the thread under test and returns the line of its malloc.
void expect_burst_recorded(const std::function<int(void**)>& allocate) {
  TracingSession tracing({Mode::exact, 16});
  ASSERT_TRUE(wait_for_recorder());
  const std::uint64_t looks = liveheap::peak::looks();
  void* burst = nullptr;
  const int line = allocate(&burst);
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience, [&] {
    return liveheap::peak::looks() > looks && liveheap::peak::caught_up();
  }, std::chrono::milliseconds(1))) << ": the burst never woke the recorder";
  std::free(burst);
  ASSERT_TRUE(wait_for_recorder());
  const Snapshot peak = liveheap::take_peak_snapshot();
  EXPECT_EQ(at_line(peak, line).size, kA);
  EXPECT_EQ(at_line(liveheap::take_snapshot(), line).size, 0);
}

TEST(Peak, ABurstWakesTheRecorder) {
  expect_burst_recorded([](void** burst) {
    *burst = std::malloc(kA); return __LINE__;
  });
}

// From a thread of its own, the check comes with the thread's growth (each 64 KiB of it).
TEST(Peak, ABurstOfAnotherThreadWakesTheRecorder) {
  expect_burst_recorded([](void** burst) {
    int line = 0;
    std::thread thread([&] {
      *burst = std::malloc(kA); line = __LINE__;  // alone on its line: not the thread's own state
    });
    thread.join();
    return line;
  });
}

// While the heap stays under the mark nothing wakes the recorder: allocations within the
// margin, then time (what a 5 ms poll would have filled with looks).
TEST(Peak, TheRecorderSleepsWhileTheHeapStaysUnderTheMark) {
  TracingSession tracing({Mode::exact, 16});
  void* a = std::malloc(kA); const int line_a = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a, kA));
  // The thread's first look, then caught up: a thread not yet scheduled has been sent
  // nothing and answered nothing, and its first look would count below.
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience, [] {
    return liveheap::peak::looks() > 0 && liveheap::peak::caught_up();
  }, std::chrono::milliseconds(1)));
  const std::uint64_t looks = liveheap::peak::looks();
  for (int i = 0; i < 1000; ++i) std::free(std::malloc(4096));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(liveheap::peak::looks(), looks);
  EXPECT_TRUE(liveheap::peak::caught_up());
  std::free(a);
}

// A recorder woken after a burst had fallen records below the peak, and its mark with it:
// a later rise past that mark, still under the peak, wakes it again (it is what the heap
// held at its highest since), and the peak itself is kept.
TEST(Peak, ARisePastALateRecordsMarkUnderThePeakWakesTheRecorder) {
  liveheap::Options deferred{Mode::exact, 16};
  deferred.defer_recorders = true;  // no recorder of this session: the test plays it
  TracingSession tracing(deferred);
  void* burst = std::malloc(kA);
  std::free(burst);
  // A recorder thread an earlier test of this process started may have woken: settled.
  ASSERT_TRUE(wait_for_recorder());
  liveheap::engine::set_peak_mark(kB / 2);  // the late record's
  liveheap::engine::peak_signal::take();
  const std::uint32_t sent = liveheap::engine::peak_signal::sent();
  void* rise = std::malloc(kB);
  EXPECT_NE(liveheap::engine::peak_signal::sent(), sent) << "the rise past the mark woke no one";
  EXPECT_GE(liveheap::traced_memory().peak, kA);
  std::free(rise);
}

}  // namespace
