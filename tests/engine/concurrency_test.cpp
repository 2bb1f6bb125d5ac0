// The engine's tables under threads that record and forget blocks while readers walk the
// stacks and totals: built in the sanitized trees (cmake/sanitize.cmake), where TSan checks
// every access. Blocks are recorded by calling the engine as the hooks do, so the test needs
// no malloc hooks; nothing else is recorded in such a tree, so the totals are exact.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine.hpp"
#include "sample_region.hpp"
#include "sampler.hpp"
#include "stack_table.hpp"

namespace liveheap::engine {
namespace {

constexpr int kWriters = 4;
constexpr int kRounds = 20000;
constexpr int kKept = 100;  // per writer, each of kKeptSize bytes
constexpr std::size_t kKeptSize = 1000;

// A fake block address: never dereferenced, distinct per writer and round.
void* block(int writer, int i) {
  return reinterpret_cast<void*>((std::uintptr_t{0x10000} + writer) << 32 | std::uintptr_t(i) << 4);
}

[[gnu::noinline]] void record(void* p, std::size_t size) { on_alloc(p, size); }
[[gnu::noinline]] void record_kept(void* p) { on_alloc(p, kKeptSize); }

void writer(int w) {
  for (int i = 0; i < kRounds; ++i) {
    record(block(w, i), 16 + (i % 64) * 16);
    if (i >= 8) on_free(block(w, i - 8));  // a few live at a time, freed out of order
  }
  for (int i = kRounds - 8; i < kRounds; ++i) on_free(block(w, i));
  for (int i = 0; i < kKept; ++i) record_kept(block(w, kRounds + i));
}

struct Sums {
  std::int64_t bytes = 0, count = 0;
};

Sums visit_all() {
  Sums sums;
  visit_stacks(
      [](void* ctx, const std::uintptr_t*, std::uint32_t, const StackSums& s) {
        static_cast<Sums*>(ctx)->bytes += s.bytes;
        static_cast<Sums*>(ctx)->count += s.count;
      },
      &sums);
  return sums;
}

TEST(EngineConcurrency, WritersAndReadersEndWithExactTotals) {
  ASSERT_TRUE(start(Settings{Mode::exact, 16, 524288, 0}));
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      (void)visit_all();
      (void)traced();
      (void)live_blocks();
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) writers.emplace_back(writer, w);
  for (std::thread& t : writers) t.join();
  done = true;
  reader.join();

