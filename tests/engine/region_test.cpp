// The sample region: freed runs reused without madvise, zero only where asked, the last run
// extended and a block grown where it is, kept bytes bounded by a budget that follows the
// recent peak and given back by trim; a thread's last one-page run kept for its next
// sample; a forged or twice-freed block aborts.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sample_region.hpp"
#include "thread_state.hpp"

namespace liveheap::engine {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
// A block of n bytes takes its pages plus the 64-byte header, rounded up to pages.
constexpr std::int64_t run_bytes(std::size_t n) {
  return static_cast<std::int64_t>((64 + n + 4095) / 4096 * 4096);
}

class Region : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(reserve_sample_region());
    region_trim();  // no kept run left by an earlier test
    ASSERT_EQ(region_kept_bytes(), 0);
  }
};

// free() lets a sampled block through by its address alone: 0 or 64 bytes past a page
// boundary, whatever its alignment.
TEST_F(Region, EveryBlockSitsWhereFreeLooksForSamples) {
  for (const std::size_t alignment : {0ul, 16ul, 64ul, 128ul, 256ul, 2048ul, 4096ul, 8192ul, 1ul << 16}) {
    for (const std::size_t size : {1ul, 4000ul, 5000ul, 1ul << 20}) {
      void* p = region_allocate(size, alignment, false);
      ASSERT_NE(p, nullptr) << alignment << " " << size;
      EXPECT_TRUE(may_be_sampled(p)) << alignment << " " << size;
      if (alignment != 0) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u) << alignment;
      }
      std::memset(p, 0x77, size);
      EXPECT_EQ(region_live_header(p)->size, size);
      region_release(p);
    }
  }
}

TEST_F(Region, AFreedRunIsReusedAsItWasWithoutMadvise) {
  auto* p = static_cast<unsigned char*>(region_allocate(3 * kMiB, 0, false));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0xab, 3 * kMiB);
  const std::uint64_t calls = region_madvise_calls();
  region_release(p);
  EXPECT_EQ(region_kept_bytes(), run_bytes(3 * kMiB));
  auto* q = static_cast<unsigned char*>(region_allocate(3 * kMiB, 0, false));
  EXPECT_EQ(q, p);        // best fit: the same run, still resident
  EXPECT_EQ(q[0], 0xab);  // malloc's block is not zeroed (as glibc's is not)
  EXPECT_EQ(q[3 * kMiB - 1], 0xab);
  EXPECT_EQ(region_kept_bytes(), 0);
  EXPECT_EQ(region_madvise_calls(), calls);
  region_release(q);
}

TEST_F(Region, ZeroedBlocksReadZeroAfterDirtyRunsAreSplitAndReused) {
  auto* big = static_cast<unsigned char*>(region_allocate(4 * kMiB, 0, false));
  std::memset(big, 0xff, 4 * kMiB);
  region_release(big);
  // Both halves of the dirty run, each asked for zero: the second comes from the remainder.
  for (int i = 0; i < 2; ++i) {
    auto* z = static_cast<unsigned char*>(region_allocate(kMiB + 4096 * i, 0, true));
    ASSERT_NE(z, nullptr);
    for (std::size_t b = 0; b < kMiB; b += 509) ASSERT_EQ(z[b], 0) << i << " " << b;
    std::memset(z, 0xee, kMiB);
    region_release(z);
  }
  // Bytes written past the request up to malloc_usable_size are zeroed on reuse too.
  auto* small = static_cast<unsigned char*>(region_allocate(100, 0, false, 104));
  const std::size_t usable = region_usable_size(small);
  EXPECT_EQ(usable, 104u);  // what it was given: the allocator underneath's usable size
  std::memset(small, 0x5a, usable);
  region_release(small);
  auto* again = static_cast<unsigned char*>(region_allocate(4000, 0, true));
  for (std::size_t b = 0; b < 4000; ++b) ASSERT_EQ(again[b], 0) << b;
  region_release(again);
}

