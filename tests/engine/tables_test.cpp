// The engine's tables against a std:: model: every insert, replace and remove accounted for.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "live_table.hpp"
#include "pages.hpp"
#include "stack_table.hpp"
#include "thread_state.hpp"
#include "young_table.hpp"
#include "young_tables.hpp"

namespace liveheap::engine {
namespace {

// What a table should hold, and the checks of the blocks it hands back.
struct TableModel {
  std::unordered_map<std::uintptr_t, LiveBlock> blocks;
  std::vector<std::uintptr_t> keys;
  // An insert of `block` at `ptr` handed back `replaced`: the block held there, if any.
  void inserted(std::uintptr_t ptr, const LiveBlock& block, const LiveBlock& replaced) {
    if (const auto it = blocks.find(ptr); it != blocks.end()) {
      EXPECT_EQ(replaced.size, it->second.size);
      EXPECT_EQ(replaced.stack, it->second.stack);
    } else {
      EXPECT_EQ(replaced.stack, kNoStack);
      keys.push_back(ptr);
    }
    blocks[ptr] = block;
  }
  // A block to take out, at random.
  std::uintptr_t pick(std::mt19937_64& rng) {
    const std::size_t index = rng() % keys.size();
    const std::uintptr_t ptr = keys[index];
    keys[index] = keys.back();
    keys.pop_back();
    return ptr;
  }
  // Taking `ptr` out handed back `removed`.
  void removed(std::uintptr_t ptr, const LiveBlock& removed) {
    EXPECT_EQ(removed.size, blocks[ptr].size);
    EXPECT_EQ(removed.stack, blocks[ptr].stack);
    blocks.erase(ptr);
  }
};

TEST(LiveTable, MatchesAModelThroughGrowthAndBackwardShiftDeletion) {
  static LiveTable table;  // large: static storage, as in the engine
  TableModel model;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 400000; ++i) {
    const unsigned op = rng() % 10;
    if (op < 6 || model.keys.empty()) {
      // Clustered 16-byte aligned addresses, as a heap hands out, plus far-away ones and a
      // few past 48 bits; now and then a size of 16 MiB or more (those two: wide entries,
      // and a pointer reused across the two kinds replaces its entry in the other table).
      const unsigned region = rng() % 64;
      const std::uintptr_t ptr = (region == 0   ? 0x1230000000000ull
                                  : region < 16 ? 0x7f0000000000ull
                                                : 0x550000000000ull) +
                                 16 * (rng() % 200000);
      const std::uint64_t size = rng() % 50 == 0 ? (1u << 24) + rng() % 100000 : rng() % 100000;
      const LiveBlock block{size, static_cast<StackId>(1 + rng() % kMaxStacks)};
      LiveBlock replaced;
      ASSERT_TRUE(table.insert(ptr, block, &replaced));
      model.inserted(ptr, block, replaced);
    } else {
      const std::uintptr_t ptr = model.pick(rng);
      LiveBlock removed;
      ASSERT_TRUE(table.remove(ptr, &removed));
      model.removed(ptr, removed);
      EXPECT_FALSE(table.remove(ptr, &removed));
    }
  }
  EXPECT_EQ(table.size(), model.blocks.size());
  for (const auto& [ptr, block] : model.blocks) ASSERT_TRUE(table.contains(ptr));
  EXPECT_GT(table.wide_size(), 1000u);  // the wide table was exercised
  // 12-byte entries kept between 0.6 and 0.75 load (the ~3 % of wide ones at 16 B): about
  // 20 bytes per block at most, once past each shard's first page.
  EXPECT_LE(static_cast<double>(table.memory_bytes()) / static_cast<double>(model.blocks.size()), 21.0);

  std::uint64_t visited_bytes = 0, expected_bytes = 0;
  for (const auto& [ptr, block] : model.blocks) expected_bytes += block.size;
  table.clear([](void* ctx, const LiveBlock& b) { *static_cast<std::uint64_t*>(ctx) += b.size; },
              &visited_bytes);
  EXPECT_EQ(visited_bytes, expected_bytes);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.memory_bytes(), 0);
}

TEST(LiveTable, ATableWithoutSlotsFindsNothingAndGrowsOnItsFirstInsert) {
  static LiveTable table;
  LiveBlock replaced, removed;
  for (int round = 0; round < 2; ++round) {  // new, then emptied by clear()
    EXPECT_FALSE(table.contains(0x7f0000001230ull));
    EXPECT_FALSE(table.remove(0x7f0000001230ull, &removed));
    EXPECT_EQ(table.size(), 0u);
    EXPECT_EQ(table.memory_bytes(), 0);
    ASSERT_TRUE(table.insert(0x7f0000001230ull, {48, 9}, &replaced));
    EXPECT_EQ(replaced.stack, kNoStack);
    EXPECT_GT(table.memory_bytes(), 0);
    EXPECT_TRUE(table.contains(0x7f0000001230ull));
    table.clear(nullptr, nullptr);
  }
}

