// Sampled mode: unbiased estimates of known truth, and sampled blocks that behave like any
// other block (freed anywhere, realloc'd across the sampled/unsampled line, aligned).
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../support/tracing_session.hpp"
#include "liveheap/tracker.hpp"
#include "engine.hpp"
#include "sample_region.hpp"

extern "C" void* __libc_malloc(std::size_t);
extern "C" void __libc_free(void*);

namespace {

using test_support::TracingSession;
using liveheap::Mode;
constexpr std::uint64_t kInterval = 512 * 1024;

struct Estimate {
  double bytes = 0;
  double count = 0;
};

int g_known_line = 0;

// Allocates `n` blocks of `size` at one known line, on a fresh thread (a fresh countdown,
// seeded from the session's seed), estimates them, frees them. `before` runs once tracing
// has started.
Estimate sample_known(std::uint64_t seed, std::size_t size, std::size_t n,
                      const std::function<void()>& before = {}, bool defer_recorders = false) {
  liveheap::Options options{Mode::sampled, 16, kInterval, seed};
  options.defer_recorders = defer_recorders;
  TracingSession tracing(options);
  if (before) before();
  std::vector<void*> blocks;
  blocks.reserve(n);
  std::thread([&] {
    for (std::size_t i = 0; i < n; ++i) {
      blocks.push_back(std::malloc(size)); g_known_line = __LINE__;
    }
  }).join();
  Estimate e;
  for (const auto& s : liveheap::take_snapshot().statistics(liveheap::KeyType::line)) {
    if (s.traceback.at(0).line == static_cast<unsigned>(g_known_line)) {
      e.bytes = static_cast<double>(s.size);
      e.count = static_cast<double>(s.count);
    }
  }
  for (void* p : blocks) std::free(p);
  return e;
}

// Relative standard error of the estimate of n blocks of s bytes: each block is sampled
// with p = 1 - exp(-s/R) and weighted 1/p, so Var = n s^2 (1 - p) / p.
double expected_relative_error(double size, double n) {
  const double p = -std::expm1(-size / static_cast<double>(kInterval));
  return std::sqrt((1 - p) / (n * p));
}

TEST(Sampled, TwoHundredMegabytesEstimatedWithinFivePercent) {
  // 200 MiB in 1 KiB, 64 KiB and 2 MiB blocks. Expected error (1 sigma, from
  // expected_relative_error): 100 MiB of 1 KiB blocks 7.1% = 7.1 MiB; 60 MiB of 64 KiB
  // 8.8% = 5.3 MiB; 40 MiB of 2 MiB 3.1% = 1.2 MiB; together sqrt(7.1^2 + 5.3^2 + 1.2^2)
  // = 8.9 MiB = 4.5% of 200 MiB. ~400 samples can do no better: 1/sqrt(400) = 5%.
  // The seed is fixed, so the result is repeatable; the next test checks, over many
  // seeds, that the estimator is unbiased and its error is what this comment says.
  const std::uint64_t seed = 20261122;
  const Estimate small = sample_known(seed, 1024, 102400);
  const Estimate medium = sample_known(seed + 1, 65536, 960);
  const Estimate large = sample_known(seed + 2, 2 << 20, 20);
  const double truth = 200.0 * 1024 * 1024;
  const double estimate = small.bytes + medium.bytes + large.bytes;
  EXPECT_NEAR(estimate / truth, 1.0, 0.05) << "estimated " << estimate << " of " << truth;
  // Counts are dominated by the 1 KiB blocks: 7.1% (1 sigma); allow 3 sigma.
  const double blocks = 102400 + 960 + 20;
  EXPECT_NEAR((small.count + medium.count + large.count) / blocks, 1.0,
              3 * expected_relative_error(1024, 102400));
}

// The bytes sample_known() estimates in a child forked from here (the same state each
// time, and no liveheap thread: the recorders wait), with a thread that allocates 4 MiB as
// liveheap's own first, or that does nothing.
double estimate_in_a_child(std::uint64_t seed, bool own_allocations_first) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    const auto own_thread = [&] {
      std::thread([&] {
        liveheap::IgnoreScope own;  // as liveheap's recorders and reports allocate
        for (int i = 0; own_allocations_first && i < 64; ++i) std::free(std::malloc(64 * 1024));
      }).join();
    };
    const Estimate e = sample_known(seed, 1024, 20000, own_thread, true);
    (void)!::write(fds[1], &e.bytes, sizeof e.bytes);
    ::_exit(0);
  }
  ::close(fds[1]);
  double bytes = -1;
  if (::read(fds[0], &bytes, sizeof bytes) != static_cast<ssize_t>(sizeof bytes)) bytes = -1;
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  return bytes;
}