TEST_F(Region, AResizedBlockStaysInItsRunWhileItTakesAsManyPages) {
  auto* p = static_cast<unsigned char*>(region_allocate(100, 0, false, 104));
  const std::int64_t overhead = region_overhead_bytes();
  std::memset(p, 0x5a, 104);
  ASSERT_TRUE(region_resize(p, 40, 40));
  EXPECT_EQ(region_header(p)->size, 40u);
  EXPECT_EQ(region_usable_size(p), 40u);
  EXPECT_EQ(region_overhead_bytes(), overhead + 60);    // its bytes are fewer, its run the same
  EXPECT_TRUE(region_resize(p, 4096 - 64, 4096 - 64));  // the whole page
  EXPECT_FALSE(region_resize(p, 4096, 4096));           // a second page
  EXPECT_FALSE(region_resize(p, 4096 - 64, 4096 - 63));
  ASSERT_TRUE(region_resize(p, 40, 40));
  region_release(p);
  // What it held before it shrank is zeroed on reuse too.
  auto* again = static_cast<unsigned char*>(region_allocate(200, 0, true));
  ASSERT_EQ(again, p);
  for (std::size_t b = 0; b < 200; ++b) ASSERT_EQ(again[b], 0) << b;
  region_release(again);
  auto* big = static_cast<unsigned char*>(region_allocate(kMiB, 0, false));
  EXPECT_FALSE(region_resize(big, 16, 24));               // one page would do: it moves
  EXPECT_TRUE(region_resize(big, kMiB - 16, kMiB - 16));  // still 257 pages with its header
  region_release(big);
}

TEST_F(Region, TheLastRunFreedIsExtendedForALargerBlock) {
  auto* p = static_cast<unsigned char*>(region_allocate(2 * kMiB, 0, false));
  std::memset(p, 0x33, 2 * kMiB);
  region_release(p);  // kept, at the end of the used range
  const std::uint64_t calls = region_madvise_calls();
  // As glibc extends its top chunk: the kept pages are reused, the rest is fresh; taken
  // anew past them, the block would leave them resident beside it.
  auto* q = static_cast<unsigned char*>(region_allocate(5 * kMiB, 0, true));
  ASSERT_EQ(q, p);
  EXPECT_EQ(region_kept_bytes(), 0);
  for (std::size_t b = 0; b < 5 * kMiB; b += 509) ASSERT_EQ(q[b], 0) << b;
  EXPECT_EQ(q[2 * kMiB - 1], 0);
  EXPECT_EQ(region_madvise_calls(), calls);
  region_release(q);
}

TEST_F(Region, ABlockGrowsWhereItIsIntoTheEndOfTheUsedRangeOrAFreeRunAfterIt) {
  auto* p = static_cast<unsigned char*>(region_allocate(kMiB, 0, false));
  auto* q = static_cast<unsigned char*>(region_allocate(3 * kMiB, 0, false));
  ASSERT_EQ(region_header(q)->run, region_header(p)->run + run_bytes(kMiB));
  ASSERT_TRUE(region_grow(q, 4 * kMiB, 4 * kMiB));  // the last run: the used range grows
  EXPECT_EQ(std::int64_t{region_header(q)->run_pages} * 4096, run_bytes(4 * kMiB));
  std::memset(q, 0xff, 4 * kMiB);
  EXPECT_FALSE(region_grow(p, 2 * kMiB, 2 * kMiB));    // q's run follows: p would move
  EXPECT_FALSE(region_grow(p, kMiB - 64, kMiB - 64));  // no growth: region_resize's
  region_release(q);                                   // kept, and written all over
  const std::uint64_t calls = region_madvise_calls();
  ASSERT_TRUE(region_grow(p, kMiB + 4096, kMiB + 4096));  // one page of q's run
  EXPECT_EQ(region_usable_size(p), kMiB + 4096);
  EXPECT_EQ(region_kept_bytes(), run_bytes(4 * kMiB) - 4096);
  // The rest of q's run goes to another block, so that p's run, freed, merges with none:
  // the page it took from q must still count as written.
  void* r = region_allocate(4 * kMiB - 4096, 0, false);
  ASSERT_EQ(region_header(r)->run, region_header(p)->run + run_bytes(kMiB) + 4096);
  region_release(p);
  const std::size_t whole_run = run_bytes(kMiB) + 4096 - 64;
  auto* z = static_cast<unsigned char*>(region_allocate(whole_run, 0, true));
  ASSERT_EQ(z, p);
  for (std::size_t b = 0; b < whole_run; ++b) ASSERT_EQ(z[b], 0) << b;
  EXPECT_EQ(region_madvise_calls(), calls);
  region_release(z);
  region_release(r);
}