TEST(LiveTable, SizesAboveTheFieldAreClamped) {
  static LiveTable table;
  LiveBlock replaced, removed;
  ASSERT_TRUE(table.insert(0x1000, {~std::uint64_t{0}, 7}, &replaced));
  ASSERT_TRUE(table.remove(0x1000, &removed));
  EXPECT_EQ(removed.size, LiveTable::kMaxSize);
  EXPECT_EQ(removed.stack, 7u);
}

TEST(LiveTable, ABlockMovesBetweenCompactAndWideEntriesAsItsSizeChanges) {
  static LiveTable table;
  LiveBlock replaced, removed;
  const std::uintptr_t p = 0x7f1234567890ull;
  ASSERT_TRUE(table.insert(p, {(1u << 24) - 1, kMaxStacks}, &replaced));  // the largest compact
  EXPECT_EQ(table.wide_size(), 0u);
  ASSERT_TRUE(table.insert(p, {1u << 24, 3}, &replaced));  // the smallest wide: replaces it
  EXPECT_EQ(replaced.size, (1u << 24) - 1);
  EXPECT_EQ(replaced.stack, kMaxStacks);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.wide_size(), 1u);
  ASSERT_TRUE(table.insert(p, {5, 4}, &replaced));  // and back
  EXPECT_EQ(replaced.size, 1u << 24);
  EXPECT_EQ(replaced.stack, 3u);
  EXPECT_EQ(table.wide_size(), 0u);
  const std::uintptr_t high = std::uintptr_t{1} << 48;  // past 48 bits: wide whatever its size
  ASSERT_TRUE(table.insert(high, {7, 8}, &replaced));
  EXPECT_EQ(replaced.stack, kNoStack);
  EXPECT_EQ(table.wide_size(), 1u);
  EXPECT_TRUE(table.contains(high));
  EXPECT_FALSE(table.contains(high | p));
  ASSERT_TRUE(table.remove(high, &removed));
  EXPECT_EQ(removed.size, 7u);
  EXPECT_EQ(removed.stack, 8u);
  ASSERT_TRUE(table.remove(p, &removed));
  EXPECT_EQ(removed.size, 5u);
  EXPECT_EQ(removed.stack, 4u);
  EXPECT_FALSE(table.remove(p, &removed));
  EXPECT_EQ(table.size(), 0u);
}

TEST(StackTable, InternsEqualStacksOnceAndKeepsThemDistinct) {
  static StackTable table;
  std::mt19937_64 rng(7);
  std::vector<std::vector<std::uintptr_t>> stacks;
  for (int i = 0; i < 20000; ++i) {  // enough to grow the index several times
    std::vector<std::uintptr_t> frames(1 + rng() % 40);
    for (auto& f : frames) f = 0x400000 + rng() % 5000;
    stacks.push_back(frames);
  }
  std::vector<StackId> ids;
  for (const auto& s : stacks)
    ids.push_back(table.find_or_insert(s.data(), static_cast<std::uint32_t>(s.size())));
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    ASSERT_NE(ids[i], kNoStack);
    EXPECT_EQ(table.find_or_insert(stacks[i].data(), static_cast<std::uint32_t>(stacks[i].size())), ids[i]);
    const StackRecord* r = table.record(ids[i]);
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->depth, stacks[i].size());
    std::uintptr_t frames[kMaxStackDepth];
    StackTable::frames(r, frames);
    EXPECT_TRUE(std::equal(stacks[i].begin(), stacks[i].end(), frames));
  }
  const std::set<std::vector<std::uintptr_t>> distinct(stacks.begin(), stacks.end());
  EXPECT_EQ(table.size(), distinct.size());
  const std::uintptr_t a[] = {1, 2, 3};
  const std::uintptr_t b[] = {1, 2};
  EXPECT_NE(table.find_or_insert(a, 3), table.find_or_insert(b, 2));  // prefix is distinct
  EXPECT_EQ(table.record(kNoStack), nullptr);
}

// The sum of every copy of a stack's totals, as the engine's readers take it.
struct Sums {
  std::int64_t alloc_bytes = 0, alloc_count = 0, freed_bytes = 0, freed_count = 0;
};
Sums sum_copies(const StackTable& table, const StackRecord* r) {
  Sums s;
  auto add = [&](const StackTotals& t) {
    s.alloc_bytes += t.alloc_bytes.load();
    s.alloc_count += t.alloc_count.load();
    s.freed_bytes += t.freed_bytes.load();
    s.freed_count += t.freed_count.load();
  };
  add(r->totals);
  if (const SharedTotals* shared = r->shared.load())
    for (unsigned i = 0; i < kSharedSlots; ++i) add(shared[i].totals);
  if (const StackTotals* side = table.side_totals_if_any(r->id)) add(*side);
  return s;
}

// Adds one block as the engine does (StackTable::add): alloc side or freed side.
void add_block(StackTable& table, StackRecord* r, std::uint32_t slot, std::int64_t bytes, bool alloc) {
  if (alloc) table.add<Side::alloc>(r, slot, bytes, 1);
  else table.add<Side::freed>(r, slot, bytes, 1);
}