// A seeded session is repeatable whatever liveheap's own threads allocate, and when: they
// take no place in the order in which threads draw their streams from the seed (a peak
// recorder that woke before the program's thread shifted its stream, and the estimate
// above moved from within 5% to 7.9% off).
TEST(Sampled, ASeededSessionIsRepeatableWhateverLiveheapsThreadsAllocateFirst) {
  const double quiet = estimate_in_a_child(20261126, false);
  const double after_own = estimate_in_a_child(20261126, true);
  ASSERT_GT(quiet, 0);
  EXPECT_EQ(after_own, quiet);
}

TEST(Sampled, EstimatesAreUnbiasedWithTheStatedError) {
  // 48 seeds x 20 MiB of 4 KiB blocks: each estimate has a relative error of ~16% (1 sigma),
  // their mean ~2.3%. Unbiased: the mean lands within 3 sigma of the truth; and the
  // spread matches the formula within 30%.
  constexpr int kSeeds = 48;
  constexpr std::size_t kSize = 4096, kBlocks = 5120;
  const double truth = static_cast<double>(kSize * kBlocks);
  const double sigma = expected_relative_error(kSize, kBlocks);
  double sum = 0, sum_sq = 0;
  for (int s = 1; s <= kSeeds; ++s) {
    const double r = sample_known(1000 + s, kSize, kBlocks).bytes / truth;
    sum += r;
    sum_sq += r * r;
  }
  const double mean = sum / kSeeds;
  const double spread = std::sqrt(sum_sq / kSeeds - mean * mean);
  EXPECT_NEAR(mean, 1.0, 3 * sigma / std::sqrt(kSeeds)) << "sigma " << sigma;
  EXPECT_NEAR(spread / sigma, 1.0, 0.3) << "spread " << spread << " sigma " << sigma;
}

int g_made_line = 0, g_shrunk_line = 0;

// Strings as redis keeps them, on a fresh thread: `n` blocks made with `slack` bytes over
// their `length`, each shrunk to its length when malloc_usable_size says it has room over
// (sdsnewlen, then sdsRemoveFreeSpace). The estimate of the two lines together (a block not
// shrunk stays at the first, a shrunk one moves to the second, as in exact mode).
Estimate shrink_known(std::uint64_t seed, std::size_t length, std::size_t slack, std::size_t n) {
  TracingSession tracing({Mode::sampled, 16, kInterval, seed});
  std::vector<void*> blocks(n);
  std::thread([&] {
    for (void*& b : blocks) {
      b = std::malloc(length + slack); g_made_line = __LINE__;
      const std::size_t usable = malloc_usable_size(b);
      std::memset(b, 'x', usable);
      if (usable > length) {
        b = std::realloc(b, length); g_shrunk_line = __LINE__;
      }
    }
  }).join();
  Estimate e;
  for (const auto& s : liveheap::take_snapshot().statistics(liveheap::KeyType::line)) {
    const auto line = static_cast<int>(s.traceback.at(0).line);
    if (line == g_made_line || line == g_shrunk_line) {
      e.bytes += static_cast<double>(s.size);
      e.count += static_cast<double>(s.count);
    }
  }
  for (void* b : blocks) std::free(b);
  return e;
}