TEST_F(Region, KeptRunsFollowTheRecentPeakOfLiveRuns) {
  // A burst of 16 blocks live at once, then freed: all kept, the region was there just now.
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(region_allocate(kMiB, 0, false));
  for (void* p : blocks) region_release(p);
  EXPECT_EQ(region_kept_bytes(), 16 * run_bytes(kMiB));
  // Two windows of allocations with one block live at a time: the burst is past, and what
  // is kept comes down to the floor.
  for (int i = 0; i < 2 * kKeptRunsWindow; ++i) region_release(region_allocate(kMiB, 0, false));
  EXPECT_EQ(region_kept_limit(), std::int64_t{2} << 20);
  EXPECT_LE(region_kept_bytes(), std::int64_t{2} << 20);
  EXPECT_GE(region_kept_bytes(), run_bytes(kMiB));  // the block freed last, at least
}

TEST_F(Region, KeptBytesStayWithinTheBudgetAndTrimGivesThemAllBack) {
  std::vector<void*> blocks;
  for (int i = 0; i < 40; ++i) blocks.push_back(region_allocate(4 * kMiB, 0, false));
  const std::uint64_t calls = region_madvise_calls();
  for (void* p : blocks) region_release(p);
  const std::int64_t kept = region_kept_bytes();
  // What the region needs again to be back at its peak (160 MiB), at most the ceiling: all
  // of it, since the oldest runs give back only what is over it.
  EXPECT_EQ(kept, std::int64_t{64} << 20);
  EXPECT_GT(region_madvise_calls(), calls);  // the oldest went back
  EXPECT_EQ(region_trim(), kept);
  EXPECT_EQ(region_kept_bytes(), 0);
  EXPECT_EQ(region_trim(), 0);
}

TEST_F(Region, ARunNotKeptGoesBackAtOnce) {
  void* p = region_allocate(2 * kMiB, 0, false);
  const std::uint64_t calls = region_madvise_calls();
  region_release(p, false);
  EXPECT_EQ(region_madvise_calls(), calls + 1);
  EXPECT_EQ(region_kept_bytes(), 0);
}

// Runs `body` on a thread of its own holding the engine's thread slot `slot` (0-based), as a
// thread that traced something does.
template <typename Body>
void on_thread_with_slot(std::uint32_t slot, Body body) {
  std::thread([&] {
    t_thread.slot = slot + 1;
    body();
  }).join();
}

TEST_F(Region, AThreadKeepsTheOnePageRunItFreedLastForItsNextOnePageBlock) {
  on_thread_with_slot(0, [] {
    const std::int64_t live = region_live_bytes();
    auto* p = static_cast<unsigned char*>(region_allocate(100, 0, false, 104));
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5a, 104);
    EXPECT_EQ(region_live_bytes(), live + 4096);
    const std::int64_t overhead = region_overhead_bytes();
    region_release(p);
    // Kept for this thread: not live, apart from the kept runs, its whole page held.
    EXPECT_EQ(region_thread_kept_bytes(), 4096);
    EXPECT_EQ(region_kept_bytes(), 0);
    EXPECT_EQ(region_live_bytes(), live);
    EXPECT_EQ(region_overhead_bytes(), overhead + 100);
    auto* q = static_cast<unsigned char*>(region_allocate(200, 0, false));
    EXPECT_EQ(q, p);  // the same run, not one from the shared lists
    EXPECT_EQ(q[103], 0x5a);
    EXPECT_EQ(region_thread_kept_bytes(), 0);
    region_release(q);
    auto* z = static_cast<unsigned char*>(region_allocate(4000, 0, true));
    EXPECT_EQ(z, p);
    for (std::size_t b = 0; b < 4000; ++b) ASSERT_EQ(z[b], 0) << b;  // what it wrote is zeroed
    std::memset(z, 0x33, 4000);
    region_release(z);
    // A block of two pages does not take it, and another thread does not find it.
    void* two = region_allocate(5000, 0, false);
    EXPECT_NE(two, static_cast<void*>(p));
    region_release(two);
    on_thread_with_slot(1, [p] {
      void* other = region_allocate(100, 0, false);
      EXPECT_NE(other, static_cast<void*>(p));
      region_release(other);
    });
  });
  // Trim gives back the runs threads keep too, even of threads that are gone.
  EXPECT_EQ(region_thread_kept_bytes(), 2 * 4096);
  region_trim();
  EXPECT_EQ(region_thread_kept_bytes(), 0);
  EXPECT_EQ(region_kept_bytes(), 0);
}

