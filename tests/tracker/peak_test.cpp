// take_peak_snapshot: what was live at the traced heap's high-water mark, recorded by a
// liveheap thread, exactly, after the blocks that made the peak are gone.
#include <chrono>
#include <cstdlib>
#include <optional>

#include <gtest/gtest.h>

#include "../support/tracing_session.hpp"
#include "../support/wait.hpp"
#include "liveheap/tracker.hpp"
#include "peak.hpp"

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

// Until the peak record holds `bytes` at `line`.
testing::AssertionResult wait_for_record(int line, std::int64_t bytes) {
  return test_support::wait_until(test_support::kPatience, [&] {
    return at_line(liveheap::take_peak_snapshot(), line).size == bytes;
  }, std::chrono::milliseconds(1)) << ": the peak record never held " << bytes << " B at line " << line;
}

// Until the recorder's thread has compared the heap with the record `n` more times: what it
// would record, it has.
testing::AssertionResult wait_for_polls(std::uint64_t n) {
  const std::uint64_t until = liveheap::peak::polls() + n;
  return test_support::wait_until(test_support::kPatience,
                                  [&] { return liveheap::peak::polls() >= until; },
                                  std::chrono::milliseconds(1))
         << ": the peak thread polled fewer than " << n << " times";
}

constexpr std::int64_t kA = 8 << 20;
constexpr std::int64_t kB = 2 << 20;

TEST(Peak, KeepsWhatWasLiveAtTheHighWaterMark) {
  std::optional<TracingSession> tracing(std::in_place, liveheap::Options{Mode::exact, 16});
  void* a = std::malloc(kA); const int line_a = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a, kA));
  std::free(a);
  void* b = std::malloc(kB); const int line_b = __LINE__;
  ASSERT_TRUE(wait_for_polls(10));  // the record stays

  const Snapshot peak = liveheap::take_peak_snapshot();
  EXPECT_EQ(at_line(peak, line_a).size, kA);
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

// A rise smaller than the margin (1/32 of the record, at least 64 KiB) keeps the old record.
TEST(Peak, ARiseWithinTheMarginIsNotRecorded) {
  TracingSession tracing({Mode::exact, 16});
  void* a = std::malloc(kA); const int line_a = __LINE__;
  ASSERT_TRUE(wait_for_record(line_a, kA));
  void* small = std::malloc(16 * 1024); const int line_small = __LINE__;
  ASSERT_TRUE(wait_for_polls(10));
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

}  // namespace