TEST(StackTable, AOneThreadStackKeepsItsTotalsInlineASecondThreadGetsSharedSlots) {
  static StackTable table(nullptr, 0);  // every stack's frames coded
  std::vector<std::uintptr_t> frames_a(25), frames_b(25);
  for (std::size_t i = 0; i < 25; ++i) {
    frames_a[i] = 0x400000 + i;
    frames_b[i] = 0x500000 + i;
  }
  StackRecord* a = table.record(table.find_or_insert(frames_a.data(), 25));
  StackRecord* b = table.record(table.find_or_insert(frames_b.data(), 25));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // 56 B of header (32 B of inline totals) + 25 frames coded in 28 B (4 for the first, 1
  // for each step of one), rounded to 8: 88 B (256 B with frames kept raw, 512 B when every
  // record carried four cache lines of totals).
  EXPECT_EQ(reinterpret_cast<char*>(b) - reinterpret_cast<char*>(a), 88);
  const std::int64_t mapped = table.memory_bytes();

  // Stack a: one thread allocates and frees: inline totals only.
  std::thread([&] {
    for (int i = 0; i < 1000; ++i) add_block(table, a, 7, 16, true);
    for (int i = 0; i < 400; ++i) add_block(table, a, 7, 16, false);
  }).join();
  EXPECT_EQ(a->shared.load(), nullptr);
  EXPECT_EQ(a->owner.load(), 8);
  const Sums sa = sum_copies(table, a);
  EXPECT_EQ(sa.alloc_bytes, 16000);
  EXPECT_EQ(sa.alloc_count, 1000);
  EXPECT_EQ(sa.freed_bytes, 6400);
  EXPECT_EQ(sa.freed_count, 400);

  // Stack b: two threads at once, each freeing blocks the other allocated.
  std::atomic<int> phase{0};
  std::thread first([&] {
    for (int i = 0; i < 1000; ++i) add_block(table, b, 0, 32, true);
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    for (int i = 0; i < 200; ++i) add_block(table, b, 0, 48, false);  // second's blocks
  });
  std::thread second([&] {
    while (phase.load() != 1) std::this_thread::yield();
    for (int i = 0; i < 600; ++i) add_block(table, b, 1, 32, false);  // first's blocks
    for (int i = 0; i < 500; ++i) add_block(table, b, 1, 48, true);
    phase = 2;
  });
  first.join();
  second.join();
  const SharedTotals* shared = b->shared.load();
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(shared) % 64, 0u);  // a cache line per copy
  const Sums sb = sum_copies(table, b);
  EXPECT_EQ(sb.alloc_bytes, 1000 * 32 + 500 * 48);
  EXPECT_EQ(sb.alloc_count, 1500);
  EXPECT_EQ(sb.freed_bytes, 600 * 32 + 200 * 48);
  EXPECT_EQ(sb.freed_count, 800);
  EXPECT_EQ(sb.alloc_count - sb.freed_count, 700);  // live: 400 of first's, 300 of second's
  // The shared slots came from the arena chunk already mapped.
  EXPECT_EQ(table.memory_bytes(), mapped);
  EXPECT_EQ(a->shared.load(), nullptr);
}

// Stacks of 25 frames one apart, the first at base + s * 64: 88 B records (above).
// 1 MiB of arena holds 11,915 of them (56 B left over).
constexpr std::uintptr_t kRecordsPerChunk = 11915;
StackId intern_nearby_stack(StackTable& table, std::uintptr_t base, std::uintptr_t s) {
  std::uintptr_t frames[25];
  for (std::size_t i = 0; i < 25; ++i) frames[i] = base + s * 64 + i;
  return table.find_or_insert(frames, 25);
}

TEST(StackTable, ElevenThousandStacksOf25NearbyFramesFitOneMebibyteOfRecords) {
  static StackTable table(nullptr, 0);  // every stack's frames coded
  for (std::uintptr_t s = 0; s < kRecordsPerChunk; ++s)
    ASSERT_NE(intern_nearby_stack(table, 0x400000, s), kNoStack);
  // One 1 MiB arena chunk of 88 B records (3971 records of 264 B with frames raw), three
  // 32 KiB chunks of the id directory (ids 1..4095, 4096..8191, 8192..), the 32768-slot
  // index (16 + 4 B a slot, 33 pages) and the first page of each retired one (16384, 8192
  // and 4096 slots: the rest given back).
  constexpr std::int64_t kIndexes = 135168 + 3 * 4096;
  EXPECT_EQ(table.memory_bytes(), 1048576 + 3 * 32768 + kIndexes);
  ASSERT_NE(intern_nearby_stack(table, 0x400000, kRecordsPerChunk), kNoStack);
  // The next record: the next arena chunk.
  EXPECT_EQ(table.memory_bytes(), 2 * 1048576 + 3 * 32768 + kIndexes);
}

