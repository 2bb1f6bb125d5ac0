// Cumulative allocation totals per stack: exact counts in exact mode, kept across clear().
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#include "../support/tracing_session.hpp"
#include "liveheap/tracker.hpp"

namespace {

using test_support::TracingSession;

// The trace whose user frame is this file at `line`, or nullptr.
const liveheap::Trace* find_trace(const liveheap::Snapshot& s, int line) {
  for (const liveheap::Trace& t : s.traces()) {
    const std::size_t user = liveheap::user_frame_index(t.traceback);
    if (user >= t.traceback.size()) continue;
    const liveheap::Frame& f = t.traceback[user];
    if (f.line == static_cast<unsigned>(line) && f.file.ends_with("alloc_totals_test.cpp"))
      return &t;
  }
  return nullptr;
}

// Allocations counted at `line` of this file, whatever called it.
std::int64_t alloc_count_at(const liveheap::Snapshot& s, int line) {
  std::int64_t n = 0;
  for (const liveheap::Trace& t : s.traces()) {
    const std::size_t user = liveheap::user_frame_index(t.traceback);
    if (user < t.traceback.size() && t.traceback[user].line == static_cast<unsigned>(line) &&
        t.traceback[user].file.ends_with("alloc_totals_test.cpp"))
      n += t.alloc_count;
  }
  return n;
}

[[gnu::noinline]] int transient_loop(int n) {
  int line = 0;
  for (int i = 0; i < n; ++i) {
    void* p = std::malloc(700); line = __LINE__; std::memset(p, 1, 8); std::free(p);
  }
  return line;
}

TEST(AllocTotals, TransientLoopCountsEveryAllocationButNothingLive) {
  TracingSession tracing({liveheap::Mode::exact, 32});
  const int line = transient_loop(250);
  void* kept = std::malloc(4321); const int kept_line = __LINE__;

  const liveheap::Snapshot all = liveheap::take_allocation_snapshot();
  const liveheap::Trace* t = find_trace(all, line);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->alloc_count, 250);
  EXPECT_EQ(t->alloc_size, 250 * 700);
  EXPECT_EQ(t->size, 0);
  EXPECT_EQ(t->count, 0);
  const liveheap::Trace* k = find_trace(all, kept_line);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->alloc_size, 4321);
  EXPECT_EQ(k->size, 4321);
  EXPECT_EQ(k->count, 1);

  // The live snapshot leaves the transient stack out, and carries the totals of the rest.
  const liveheap::Snapshot live = liveheap::take_snapshot();
  EXPECT_EQ(find_trace(live, line), nullptr);
  ASSERT_NE(find_trace(live, kept_line), nullptr);
  EXPECT_EQ(find_trace(live, kept_line)->alloc_count, 1);

  // clear() forgets what is live, never what was allocated (scrapers take deltas).
  liveheap::clear();
  const liveheap::Snapshot cleared = liveheap::take_allocation_snapshot();
  ASSERT_NE(find_trace(cleared, kept_line), nullptr);
  EXPECT_EQ(find_trace(cleared, kept_line)->size, 0);
  EXPECT_EQ(find_trace(cleared, kept_line)->alloc_size, 4321);
  transient_loop(50);  // from another call site: another stack, the same line
  EXPECT_EQ(alloc_count_at(liveheap::take_allocation_snapshot(), line), 300);
  std::free(kept);
}

// A failed realloc puts its block back: it was neither freed nor allocated again.
TEST(AllocTotals, FailedReallocAllocatesNothing) {
  TracingSession tracing({liveheap::Mode::exact, 32});
  void* p = std::malloc(96); const int line = __LINE__;
  void* q = std::realloc(p, ~std::size_t{0} >> 2);
  ASSERT_EQ(q, nullptr);
  const liveheap::Snapshot all = liveheap::take_allocation_snapshot();
  const liveheap::Trace* t = find_trace(all, line);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->alloc_count, 1);
  EXPECT_EQ(t->size, 96);
  std::free(p);
}

}  // namespace