TEST(Sampled, StringsShrunkToTheirLengthAreEstimatedWithoutBias) {
  // 104 bytes is what glibc gives a request of 104: an unsampled string made exactly is
  // never shrunk. A sampled block used to report its whole page run as usable, so only the
  // sampled strings were shrunk, and the realloc drew them again at 104 bytes: most left the
  // sample, and the strings read as a few percent of their bytes. Made with 104 bytes of
  // slack, every string is shrunk: its draw (at 208 bytes) is kept.
  // Each run: ~100000 x p(104 or 208) = 160 or 320 samples, a relative error of 7.9% or
  // 5.6% (1 sigma, expected_relative_error); the mean of 8 seeds 2.8% or 2%. The seeds are
  // fixed, so the result is repeatable; 4 sigma of the mean: 11% and 8%.
  constexpr std::size_t kLength = 104, kBlocks = 100000;
  constexpr int kSeeds = 8;
  const double truth = static_cast<double>(kLength * kBlocks);
  for (const std::size_t slack : {std::size_t{0}, kLength}) {
    const double sigma = expected_relative_error(static_cast<double>(kLength + slack), kBlocks);
    double bytes = 0, count = 0;
    for (int s = 1; s <= kSeeds; ++s) {
      const Estimate e = shrink_known(3000 + s, kLength, slack, kBlocks);
      bytes += e.bytes / truth / kSeeds;
      count += e.count / kBlocks / kSeeds;
    }
    EXPECT_NEAR(bytes, 1.0, 4 * sigma / std::sqrt(kSeeds)) << "slack " << slack;
    EXPECT_NEAR(count, 1.0, 4 * sigma / std::sqrt(kSeeds)) << "slack " << slack;
  }
}

// A sampled block of `size` bytes: allocations of it until one is sampled (p(1) at a 4 KiB
// interval is 1/4096: 400000 tries fail with probability e^-97).
void* sampled_block(std::size_t size) {
  for (int i = 0; i < 400000; ++i) {
    void* p = std::malloc(size);
    if (liveheap::engine::is_sampled_block(p)) return p;
    std::free(p);
  }
  return nullptr;
}

TEST(Sampled, ASampledBlockReportsTheUsableSizeOfTheAllocatorUnderneath) {
  TracingSession tracing({Mode::sampled, 16, 4096, 21});
  for (const std::size_t size : {1ul, 24ul, 100ul, 104ul, 1000ul, 4000ul, 40000ul}) {
    // What glibc gives the same request, asked of glibc itself (glibc's malloc is what
    // follows liveheap in this process): its request + 8 rounded up to 16, at least 24.
    void* unsampled = __libc_malloc(size);
    const std::size_t glibc_usable = malloc_usable_size(unsampled);
    __libc_free(unsampled);
    EXPECT_EQ(glibc_usable, std::max<std::size_t>(24, (size + 8 + 15) / 16 * 16 - 8));
    auto* p = static_cast<unsigned char*>(sampled_block(size));
    ASSERT_NE(p, nullptr) << size;
    EXPECT_EQ(malloc_usable_size(p), glibc_usable) << size;
    std::memset(p, 0x3c, glibc_usable);  // all of it is the program's
    // Shrunk: still sampled, with the usable size of its new request.
    auto* q = static_cast<unsigned char*>(std::realloc(p, 10));
    ASSERT_TRUE(liveheap::engine::is_sampled_block(q)) << size;
    EXPECT_EQ(malloc_usable_size(q), 24u);
    for (int i = 0; i < 10; ++i) ASSERT_EQ(q[i], 0x3c);
    std::free(q);
  }
  // Grown past its usable size: the bytes past its request that the program wrote move too.
  auto* p = static_cast<unsigned char*>(sampled_block(100));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0x5e, malloc_usable_size(p));
  auto* grown = static_cast<unsigned char*>(std::realloc(p, 100000));
  for (int i = 0; i < 104; ++i) ASSERT_EQ(grown[i], 0x5e) << i;
  std::free(grown);
}