// The first stacks keep their frames raw (8 B each), the rest coded: both are found by
// their frames, read back exactly, and told apart from each other.
TEST(StackTable, TheFirstStacksKeepTheirFramesRawTheRestCoded) {
  static StackTable table(nullptr, 3);
  std::vector<StackId> ids;
  for (std::uintptr_t s = 0; s < 6; ++s) ids.push_back(intern_nearby_stack(table, 0x400000, s));
  for (std::size_t i = 1; i < 6; ++i) {
    const auto step = reinterpret_cast<const char*>(table.record(ids[i])) -
                      reinterpret_cast<const char*>(table.record(ids[i - 1]));
    // Record i - 1's size. 58 B of header and 25 frames of 8 B, rounded to 8: 264 B; coded,
    // 88 B (above).
    EXPECT_EQ(step, i - 1 < 3 ? 264 : 88) << i;
  }
  for (std::uintptr_t s = 0; s < 6; ++s) {
    EXPECT_EQ(intern_nearby_stack(table, 0x400000, s), ids[s]);
    std::uintptr_t frames[25];
    StackTable::frames(table.record(ids[s]), frames);
    for (std::size_t i = 0; i < 25; ++i) ASSERT_EQ(frames[i], 0x400000 + s * 64 + i) << s;
  }
  EXPECT_EQ(table.size(), 6u);
}

TEST(StackTable, CodedFramesReadBackExactlyWhateverTheirSteps) {
  static StackTable table(nullptr, 0);  // every stack's frames coded
  const std::vector<std::vector<std::uintptr_t>> stacks = {
      {0},
      {UINTPTR_MAX},
      {0, UINTPTR_MAX, 0, std::uintptr_t{1} << 63, (std::uintptr_t{1} << 63) - 1, 1},
      {0x7f12345678ab, 0x7f12345678ab, 0x7f1234567800, 0x55aa00001234, 0x7f12345678ab},
      {0x7f12345678ab, 0x7f12345678ab, 0x7f1234567800, 0x55aa00001234, 0x7f12345678ac},
      {0x8000000000000001, 0x7e57, 0xffff800000000000},
  };
  std::vector<StackId> ids;
  for (const auto& s : stacks) {
    ids.push_back(table.find_or_insert(s.data(), static_cast<std::uint32_t>(s.size())));
    ASSERT_NE(ids.back(), kNoStack);
  }
  EXPECT_EQ(std::set<StackId>(ids.begin(), ids.end()).size(), stacks.size());  // all distinct
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    const StackRecord* r = table.record(ids[i]);
    ASSERT_EQ(r->depth, stacks[i].size());
    std::uintptr_t frames[kMaxStackDepth] = {};
    StackTable::frames(r, frames);
    EXPECT_EQ(std::vector<std::uintptr_t>(frames, frames + r->depth), stacks[i]) << i;
    EXPECT_EQ(table.find_or_insert(stacks[i].data(), r->depth), ids[i]);
  }
  // Every length a step can take, on both sides of each boundary, up and down: each stack
  // reads back as it went in, and none is taken for another.
  std::vector<std::uintptr_t> steps = {0x7f0000000000};
  for (int bits = 0; bits < 64; ++bits)
    for (const std::int64_t delta : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1}}) {
      const std::uint64_t magnitude = (std::uint64_t{1} << bits) + static_cast<std::uint64_t>(delta);
      steps.push_back(steps.back() + magnitude);
      steps.push_back(steps.back() - magnitude);
    }
  for (std::size_t at = 0; at + 40 <= steps.size(); at += 7) {
    const StackId id = table.find_or_insert(steps.data() + at, 40);
    ASSERT_NE(id, kNoStack);
    std::uintptr_t back[40];
    StackTable::frames(table.record(id), back);
    ASSERT_TRUE(std::equal(back, back + 40, steps.begin() + static_cast<std::ptrdiff_t>(at))) << at;
  }
  // As deep as the table takes, and one deeper: refused.
  std::vector<std::uintptr_t> deep(kMaxStackDepth + 1);
  for (std::size_t i = 0; i < deep.size(); ++i) deep[i] = 0x400000 + (i % 7) * 0x10000000;
  const StackId deepest = table.find_or_insert(deep.data(), kMaxStackDepth);
  ASSERT_NE(deepest, kNoStack);
  std::uintptr_t frames[kMaxStackDepth];
  StackTable::frames(table.record(deepest), frames);
  EXPECT_TRUE(std::equal(frames, frames + kMaxStackDepth, deep.begin()));
  EXPECT_EQ(table.find_or_insert(deep.data(), kMaxStackDepth + 1), kNoStack);
}