  constexpr std::int64_t kBytes = std::int64_t{kWriters} * kKept * kKeptSize;
  EXPECT_EQ(traced().current, kBytes);
  EXPECT_EQ(live_blocks(), std::uint64_t{kWriters} * kKept);
  const Sums sums = visit_all();
  EXPECT_EQ(sums.bytes, kBytes);
  EXPECT_EQ(sums.count, std::int64_t{kWriters} * kKept);
  EXPECT_EQ(dropped(), 0u);
  stop();
  EXPECT_EQ(traced().current, 0);
}

// One thread allocates from a stack, another frees those blocks (a producer and its
// consumer: the stack gets shared slots at the consumer's first free, mid-run), while a
// third allocates from a stack of its own: every total stays exact.
[[gnu::noinline]] void record_handed(void* p) { on_alloc(p, 48); }

TEST(EngineConcurrency, BlocksFreedByAnotherThreadEndWithExactTotals) {
  ASSERT_TRUE(start(Settings{Mode::exact, 16, 524288, 0}));
  constexpr int kBlocks = 20000;
  std::atomic<int> produced{0};
  std::thread producer([&] {
    for (int i = 0; i < kBlocks; ++i) {
      record_handed(block(10, i));
      produced.store(i + 1, std::memory_order_release);
    }
  });
  std::thread consumer([&] {
    for (int i = 0; i < kBlocks - 100; ++i) {  // the last 100 stay live
      while (produced.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      on_free(block(10, i));
    }
  });
  std::thread other([&] {
    for (int i = 0; i < 1000; ++i) record_handed(block(11, i));
  });
  producer.join();
  consumer.join();
  other.join();
  const Sums sums = visit_all();
  EXPECT_EQ(sums.bytes, (100 + 1000) * 48);
  EXPECT_EQ(sums.count, 1100);
  EXPECT_EQ(traced().current, (100 + 1000) * 48);
  EXPECT_EQ(dropped(), 0u);
  stop();
  EXPECT_EQ(traced().current, 0);
}

// Once the writers stopped: the traced bytes and the stacks' totals are exactly the blocks
// in the live table, each of `size` bytes.
void expect_totals_of_the_table(std::int64_t size) {
  const auto live = static_cast<std::int64_t>(live_blocks());
  EXPECT_EQ(traced().current, live * size);
  const Sums sums = visit_all();
  EXPECT_EQ(sums.bytes, live * size);
  EXPECT_EQ(sums.count, live);
}

// Clears while a thread allocates. After each clear, the traced bytes are those of the
// blocks recorded since, and once the thread stops, its stack's totals and the traced bytes
// are exactly the blocks in the live table. Two ways this went wrong: the thread adds to its
// own share of the traced bytes without a locked instruction, so a clear's zero there could
// be overwritten by its next add (everything before the clear stayed counted); and a clear
// that zeroed the totals after emptying the table forgot the blocks recorded in between,
// which stayed in the table.
[[gnu::noinline]] void record_kept_small(void* p) { on_alloc(p, 100); }

TEST(EngineConcurrency, AClearWhileAThreadAllocatesLeavesNoStaleTotal) {
  ASSERT_TRUE(start(Settings{Mode::exact, 16, 524288, 0}));
  std::atomic<bool> done{false};
  std::atomic<int> recorded{0};
  std::thread writer([&] {
    for (int i = 0; !done.load(std::memory_order_relaxed); ++i) {
      record_kept_small(block(20 + i / (1 << 24), i % (1 << 24)));  // never freed
      recorded.store(i + 1, std::memory_order_relaxed);
    }
  });
  int stale = 0;
  for (int round = 0; round < 500; ++round) {
    // Let the writer record a few thousand blocks, then clear them.
    const int before = recorded.load();
    while (recorded.load() < before + 2000) std::this_thread::yield();
    clear();
    // Blocks in the live table now, the traced bytes, the blocks again: the writer goes on
    // meanwhile, so the traced bytes lie between the two counts (plus a block recorded in
    // the table before the clear and counted after it).
    const std::uint64_t live_before = live_blocks();
    const std::int64_t current = traced().current;
    const std::uint64_t live_after = live_blocks();
    if (current > static_cast<std::int64_t>(live_after + 1) * 100 ||
        current < static_cast<std::int64_t>(live_before) * 100 - 100)
      ++stale;
  }
  done = true;
  writer.join();
  EXPECT_EQ(stale, 0);
  expect_totals_of_the_table(100);
  stop();
  EXPECT_EQ(traced().current, 0);
}

// A stack's owner adds to its inline totals without locked instructions, so a clear must
// not write them: clears while one thread allocates and frees on one stack (the clear takes
// each block it empties out of the table off that stack's freed totals, as the owner's
// frees do) leave the totals equal to the live table. With the clear's adds on the owner's
// inline totals, the owner's plain stores overwrote some of them.
[[gnu::noinline]] void record_churned(void* p) { on_alloc(p, 64); }

TEST(EngineConcurrency, ClearsWhileTheOwnerAllocatesAndFreesLoseNoAddOfEither) {
  ASSERT_TRUE(start(Settings{Mode::exact, 16, 524288, 0}));
  constexpr int kLive = 64;
  std::atomic<bool> done{false};
  std::atomic<int> recorded{0};
  std::thread owner([&] {
    for (int i = 0; !done.load(std::memory_order_relaxed); ++i) {
      record_churned(block(30, i % (1 << 24)));
      if (i >= kLive) on_free(block(30, (i - kLive) % (1 << 24)));
      recorded.store(i + 1, std::memory_order_relaxed);
    }
  });
  for (int round = 0; round < 2000; ++round) {
    const int before = recorded.load();
    while (recorded.load() < before + 100) std::this_thread::yield();
    clear();
  }
  done = true;
  owner.join();
  EXPECT_LE(live_blocks(), std::uint64_t{kLive});
  expect_totals_of_the_table(64);
  stop();
  EXPECT_EQ(traced().current, 0);
}

// Sampled mode: clears while a thread takes, shrinks (realloc within the usable size) and
// frees samples. Once it stops, the traced
// bytes, the live samples and the stacks' totals are exactly those of its samples counted
// in the last session (a sample raced by a clear used to be added after the clear's zero,
// or taken back after it: off by its weight for good; a sample taken while a clear runs is
// not counted, and keeps session 0).
[[gnu::noinline]] void* take_sample(std::size_t size) { return sample_allocate(size, 0, false); }

// Once the samplers stopped: the traced bytes, the live samples and the stacks' totals are
// those of the `kept` samples counted in the last session (samples taken after the last
// clear carry its session, the highest of any kept one); freeing them all leaves nothing,
// and the session stops.
void expect_totals_of_the_last_sessions_samples(const std::vector<void*>& kept) {
  std::uint32_t session = 0;
  for (void* p : kept) session = std::max(session, region_header(p)->session);
  std::int64_t bytes = 0;
  std::uint64_t count = 0;
  for (void* p : kept) {
    if (region_header(p)->session != session) continue;
    bytes += sample_weight(region_header(p)->size, region_header(p)->inverse).bytes;
    ++count;
  }
  EXPECT_GT(count, 0u);
  EXPECT_EQ(traced().current, bytes);
  EXPECT_EQ(live_blocks(), count);
  EXPECT_EQ(visit_all().bytes, bytes);
  for (void* p : kept) sample_free(p);
  EXPECT_EQ(live_blocks(), 0u);
  stop();
  EXPECT_EQ(traced().current, 0);
}

// The clearing side of the sampled tests: `rounds` clears `pause` apart while the samplers
// run, then the samplers go on until they took 100 samples after the last clear, and are
// told to stop.
struct ClearsBesideSamplers {
  std::atomic<bool> clearing_done{false}, done{false};
  std::atomic<int> taken_after{0};

  // A sampler took a sample.
  void took_sample() {
    if (clearing_done.load()) taken_after.fetch_add(1);
  }
  void run(int rounds, std::chrono::microseconds pause) {
    for (int round = 0; round < rounds; ++round) {
      std::this_thread::sleep_for(pause);
      clear();
    }
    clearing_done = true;
    while (taken_after.load() < 100) std::this_thread::yield();
    done = true;
  }
};

TEST(EngineConcurrency, ClearsWhileAThreadSamplesLeaveTheTotalsOfItsCountedSamples) {
  ASSERT_TRUE(start(Settings{Mode::sampled, 16, 4096, 7}));
  ClearsBesideSamplers clears;
  std::vector<void*> kept;
  std::thread writer([&] {
    std::vector<void*> live;
    for (int i = 0; !clears.done.load(); ++i) {
      // nullptr at a session's first draw, when the countdown is not crossed yet.
      if (void* p = take_sample(64 + static_cast<std::size_t>(i % 61) * 16)) {
        live.push_back(p);
        clears.took_sample();
      }
      if (i % 3 == 0 && !live.empty()) {  // shrunk: recounted at its new size, or not at all
        void*& shrunk = live[static_cast<std::size_t>(i) % live.size()];
        const std::size_t size = region_header(shrunk)->size;
        if (size >= 32)
          if (void* q = sample_resize(shrunk, size / 2)) shrunk = q;
      }

      if (live.size() > 48) {
        sample_free(live[i % 48]);
        live.erase(live.begin() + i % 48);
      }
    }
    kept = std::move(live);
  });
  clears.run(300, std::chrono::microseconds(100));
  writer.join();

  expect_totals_of_the_last_sessions_samples(kept);
}

// Two threads take samples and each frees the other's (a thread's count of live samples and
// its counting scopes are its own, on its own line), while clears run: once they stop, the
// live samples, the traced bytes and the stacks' totals are those of the samples counted in
// the last session, wherever each was freed; and the threads' kept runs (one page each)
// still hold their blocks' bytes apart.
TEST(EngineConcurrency, ClearsWhileTwoThreadsFreeEachOthersSamplesLeaveTheCountedOnes) {
  ASSERT_TRUE(start(Settings{Mode::sampled, 16, 4096, 11}));
  ClearsBesideSamplers clears;
  std::mutex lock;
  std::vector<void*> inbox[2];  // samples of the other thread, to be freed by this one
  auto writer = [&](int me) {
    for (int i = 0; !clears.done.load(); ++i) {
      void* p = take_sample(64 + static_cast<std::size_t>((i * 7 + me) % 61) * 16);
      if (p != nullptr) std::memset(p, 0x40 + me, 64);
      std::lock_guard<std::mutex> hold(lock);
      if (p != nullptr) {
        inbox[1 - me].push_back(p);
        clears.took_sample();
      }
      if (inbox[me].size() > 32) {
        void* q = inbox[me][static_cast<std::size_t>(i) % inbox[me].size()];
        EXPECT_EQ(*static_cast<unsigned char*>(q), 0x40 + (1 - me));  // not reused while live
        sample_free(q);
        inbox[me].erase(std::find(inbox[me].begin(), inbox[me].end(), q));
      }
    }
  };
  std::thread first(writer, 0), second(writer, 1);
  clears.run(200, std::chrono::microseconds(150));
  first.join();
  second.join();

  std::vector<void*> kept = inbox[0];
  kept.insert(kept.end(), inbox[1].begin(), inbox[1].end());
  expect_totals_of_the_last_sessions_samples(kept);
}

// Coded records under threads: two threads intern overlapping stacks (each a stack the
// other may intern first) while a third looks them up and reads their frames back, through
// index growths whose retired pages are given back under the readers.
TEST(StackTableConcurrency, CodedStacksInternedFoundAndReadBackFromThreeThreads) {
  static StackTable table(nullptr, 0);  // every stack's frames coded
  constexpr std::uintptr_t kStacks = 20000;
  auto frames_of = [](std::uintptr_t s, std::uintptr_t* frames) {
    for (std::uintptr_t i = 0; i < 25; ++i)
      frames[i] = i % 5 == 4 ? 0x7f0000000000 + s * 48 + i : 0x400000 + (s % 997) * 64 + i * 3;
  };
  std::vector<std::atomic<StackId>> ids(kStacks);
  std::atomic<bool> mismatch{false};
  auto interner = [&](std::uintptr_t from) {
    std::uintptr_t frames[25];
    for (std::uintptr_t k = 0; k < kStacks; ++k) {
      const std::uintptr_t s = (from + k) % kStacks;
      frames_of(s, frames);
      const StackId id = table.find_or_insert(frames, 25);
      StackId expected = kNoStack;
      if (!ids[s].compare_exchange_strong(expected, id) && expected != id) mismatch = true;
    }
  };
  std::atomic<bool> done{false};
  std::thread reader([&] {
    std::uintptr_t want[25], got[25];
    while (!done.load()) {
      for (std::uintptr_t s = 0; s < kStacks; s += 7) {
        const StackId id = ids[s].load();
        if (id == kNoStack) continue;
        const StackRecord* r = table.record(id);
        StackTable::frames(r, got);
        frames_of(s, want);
        if (r->depth != 25 || !std::equal(got, got + 25, want)) mismatch = true;
      }
    }
  });
  std::thread first(interner, 0), second(interner, kStacks / 2);
  first.join();
  second.join();
  done = true;
  reader.join();
  EXPECT_FALSE(mismatch.load());
  EXPECT_EQ(table.size(), kStacks);
  std::uintptr_t frames[25];
  for (std::uintptr_t s = 0; s < kStacks; ++s) {
    frames_of(s, frames);
    ASSERT_EQ(table.find_or_insert(frames, 25), ids[s].load()) << s;
  }
}

}  // namespace
}  // namespace liveheap::engine
