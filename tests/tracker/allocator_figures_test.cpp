// read_allocator() with glibc: mallinfo2() walks every free chunk while it holds the arenas'
// locks (the host's malloc waits), so it is read at most once per 1000x what its last read
// took, and the figures served in between say how old they are.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "liveheap/allocator.hpp"

namespace {

std::int64_t figure(const liveheap::AllocatorInfo& info, const std::string& name) {
  for (const auto& [n, bytes] : info.figures)
    if (n == name) return bytes;
  ADD_FAILURE() << "no figure " << name;
  return -1;
}

TEST(AllocatorFigures, GlibcMallinfoIsReadAtMostOncePerThousandTimesItsCost) {
  if (liveheap::allocator_name() != "glibc") GTEST_SKIP() << "glibc serves malloc only there";
  using Clock = std::chrono::steady_clock;
  // 100,000 free chunks that cannot merge (every other block): a read of about a millisecond.
  std::vector<void*> blocks(200'000);
  for (void*& p : blocks) p = std::malloc(200);
  for (std::size_t i = 0; i < blocks.size(); i += 2) std::free(blocks[i]), blocks[i] = nullptr;
  std::vector<void*> more(40'000);

  const liveheap::AllocatorInfo first = liveheap::read_allocator();  // the process's first
  const Clock::time_point first_at = Clock::now();
  EXPECT_LE(first.figures_age_ms, 50) << "read for this call";
  ASSERT_GT(first.read_ms, 0.05) << "a walk of 100,000 chunks cannot take under 50 us";
  const std::int64_t used_before = figure(first, "uordblks");

  // 8 MB more in use: a fresh read would see it; within 1000x the first read's cost there is
  // no fresh read.
  for (void*& p : more) p = std::malloc(200);
  const liveheap::AllocatorInfo second = liveheap::read_allocator();
  const double since_first_ms = std::chrono::duration<double, std::milli>(Clock::now() - first_at).count();
  ASSERT_LT(since_first_ms, first.read_ms * 1000) << "the machine stalled: nothing to check";
  EXPECT_EQ(figure(second, "uordblks"), used_before) << "served from the first read";
  EXPECT_GE(static_cast<double>(second.figures_age_ms), since_first_ms - 1);
  EXPECT_EQ(second.read_ms, first.read_ms);

  // Past the quiet time, a fresh read sees the frees.
  std::this_thread::sleep_until(
      first_at + std::chrono::microseconds(static_cast<std::int64_t>(first.read_ms * 1000 * 1000) + 10'000));
  const liveheap::AllocatorInfo third = liveheap::read_allocator();
  EXPECT_GE(figure(third, "uordblks"), used_before + 200 * 40'000) << "read fresh";
  EXPECT_LE(third.figures_age_ms, 50);

  // Whoever trims looks at the figures next: after release_free_memory() the read is fresh.
  std::vector<void*> after_trim(40'000);
  for (void*& p : after_trim) p = std::malloc(200);
  EXPECT_EQ(figure(liveheap::read_allocator(), "uordblks"), figure(third, "uordblks"));
  EXPECT_EQ(liveheap::release_free_memory().rfind("malloc_trim(0)", 0), 0u);
  EXPECT_GE(figure(liveheap::read_allocator(), "uordblks"), figure(third, "uordblks") + 200 * 40'000);
  for (void* p : blocks) std::free(p);
  for (void* p : more) std::free(p);
  for (void* p : after_trim) std::free(p);
}

}  // namespace