// A tracker-memory cap for one table: room while the table's own mapped bytes plus the
// request stay within g_limit; counts the refusals.
std::int64_t g_limit = 0;
int g_refusals = 0;
const StackTable* g_capped_stacks = nullptr;
const LiveTable* g_capped_live = nullptr;
bool stack_room(std::size_t bytes) noexcept {
  if (g_capped_stacks->memory_bytes() + static_cast<std::int64_t>(bytes) <= g_limit) return true;
  ++g_refusals;
  return false;
}
bool live_room(std::size_t bytes) noexcept {
  if (g_capped_live->memory_bytes() + static_cast<std::int64_t>(bytes) <= g_limit) return true;
  ++g_refusals;
  return false;
}

TEST(StackTable, PastTheRoomCheckNewStacksAreRefusedAndKnownOnesStillFound) {
  static StackTable table(stack_room);
  g_capped_stacks = &table;
  g_limit = 3 << 20;
  g_refusals = 0;
  std::vector<std::vector<std::uintptr_t>> interned;
  std::vector<StackId> ids;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000 && g_refusals == 0; ++i) {
    std::vector<std::uintptr_t> frames(20);
    for (auto& f : frames) f = 0x400000 + rng() % 100000;
    const StackId id = table.find_or_insert(frames.data(), 20);
    if (id == kNoStack) break;
    interned.push_back(frames);
    ids.push_back(id);
  }
  ASSERT_EQ(g_refusals, 1);  // the loop ran until the first refusal
  EXPECT_LE(table.memory_bytes(), g_limit);
  EXPECT_GT(table.memory_bytes(), g_limit / 2);  // it did fill up
  EXPECT_EQ(table.size(), interned.size());
  const std::int64_t full = table.memory_bytes();
  // Known stacks are found without asking; nothing more is mapped.
  for (std::size_t i = 0; i < interned.size(); ++i)
    ASSERT_EQ(table.find_or_insert(interned[i].data(), 20), ids[i]);
  // A new stack that needs memory is refused again, and costs nothing.
  std::vector<std::uintptr_t> fresh(20, 0x900000);
  EXPECT_EQ(table.find_or_insert(fresh.data(), 20), kNoStack);
  EXPECT_EQ(table.memory_bytes(), full);
  // Uncapped (the over-the-cap stack itself): interned whatever the room check says.
  const std::uintptr_t over[] = {1};
  const StackId over_id = table.find_or_insert(over, 1, false);
  ASSERT_NE(over_id, kNoStack);
  EXPECT_EQ(table.find_or_insert(over, 1), over_id);
}

// The owner of a stack adds to its inline totals without locked instructions, so no other
// thread may write them. Past the room check a second thread gets no shared slots: it adds
// to the side totals, and no add of either thread is lost (when it added to the inline
// totals atomically, the owner's plain stores overwrote some of its adds).
TEST(StackTable, PastTheRoomCheckASecondThreadAddsToTheSideTotalsAndTheOwnerLosesNoAdd) {
  static StackTable table(stack_room, 0);  // every stack's frames coded
  g_capped_stacks = &table;
  g_limit = INT64_MAX;
  g_refusals = 0;
  // These stacks fill the first 1 MiB arena chunk but 56 B (test above): shared slots
  // would need another chunk, which the room check now refuses.
  StackId first = kNoStack;
  for (std::uintptr_t s = 0; s < kRecordsPerChunk; ++s) {
    const StackId id = intern_nearby_stack(table, 0x600000, s);
    ASSERT_NE(id, kNoStack);
    if (s == 0) first = id;
  }
  g_limit = table.memory_bytes();
  StackRecord* r = table.record(first);
  ASSERT_NE(r, nullptr);
  table.add<Side::alloc>(r, 3, 8, 1);  // slot 3 claims the stack
  ASSERT_NE(table.owned_totals(r, 3), nullptr);
  EXPECT_EQ(table.side_totals_if_any(first), nullptr);

  constexpr int kAdds = 400000;
  std::atomic<int> ready{0};
  auto adder = [&](std::uint32_t slot, std::int64_t bytes) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    for (int i = 0; i < kAdds; ++i) {
      table.add<Side::alloc>(r, slot, bytes, 1);
      table.add<Side::freed>(r, slot, bytes, 1);
      table.add<Side::alloc>(r, slot, bytes, 1);
    }
  };
  std::thread owner(adder, 3, 16);
  std::thread other(adder, 5, 32);
  owner.join();
  other.join();

  EXPECT_EQ(r->shared.load(), nullptr);  // refused
  EXPECT_GE(g_refusals, 1);
  EXPECT_NE(table.side_totals_if_any(first), nullptr);
  EXPECT_NE(table.owned_totals(r, 3), nullptr);  // still the owner's
  const Sums sums = sum_copies(table, r);
  EXPECT_EQ(sums.alloc_bytes, 8 + 2 * kAdds * (16 + 32));
  EXPECT_EQ(sums.alloc_count, 1 + 4 * kAdds);
  EXPECT_EQ(sums.freed_bytes, kAdds * (16 + 32));
  EXPECT_EQ(sums.freed_count, 2 * kAdds);
  // The side totals' chunk (4096 ids of 32 B) is the table's memory, mapped past the check.
  EXPECT_EQ(table.memory_bytes(), g_limit + 4096 * 32);
}

