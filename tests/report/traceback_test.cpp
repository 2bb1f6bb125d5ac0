// Traceback as a value over a shared frame table: copies, equality, iteration, slices, and
// grouping that merges equal keys across addresses and across snapshots' tables.
#include <algorithm>
#include <iterator>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "hand_built.hpp"
#include "liveheap/format.hpp"
#include "liveheap/snapshot.hpp"

namespace liveheap {

// Found by GoogleTest through ADL: prints a Traceback as "{ file:line in function, ... }".
void PrintTo(const Frame& f, std::ostream* out) { *out << f.file << ':' << f.line << " in " << f.function; }

namespace {

static_assert(std::random_access_iterator<Traceback::const_iterator>);
static_assert(std::is_same_v<std::iter_reference_t<Traceback::const_iterator>, const Frame&>);

using Table = Traceback::FrameTable;

using hand_built::kMalloc;
using hand_built::snap;
const Frame kA{"f()", "a.cpp", 10, "/bin/app", 0x1010};
const Frame kAOther{"f()", "a.cpp", 10, "/bin/app", 0x1018};  // same line, another call
const Frame kB{"g()", "b.cpp", 20, "/bin/app", 0x1020};
const Frame kMain{"main", "main.cpp", 3, "/bin/app", 0x1030};

std::shared_ptr<const Table> table() {
  return std::make_shared<const Table>(Table{kMalloc, kA, kAOther, kB, kMain});
}

TEST(Traceback, CopiesShareTheTable) {
  const auto frames = table();
  const Traceback tb(frames, {0, 1, 4});
  const Traceback copy = tb;  // NOLINT: the copy is the point
  EXPECT_EQ(copy.table().get(), frames.get());
  EXPECT_EQ(frames.use_count(), 3);  // `frames`, `tb`, `copy`: no Frame was copied
  EXPECT_EQ(&copy[1], &(*frames)[1]);
  EXPECT_EQ(copy.indices(), (std::vector<std::uint32_t>{0, 1, 4}));
  EXPECT_THROW(Traceback(frames, {5}), std::out_of_range);
  EXPECT_THROW(Traceback(nullptr, {0}), std::out_of_range);
}

TEST(Traceback, OwnTableFromFramesOrList) {
  const Traceback listed{kA, kB};
  const Traceback from_vector(std::vector<Frame>{kA, kB});
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed.table()->size(), 2u);
  EXPECT_EQ(listed.indices(), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(listed, from_vector);
  const Traceback none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_EQ(none.table(), nullptr);
  EXPECT_EQ(Traceback(std::vector<Frame>{}), none);
}

TEST(Traceback, EqualityIsFrameByFrameAcrossTables) {
  const auto frames = table();
  EXPECT_EQ(Traceback(frames, {1, 3}), (Traceback{kA, kB}));     // another table
  EXPECT_NE(Traceback(frames, {1, 3}), (Traceback{kB, kA}));     // order matters
  EXPECT_NE(Traceback(frames, {1, 3}), Traceback(frames, {1}));  // size matters
  EXPECT_NE(Traceback(frames, {1}), Traceback(frames, {2}));     // so does the address
  EXPECT_EQ(Traceback(frames, {3, 3}), (Traceback{kB, kB}));
}

TEST(Traceback, IteratesAsConstFrames) {
  const Traceback tb(table(), {0, 1, 3, 4});
  std::vector<std::string> files;
  for (const Frame& f : tb) files.push_back(f.file);
  EXPECT_EQ(files, (std::vector<std::string>{"", "a.cpp", "b.cpp", "main.cpp"}));
  EXPECT_EQ(tb.front().function, "malloc");
  EXPECT_EQ(tb.back().function, "main");
  EXPECT_EQ(tb.at(2).line, 20u);
  EXPECT_THROW(tb.at(4), std::out_of_range);
  auto it = tb.begin();
  EXPECT_EQ(it[2].function, "g()");
  EXPECT_EQ((it + 3)->function, "main");
  EXPECT_EQ(tb.end() - tb.begin(), 4);
  EXPECT_EQ(std::prev(tb.end())->file, "main.cpp");
  EXPECT_LT(it, tb.end());
  EXPECT_EQ(std::find(tb.begin(), tb.end(), kB) - tb.begin(), 2);
  const std::vector<Frame> reversed(tb.rbegin(), tb.rend());
  EXPECT_EQ(reversed, (std::vector<Frame>{kMain, kB, kA, kMalloc}));
  EXPECT_EQ(testing::PrintToString(tb),
            "{ :0 in malloc, a.cpp:10 in f(), b.cpp:20 in g(), main.cpp:3 in main }");
}

TEST(Traceback, SliceSharesTheTable) {
  const Traceback tb(table(), {0, 1, 4});
  const Traceback key = tb.slice(1, 1);
  EXPECT_EQ(key.table(), tb.table());
  EXPECT_EQ(&key.front(), &tb[1]);  // the same Frame object: no string copied
  EXPECT_EQ(key, (Traceback{kA}));
  EXPECT_EQ(tb.slice(1, 2), (Traceback{kA, kMain}));
  EXPECT_TRUE(tb.slice(3, 0).empty());
  EXPECT_THROW(tb.slice(2, 2), std::out_of_range);
  EXPECT_THROW(tb.slice(4, 0), std::out_of_range);
}

TEST(Traceback, LineKeysShareTheSnapshotTable) {
  const auto frames = table();
  const Snapshot s = snap({{Traceback(frames, {0, 3, 4}), 100, 1}});
  const auto stats = s.statistics(KeyType::line);
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].traceback.table(), frames);  // the user frame, not a copy of it
  EXPECT_EQ(&stats[0].traceback.front(), &(*frames)[3]);
  EXPECT_EQ(s.filter_traces({Filter(true, "b.cpp")}).traces().at(0).traceback.table(), frames);
}