TEST(Sampled, BlocksFreedOnOtherThreadsAreUncounted) {
  TracingSession tracing({Mode::sampled, 16, 64 * 1024, 5});
  std::vector<void*> blocks(200);
  std::thread([&] {
    for (auto& b : blocks) b = std::malloc(1 << 20);  // p(sampled) = 1 - e^-16
  }).join();
  int sampled = 0;
  for (void* b : blocks) sampled += liveheap::engine::is_sampled_block(b);
  EXPECT_EQ(sampled, 200);
  EXPECT_NEAR(static_cast<double>(liveheap::traced_memory().current), 200.0 * (1 << 20),
              200.0 * (1 << 20) * 0.01);
  EXPECT_EQ(liveheap::engine_stats().live_blocks, 200u);
  std::thread([&] {
    for (void* b : blocks) std::free(b);
  }).join();
  EXPECT_EQ(liveheap::traced_memory().current, 0);
  EXPECT_EQ(liveheap::engine_stats().live_blocks, 0u);
}

TEST(Sampled, ReallocAcrossTheSampledLineKeepsTheBytes) {
  TracingSession tracing({Mode::sampled, 16, 64 * 1024, 9});
  auto* p = static_cast<unsigned char*>(std::malloc(4 << 20));
  ASSERT_TRUE(liveheap::engine::is_sampled_block(p));
  for (int i = 0; i < 64; ++i) p[i] = static_cast<unsigned char>(i);
  // Down to a size almost never sampled: it keeps its draw (p ~ 1 at 4 MiB), so it stays
  // sampled with its 16 bytes, moved to a run of one page, bytes intact.
  const std::int64_t traced = liveheap::traced_memory().current;
  auto* q = static_cast<unsigned char*>(std::realloc(p, 16));
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(liveheap::engine::is_sampled_block(q));
  for (int i = 0; i < 16; ++i) ASSERT_EQ(q[i], i);
  EXPECT_EQ(liveheap::engine_stats().live_blocks, 1u);
  EXPECT_EQ(traced - liveheap::traced_memory().current, (4 << 20) - 16);  // its weight is 1
  EXPECT_EQ(liveheap::engine::sample_live_header(q)->size, 16u);
  // And back up past its usable size: drawn again, sampled (p ~ 1), the bytes carried over.
  auto* r = static_cast<unsigned char*>(std::realloc(q, 8 << 20));
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(liveheap::engine::is_sampled_block(r));
  for (int i = 0; i < 16; ++i) ASSERT_EQ(r[i], i);
  EXPECT_EQ(liveheap::engine_stats().live_blocks, 1u);
  EXPECT_GE(malloc_usable_size(r), std::size_t{8} << 20);
  EXPECT_EQ(std::realloc(r, 0), nullptr);  // frees, as glibc does
  EXPECT_EQ(liveheap::traced_memory().current, 0);
}

// Sampled blocks live in glibc's heap (hosted) when glibc is underneath, else in the
// sample region: a test of both sets the home of the samples for its length.
class SampleHome {
 public:
  explicit SampleHome(bool hosted) noexcept { liveheap::engine::set_hosting(hosted); }
  ~SampleHome() { liveheap::engine::set_hosting(true); }
  SampleHome(const SampleHome&) = delete;
  SampleHome& operator=(const SampleHome&) = delete;
};