// Threads past the first kOwnerSlots share one thread slot: none of them may own a stack,
// or each would add to its inline totals as its only writer.
TEST(StackTable, TheThreadSlotSharedPastTheOwnersNeverOwnsAStack) {
  static StackTable table;
  const std::uintptr_t frames[] = {0x700000, 0x700100};
  StackRecord* r = table.record(table.find_or_insert(frames, 2));
  ASSERT_NE(r, nullptr);
  constexpr int kAdds = 400000;
  auto adder = [&] {
    for (int i = 0; i < kAdds; ++i) table.add<Side::alloc>(r, kOwnerSlots, 16, 1);
  };
  std::thread first(adder), second(adder);
  first.join();
  second.join();
  EXPECT_EQ(r->owner.load(), 0);
  EXPECT_NE(r->shared.load(), nullptr);
  const Sums sums = sum_copies(table, r);
  EXPECT_EQ(sums.alloc_bytes, 2 * kAdds * 16);
  EXPECT_EQ(sums.alloc_count, 2 * kAdds);
}

TEST(LiveTable, PastTheRoomCheckInsertsFailAndFreesStillWork) {
  static LiveTable table(live_room);
  g_capped_live = &table;
  g_limit = 1 << 20;
  g_refusals = 0;
  std::vector<std::uintptr_t> inserted;
  LiveBlock replaced, removed;
  std::uintptr_t ptr = 0x550000000000ull;
  for (;; ptr += 16) {
    if (!table.insert(ptr, {64, 5}, &replaced)) break;
    inserted.push_back(ptr);
  }
  EXPECT_EQ(g_refusals, 1);
  EXPECT_LE(table.memory_bytes(), g_limit);
  EXPECT_EQ(table.size(), inserted.size());
  EXPECT_GT(inserted.size(), 50000u);  // 1 MiB of 12-byte entries at up to 3/4 load
  EXPECT_FALSE(table.contains(ptr));
  // A block inserted again replaces its entry, in the shard that could not grow too: a
  // replacement needs no room.
  for (const std::uintptr_t p : inserted) ASSERT_TRUE(table.insert(p, {64, 6}, &replaced));
  EXPECT_EQ(replaced.stack, 5u);
  EXPECT_EQ(table.size(), inserted.size());
  EXPECT_EQ(g_refusals, 1);
  // Frees are processed; their room is reused without mapping more.
  for (std::size_t i = 0; i < inserted.size(); i += 2) ASSERT_TRUE(table.remove(inserted[i], &removed));
  const std::int64_t mapped = table.memory_bytes();
  for (std::size_t i = 0; i < inserted.size(); i += 2)
    ASSERT_TRUE(table.insert(inserted[i], {64, 5}, &replaced));
  EXPECT_EQ(table.memory_bytes(), mapped);
  EXPECT_EQ(table.size(), inserted.size());
}

// The live table a young table's evicted blocks go to (MoveFn takes no context).
LiveTable g_evicted;
std::atomic<std::uint64_t> g_evictions{0};
void evict_to_table(std::uintptr_t ptr, const LiveBlock& b) noexcept {
  LiveBlock replaced;
  ASSERT_TRUE(g_evicted.insert(ptr, b, &replaced));
  EXPECT_EQ(replaced.stack, kNoStack);
  g_evictions.fetch_add(1, std::memory_order_relaxed);
}

// A block's free as the engine looks for it: its own thread's young table, the live table,
// another thread's young table (waiting while it moves), the live table again.
bool take_anywhere(YoungTable* own, YoungTable* other, std::uintptr_t ptr, LiveBlock* b) {
  if (own != nullptr && own->remove_own(ptr, b)) return true;
  if (g_evicted.remove(ptr, b)) return true;
  if (other != nullptr) {
    YoungTable::Claim c;
    while ((c = other->claim(ptr, b)) == YoungTable::Claim::moving) std::this_thread::yield();
    if (c == YoungTable::Claim::claimed) return true;
  }
  return g_evicted.remove(ptr, b);
}

YoungTable* new_young_table() { return new (map_pages(sizeof(YoungTable))) YoungTable; }