TEST(Traceback, DistinctFramesOfOneLineAreOneGroup) {
  const auto frames = table();
  const Snapshot s = snap({
      {Traceback(frames, {0, 1, 4}), 100, 2},
      {Traceback(frames, {0, 2, 4}), 50, 1},  // another address, same a.cpp:10
      {Traceback(frames, {3, 4}), 120, 4},
  });
  const auto stats = s.statistics(KeyType::line);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(format_statistic(stats[0], KeyType::line), "a.cpp:10: size=150 B, count=3, average=50 B");
  EXPECT_EQ(stats[0].traceback.front().address, 0x1010u);  // the key the first trace showed
  EXPECT_EQ(format_statistic(stats[1], KeyType::line), "b.cpp:20: size=120 B, count=4, average=30 B");
  const auto cumulative = s.statistics(KeyType::line, true);
  ASSERT_EQ(cumulative.size(), 4u);
  EXPECT_EQ(format_statistic(cumulative[0], KeyType::line), "main.cpp:3: size=270 B, count=7, average=39 B");
  // A tie, broken by key descending: "a.cpp" > "" (malloc has no file).
  EXPECT_EQ(format_statistic(cumulative[1], KeyType::line), "a.cpp:10: size=150 B, count=3, average=50 B");
  EXPECT_EQ(format_statistic(cumulative[2], KeyType::line), "malloc: size=150 B, count=3, average=50 B");
  EXPECT_EQ(format_statistic(cumulative[3], KeyType::line), "b.cpp:20: size=120 B, count=4, average=30 B");
  const auto by_traceback = s.statistics(KeyType::traceback);
  ASSERT_EQ(by_traceback.size(), 2u);  // same lines all the way down: one stack
  EXPECT_EQ(by_traceback[0].size, 150);
  EXPECT_EQ(by_traceback[0].traceback, Traceback(frames, {0, 1, 4}));
}

TEST(Traceback, SnapshotsWithDifferentTablesCompareByKey) {
  // The same frames in another order: indices differ, keys do not.
  const auto old_frames = table();
  const auto new_frames = std::make_shared<const Table>(Table{kMain, kB, kAOther, kMalloc});
  const Snapshot old = snap({
      {Traceback(old_frames, {0, 1, 4}), 1000, 10},
      {Traceback(old_frames, {0, 3, 4}), 300, 3},
  });
  const Snapshot now = snap({
      {Traceback(new_frames, {3, 2, 0}), 1500, 12},  // a.cpp:10 from its other address
      {Traceback(new_frames, {3, 1, 0}), 300, 3},
      {Traceback(new_frames, {3, 0}), 64, 1},  // main.cpp:3 is new
  });
  const auto diff = now.compare_to(old, KeyType::line);
  ASSERT_EQ(diff.size(), 3u);
  EXPECT_EQ(format_statistic_diff(diff[0], KeyType::line),
            "a.cpp:10: size=1500 B (+500 B), count=12 (+2), average=125 B");
  EXPECT_EQ(diff[0].traceback.table(), new_frames);  // keys come from the newer snapshot
  EXPECT_EQ(format_statistic_diff(diff[1], KeyType::line),
            "main.cpp:3: size=64 B (+64 B), count=1 (+1), average=64 B");
  EXPECT_EQ(format_statistic_diff(diff[2], KeyType::line),
            "b.cpp:20: size=300 B (+0 B), count=3 (+0), average=100 B");
  const auto by_traceback = old.compare_to(now, KeyType::traceback);
  ASSERT_EQ(by_traceback.size(), 3u);
  EXPECT_EQ(by_traceback[0].size_diff, -500);
  EXPECT_EQ(by_traceback[1].size, 0);  // vanished: keyed by the newer snapshot's stack
  EXPECT_EQ(by_traceback[1].size_diff, -64);
  EXPECT_EQ(by_traceback[1].traceback, (Traceback{kMalloc, kMain}));
  EXPECT_EQ(by_traceback[2].size_diff, 0);
}

}  // namespace
}  // namespace liveheap