TEST(Sampled, AGrowingSampledBlockLeavesNoRunResidentBehindIt) {
  for (const bool hosted : {true, false}) {
    SampleHome home(hosted);
    TracingSession tracing({Mode::sampled, 16, 64 * 1024, 13});
    const std::int64_t kept = liveheap::engine_stats().region_kept_bytes;
    const std::int64_t hosted_before = liveheap::engine_stats().hosted_bytes;
    auto* p = static_cast<unsigned char*>(std::malloc(1 << 20));
    ASSERT_TRUE(liveheap::engine::is_sampled_block(p));
    ASSERT_EQ(liveheap::engine::is_hosted(p), hosted && liveheap::engine::next_is_glibc());
    for (int i = 0; i < 64; ++i) p[i] = static_cast<unsigned char>(i);
    // A buffer doubling as it fills: drawn again at each size (p ~ 1). Hosted, glibc's
    // realloc grows it; in the region, it grows where its run can, else moves and its old
    // run goes back; none stays resident as a kept run.
    for (std::size_t size = 2 << 20; size <= (std::size_t{16} << 20); size *= 2) {
      p = static_cast<unsigned char*>(std::realloc(p, size));
      ASSERT_NE(p, nullptr);
      ASSERT_TRUE(liveheap::engine::is_sampled_block(p)) << size;
      for (int i = 0; i < 64; ++i) ASSERT_EQ(p[i], i) << size;
      std::memset(p + size / 2, 0x6d, size / 2);
      EXPECT_EQ(liveheap::engine_stats().live_blocks, 1u);
      EXPECT_NEAR(static_cast<double>(liveheap::traced_memory().current), static_cast<double>(size),
                  size * 0.01);
      EXPECT_LE(liveheap::engine_stats().region_kept_bytes, kept) << size;
    }
    const liveheap::EngineStats stats = liveheap::engine_stats();
    if (liveheap::engine::is_hosted(p)) {
      // The block, its header and the slack before a page boundary: one chunk of glibc's.
      EXPECT_GE(stats.hosted_bytes - hosted_before, std::int64_t{16} << 20);
      EXPECT_LE(stats.hosted_bytes - hosted_before, (std::int64_t{16} << 20) + 4096 + 64);
    } else {
      EXPECT_GE(stats.region_live_bytes, std::int64_t{16} << 20);
    }
    EXPECT_LE(stats.region_kept_limit, std::int64_t{64} << 20);
    std::free(p);
    EXPECT_EQ(liveheap::traced_memory().current, 0);
    EXPECT_EQ(liveheap::engine_stats().hosted_bytes, hosted_before);
  }
}

// A sample small enough for the region (a page with its header) that grows to a hosted
// one's size moves to glibc's heap, its bytes with it; shrunk back, it stays there.
TEST(Sampled, ASmallSampleGrownLargeMovesToGlibcsHeap) {
  if (!liveheap::engine::next_is_glibc()) GTEST_SKIP() << "samples are hosted only by glibc";
  TracingSession tracing({Mode::sampled, 16, 4096, 23});
  auto* p = static_cast<unsigned char*>(sampled_block(100));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(liveheap::engine::in_sample_region(p));
  std::memset(p, 0x42, 100);
  auto* q = static_cast<unsigned char*>(std::realloc(p, 1 << 20));  // drawn again: p ~ 1
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(liveheap::engine::is_hosted(q));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(q[i], 0x42) << i;
  EXPECT_EQ(liveheap::engine_stats().live_blocks, 1u);
  auto* r = static_cast<unsigned char*>(std::realloc(q, 50));
  EXPECT_TRUE(liveheap::engine::is_hosted(r));
  for (int i = 0; i < 50; ++i) ASSERT_EQ(r[i], 0x42) << i;
  EXPECT_LE(liveheap::engine_stats().hosted_bytes, 4096 + 64 + 64 + 4096);
  std::free(r);
  EXPECT_EQ(liveheap::traced_memory().current, 0);
}