TEST(YoungTable, MatchesAModelWithTheBlocksItEvictsInTheLiveTable) {
  YoungTable* young = new_young_table();
  TableModel model;
  std::mt19937_64 rng(7);
  const std::uint64_t evictions_before = g_evictions.load();
  for (int i = 0; i < 200000; ++i) {
    if (rng() % 2 == 0 || model.keys.empty()) {
      const std::uintptr_t ptr = 0x7f0000000000ull + (rng() % 100000) * 16;
      const LiveBlock block{rng() % 5000, static_cast<StackId>(1 + rng() % 1000)};
      LiveBlock replaced;
      // A stale block of the same address (its free never seen) is handed back from
      // either table, as the live table's own insert does.
      if (!young->insert(ptr, block, &replaced, evict_to_table)) FAIL();
      LiveBlock stale;
      if (replaced.stack == kNoStack && g_evicted.remove(ptr, &stale)) replaced = stale;
      model.inserted(ptr, block, replaced);
    } else {
      const std::uintptr_t ptr = model.pick(rng);
      LiveBlock removed;
      ASSERT_TRUE(take_anywhere(young, nullptr, ptr, &removed));
      model.removed(ptr, removed);
      EXPECT_FALSE(take_anywhere(young, nullptr, ptr, &removed));
    }
  }
  EXPECT_GT(g_evictions.load() - evictions_before, 1000u);  // both tables were used
  EXPECT_EQ(young->size() + g_evicted.size(), model.blocks.size());
  LiveBlock removed;
  for (const auto& [ptr, block] : model.blocks) ASSERT_TRUE(take_anywhere(young, nullptr, ptr, &removed));
  EXPECT_EQ(young->size(), 0u);
  EXPECT_EQ(g_evicted.size(), 0u);
  unmap_pages(young, sizeof(YoungTable));
}

TEST(YoungTable, BlocksFreedByAnotherThreadWhileTheOwnerEvictsAreEachFoundOnce) {
  YoungTable* young = new_young_table();
  std::mutex mutex;
  std::deque<std::pair<std::uintptr_t, LiveBlock>> handed;  // owner -> freeing thread
  std::atomic<bool> done{false};
  constexpr int kBlocks = 1000000;
  std::atomic<int> found{0};
  std::thread freer([&] {
    for (;;) {
      std::pair<std::uintptr_t, LiveBlock> next{};
      {
        std::lock_guard lock(mutex);
        if (!handed.empty()) {
          next = handed.front();
          handed.pop_front();
        }
      }
      if (next.first == 0) {
        if (done.load() && [&] {
              std::lock_guard lock(mutex);
              return handed.empty();
            }())
          return;
        std::this_thread::yield();
        continue;
      }
      LiveBlock removed;
      ASSERT_TRUE(take_anywhere(nullptr, young, next.first, &removed));
      EXPECT_EQ(removed.size, next.second.size);
      EXPECT_EQ(removed.stack, next.second.stack);
      found.fetch_add(1);
    }
  });
  // The owner allocates at addresses that come back (a heap's), frees some itself and hands
  // the rest over; a later block needing a slot evicts whatever is still there.
  std::mt19937_64 rng(11);
  std::vector<std::uintptr_t> own;
  for (int i = 0; i < kBlocks; ++i) {
    const std::uintptr_t ptr = 0x7e0000000000ull + std::uintptr_t(i) * 16;
    const LiveBlock block{static_cast<std::uint64_t>(i % 4096), static_cast<StackId>(1 + i % 5000)};
    LiveBlock replaced;
    ASSERT_TRUE(young->insert(ptr, block, &replaced, evict_to_table));
    EXPECT_EQ(replaced.stack, kNoStack);
    if (rng() % 2 == 0) {
      std::lock_guard lock(mutex);
      handed.emplace_back(ptr, block);
    } else {
      own.push_back(ptr);
    }
    if (own.size() > 64) {
      LiveBlock removed;
      ASSERT_TRUE(take_anywhere(young, nullptr, own.front(), &removed));
      found.fetch_add(1);
      own.erase(own.begin());
    }
  }
  done.store(true);
  freer.join();
  LiveBlock removed;
  for (const std::uintptr_t ptr : own) {
    ASSERT_TRUE(take_anywhere(young, nullptr, ptr, &removed));
    found.fetch_add(1);
  }
  EXPECT_EQ(found.load(), kBlocks);
  EXPECT_EQ(young->size(), 0u);
  EXPECT_EQ(g_evicted.size(), 0u);
  unmap_pages(young, sizeof(YoungTable));
}

// The table whose block is caught moving, and that block, for the move function below.
YoungTable* g_moving_in = nullptr;
std::uintptr_t g_moving_ptr = 0;
void move_interrupted_by_fork(std::uintptr_t ptr, const LiveBlock&) noexcept {
  // As a fork's child finds it when the moving thread is gone: marked, not in the live table.
  LiveBlock b;
  EXPECT_EQ(g_moving_in->claim(ptr, &b), YoungTable::Claim::moving);
  g_moving_in->repair_after_fork([](std::uintptr_t) { return false; });
  ASSERT_EQ(g_moving_in->claim(ptr, &b), YoungTable::Claim::claimed);  // back in its slot
  EXPECT_EQ(b.size, 100u);
  EXPECT_EQ(b.stack, 1u);
  g_moving_ptr = ptr;
}