TEST_F(Region, AForkedChildKeepsOnlyTheForkingThreadsRunForItself) {
  const std::uint32_t saved = t_thread.slot;
  t_thread.slot = 1;  // this thread holds slot 0 for the test
  region_release(region_allocate(100, 0, false));
  on_thread_with_slot(1, [] { region_release(region_allocate(100, 0, false)); });
  ASSERT_EQ(region_thread_kept_bytes(), 2 * 4096);
  const pid_t child = fork();
  if (child == 0) {
    // The other thread does not exist here: its run joined the kept runs.
    const bool moved = region_thread_kept_bytes() == 4096 && region_kept_bytes() == 4096;
    _exit(moved ? 0 : 1);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(region_thread_kept_bytes(), 2 * 4096);  // the parent's threads keep theirs
  t_thread.slot = saved;
  region_trim();
}

using RegionDeathTest = Region;

TEST_F(RegionDeathTest, ADoubleFreeOfARunAThreadKeepsAborts) {
  // On this thread (death tests fork it), as the holder of slot 0 for the test.
  const std::uint32_t saved = t_thread.slot;
  t_thread.slot = 1;
  void* p = region_allocate(100, 0, false);
  region_release(p);
  EXPECT_DEATH(region_release(p), "^liveheap: free\\(\\): double free of sampled block 0x[0-9a-f]+\n");
  t_thread.slot = saved;
  region_trim();
}

TEST_F(RegionDeathTest, ADoubleFreeAborts) {
  void* p = region_allocate(kMiB, 0, false);
  region_release(p);
  EXPECT_DEATH(region_release(p), "^liveheap: free\\(\\): double free of sampled block 0x[0-9a-f]+\n");
}

TEST_F(RegionDeathTest, AForgedHeaderDoesNotFreeAnotherBlock) {
  // A copy of a live block's header in front of a pointer into another block's data: it
  // names the live block's run, so trusting it would free (and zero) that block's pages.
  auto* victim = static_cast<unsigned char*>(region_allocate(kMiB, 0, false));
  std::memset(victim, 0x77, kMiB);
  auto* host = static_cast<unsigned char*>(region_allocate(3 * 4096, 0, false));
  unsigned char* forged_header = host + 4096 - 64;  // the start of host's second page
  std::memcpy(forged_header, region_header(victim), sizeof(SampleHeader));
  EXPECT_DEATH(region_release(forged_header + 64), "^liveheap: free\\(\\): invalid pointer 0x");
  // Past the used range, or too close to a page start to have a header: refused unread.
  auto* unused = host + (std::size_t{1} << 30);
  ASSERT_TRUE(is_sampled_block(unused));
  EXPECT_DEATH(region_release(unused), "invalid pointer");
  EXPECT_DEATH(region_release(host + 4096 - 56), "invalid pointer");
  EXPECT_EQ(victim[kMiB / 2], 0x77);
  region_release(host);
  region_release(victim);
}

}  // namespace
}  // namespace liveheap::engine