TEST(Sampled, AlignedSampledBlocksHonourTheirAlignment) {
  TracingSession tracing({Mode::sampled, 16, 64 * 1024, 11});
  for (std::size_t alignment : {16ul, 64ul, 256ul, 4096ul, 8192ul, 65536ul, 1ul << 21}) {
    void* a = nullptr;
    ASSERT_EQ(posix_memalign(&a, alignment, 3 << 20), 0);
    void* b = aligned_alloc(alignment, 3 << 20);
    void* c = memalign(alignment, 3 << 20);
    for (void* p : {a, b, c}) {
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(liveheap::engine::is_sampled_block(p));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u) << alignment;
      EXPECT_GE(malloc_usable_size(p), std::size_t{3} << 20);
      std::memset(p, 0xab, 3 << 20);  // the whole block is writable
      std::free(p);
    }
  }
  void* v = valloc(2 << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v) % 4096, 0u);
  std::free(v);
  EXPECT_EQ(liveheap::traced_memory().current, 0);
}

TEST(Sampled, CallocOfAReusedSampledRunIsZero) {
  for (const bool hosted : {true, false}) {
    SampleHome home(hosted);
    TracingSession tracing({Mode::sampled, 16, 64 * 1024, 13});
    for (int round = 0; round < 40; ++round) {
      const std::size_t size = round % 2 == 0 ? 1 << 20 : 30000;  // glibc's calloc, and cleared here
      auto* p = static_cast<unsigned char*>(std::calloc(1, size));
      if (round % 2 != 0 && !liveheap::engine::is_sampled_block(p)) {
        std::free(p);
        continue;
      }
      ASSERT_TRUE(liveheap::engine::is_sampled_block(p));
      for (std::size_t i = 0; i < size; i += 997) ASSERT_EQ(p[i], 0) << i;
      std::memset(p, 0xff, size);  // dirty it before its memory is reused
      std::free(p);
    }
  }
}

TEST(Sampled, SamplesOutliveTheirSession) {
  liveheap::start({Mode::sampled, 16, 64 * 1024, 17});
  void* p = std::malloc(4 << 20);
  void* q = std::malloc(4 << 20);
  ASSERT_TRUE(liveheap::engine::is_sampled_block(p));
  ASSERT_TRUE(liveheap::engine::is_sampled_block(q));
  liveheap::stop();
  const auto held = [] { return liveheap::engine::region_live_bytes() + liveheap::engine::hosted_bytes(); };
  const std::int64_t live = held();
  std::free(q);  // with no session: still known as a sample, and freed as one
  EXPECT_LT(held(), live);
  liveheap::start({Mode::exact, 16});
  const std::int64_t before = liveheap::traced_memory().current;
  std::free(p);  // from an older session: freed, never uncounted from this one
  EXPECT_EQ(liveheap::traced_memory().current, before);
  liveheap::stop();
}

TEST(Sampled, AFreedLargeSampleOfTheRegionIsKeptAsTrackerMemoryUntilTrimmed) {
  SampleHome home(false);
  TracingSession tracing({Mode::sampled, 16, 64 * 1024, 19});
  void* p = std::malloc(8 << 20);
  ASSERT_TRUE(liveheap::engine::is_sampled_block(p));
  liveheap::trim_tracker_memory();  // nothing kept from before
  std::free(p);
  const std::int64_t run = (64 + (8 << 20) + 4095) / 4096 * 4096;  // header + block, in pages
  EXPECT_EQ(liveheap::engine_stats().region_kept_bytes, run);
  const std::int64_t held = liveheap::tracker_memory();
  const std::uint64_t madvises = liveheap::engine_stats().region_madvise_calls;
  EXPECT_EQ(liveheap::trim_tracker_memory(), run);
  EXPECT_EQ(liveheap::tracker_memory(), held - run);
  EXPECT_EQ(liveheap::engine_stats().region_kept_bytes, 0);
  EXPECT_EQ(liveheap::engine_stats().region_madvise_calls, madvises + 1);
}

}  // namespace