TEST(YoungTable, AClearTakesEveryBlockAndAForkChildGetsBackABlockCaughtMoving) {
  YoungTable* young = new_young_table();
  LiveBlock replaced;
  std::int64_t sizes = 0;
  for (std::uintptr_t i = 1; i <= 300; ++i) {
    const std::uintptr_t ptr = 0x7d0000000000ull + i * 4096;
    // Any block whose slot is taken evicts into the live table: none here.
    ASSERT_TRUE(young->insert(ptr, {i, static_cast<StackId>(i)}, &replaced,
                              [](std::uintptr_t, const LiveBlock&) noexcept {
                                ADD_FAILURE() << "no slot shared by two of these blocks was expected";
                              }));
    sizes += static_cast<std::int64_t>(i);
  }
  EXPECT_EQ(young->size(), 300u);
  std::int64_t cleared = 0;
  young->clear(
      [](void* ctx, const LiveBlock& b) {
        *static_cast<std::int64_t*>(ctx) += static_cast<std::int64_t>(b.size);
      },
      &cleared);
  EXPECT_EQ(cleared, sizes);
  EXPECT_EQ(young->size(), 0u);

  // An address sharing `first`'s slot: its insert moves `first` into the live table.
  const std::uintptr_t first = 0x7c0000000000ull;
  std::uintptr_t second = 0;
  LiveBlock b;
  for (std::uintptr_t p = first + 16; second == 0; p += 16) {
    ASSERT_TRUE(young->insert(first, {100, 1}, &replaced, evict_to_table));
    ASSERT_TRUE(young->insert(p, {1, 2}, &replaced, evict_to_table));
    if (g_evicted.remove(first, &b)) second = p;
    else ASSERT_TRUE(young->remove_own(first, &b));
    ASSERT_TRUE(young->remove_own(p, &b));
  }
  // The same move, with a fork's child taking over halfway.
  g_moving_in = young;
  ASSERT_TRUE(young->insert(first, {100, 1}, &replaced, evict_to_table));
  ASSERT_TRUE(young->insert(second, {1, 2}, &replaced, move_interrupted_by_fork));
  EXPECT_EQ(g_moving_ptr, first);
  EXPECT_TRUE(young->remove_own(second, &b));
  EXPECT_EQ(young->size(), 0u);
  unmap_pages(young, sizeof(YoungTable));
}

// A thread's young table as the engine takes it: the registry's, and the thread's own.
YoungTable* adopt_as_the_engine_does() {
  return t_thread.young = adopt_young_table([](std::size_t) noexcept { return true; });
}

TEST(YoungTables, ATableHandedBackAtAThreadsExitGoesToALaterThread) {
  prepare_young_table_release();
  // Three times as many threads as tables, one after another: without the hand-back at
  // exit, the ninth and every later one would get none.
  std::set<YoungTable*> seen;
  for (std::uint32_t n = 0; n < 3 * kMaxYoungTables; ++n) {
    YoungTable* got = nullptr;
    std::thread([&] { got = adopt_as_the_engine_does(); }).join();
    ASSERT_NE(got, nullptr) << "thread " << n;
    seen.insert(got);
  }
  EXPECT_LE(seen.size(), kMaxYoungTables);

  // Tables held at once are one thread's each; with all held, a thread gets none, and
  // after one holder exits, asks again and gets that one.
  std::mutex mutex;
  std::condition_variable changed;
  std::uint32_t holding = 0;
  std::uint32_t let_go = 0;  // holders [0, let_go) exit
  std::vector<YoungTable*> held(kMaxYoungTables);
  std::vector<std::thread> holders;
  for (std::uint32_t n = 0; n < kMaxYoungTables; ++n) {
    holders.emplace_back([&, n] {
      held[n] = adopt_as_the_engine_does();
      std::unique_lock lock(mutex);
      ++holding;
      changed.notify_all();
      changed.wait(lock, [&] { return n < let_go; });
    });
  }
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return holding == kMaxYoungTables; });
  }
  EXPECT_EQ(std::set<YoungTable*>(held.begin(), held.end()).size(), kMaxYoungTables);
  EXPECT_EQ(std::count(held.begin(), held.end(), nullptr), 0);
  const std::uint32_t releases = young_table_releases();
  YoungTable* none = reinterpret_cast<YoungTable*>(1);
  std::thread([&] { none = adopt_as_the_engine_does(); }).join();
  EXPECT_EQ(none, nullptr) << "every table is held";
  // A fork's child has the forking thread only: the tables of the others are free there.
  const pid_t child = fork();
  if (child == 0) {
    YoungTable* in_child = nullptr;
    std::thread([&] { in_child = adopt_as_the_engine_does(); }).join();
    _exit(in_child != nullptr ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child's thread got no table";
  {
    std::lock_guard lock(mutex);
    let_go = 1;
    changed.notify_all();
  }
  holders[0].join();
  EXPECT_EQ(young_table_releases(), releases + 1);
  YoungTable* later = nullptr;
  std::thread([&] { later = adopt_as_the_engine_does(); }).join();
  EXPECT_EQ(later, held[0]);
  {
    std::lock_guard lock(mutex);
    let_go = kMaxYoungTables;
    changed.notify_all();
  }
  for (std::uint32_t n = 1; n < kMaxYoungTables; ++n) holders[n].join();
}

}  // namespace
}  // namespace liveheap::engine
