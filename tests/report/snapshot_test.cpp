// Grouping, sorting, new and vanished keys, cumulative and filters, on hand-built snapshots.
#include <stdexcept>

#include <gtest/gtest.h>

#include "hand_built.hpp"
#include "liveheap/snapshot.hpp"

namespace liveheap {
namespace {

const Frame kNew{"operator new(unsigned long)", "", 0, "/usr/lib/libliveheap.so", 0x1};
const Frame kVectorGrow{"std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(...)",
                        "/usr/include/c++/12/bits/vector.tcc", 449, "/bin/app", 0x2};
using hand_built::kMalloc;
using hand_built::snap;
using hand_built::user;

TEST(Snapshot, LineKeySkipsPlumbingAndMergesAddressesOfOneLine) {
  Frame a = user("a.cpp", 10);
  Frame a_other_address = a;
  a_other_address.address += 8;  // another call on the same line
  const Snapshot s = snap({
      {{kNew, kVectorGrow, a, user("main.cpp", 3, "main")}, 400, 2},
      {{kMalloc, a_other_address, user("main.cpp", 4, "main")}, 100, 1},
      {{kMalloc, user("b.cpp", 20)}, 1000, 1},
  });
  const auto stats = s.statistics(KeyType::line);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].traceback.at(0).file, "b.cpp");
  EXPECT_EQ(stats[0].size, 1000);
  EXPECT_EQ(stats[1].traceback.at(0).file, "a.cpp");
  EXPECT_EQ(stats[1].traceback.at(0).line, 10u);
  EXPECT_EQ(stats[1].size, 500);
  EXPECT_EQ(stats[1].count, 3);
  EXPECT_EQ(s.total_size(), 1500);
  EXPECT_EQ(s.total_count(), 4);
}

TEST(Snapshot, PlumbingIsRecognized) {
  EXPECT_TRUE(is_plumbing(kNew));
  EXPECT_TRUE(is_plumbing(kVectorGrow));
  EXPECT_TRUE(is_plumbing(kMalloc));
  EXPECT_TRUE(is_plumbing({"void* std::__new_allocator<char>::allocate(unsigned long)", "", 0, "", 0}));
  EXPECT_FALSE(is_plumbing(user("a.cpp", 1, "mystd::make()")));
  EXPECT_FALSE(is_plumbing(user("a.cpp", 1, "malloc_wrapper_of_mine(int)")));
  EXPECT_FALSE(is_plumbing(user("a.cpp", 1, "std_like()")));
  EXPECT_EQ(user_frame_index({kNew, kVectorGrow, user("a.cpp", 1)}), 2u);
  EXPECT_EQ(user_frame_index({kNew, kMalloc}), 0u);  // all plumbing: the innermost
}

TEST(Snapshot, FileFunctionAndTracebackKeys) {
  const Snapshot s = snap({
      {{kMalloc, user("a.cpp", 1, "f()"), user("m.cpp", 9, "main")}, 10, 1},
      {{kMalloc, user("a.cpp", 2, "g()"), user("m.cpp", 9, "main")}, 20, 1},
      {{kMalloc, user("a.cpp", 2, "g()"), user("m.cpp", 8, "main")}, 40, 1},
  });
  const auto by_file = s.statistics(KeyType::file);
  ASSERT_EQ(by_file.size(), 1u);
  EXPECT_EQ(by_file[0].size, 70);
  const auto by_function = s.statistics(KeyType::function);
  ASSERT_EQ(by_function.size(), 2u);
  EXPECT_EQ(by_function[0].traceback.at(0).function, "g()");
  EXPECT_EQ(by_function[0].size, 60);
  const auto by_traceback = s.statistics(KeyType::traceback);
  ASSERT_EQ(by_traceback.size(), 3u);  // same user line, different callers: distinct
  EXPECT_EQ(by_traceback[0].traceback.size(), 3u);
}

TEST(Snapshot, SortsAsTracemallocAndBreaksTiesDeterministically) {
  const Snapshot s = snap({
      {{user("a.cpp", 1)}, 100, 1},
      {{user("b.cpp", 1)}, 100, 5},
      {{user("c.cpp", 1)}, 300, 1},
      {{user("d.cpp", 1)}, 100, 5},
  });
  const auto stats = s.statistics(KeyType::line);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[0].traceback[0].file, "c.cpp");  // size first
  EXPECT_EQ(stats[1].traceback[0].file, "d.cpp");  // then count, then key descending
  EXPECT_EQ(stats[2].traceback[0].file, "b.cpp");
  EXPECT_EQ(stats[3].traceback[0].file, "a.cpp");
}

TEST(Snapshot, CompareToIncludesNewAndVanishedKeysSortedByChange) {
  const Snapshot old = snap({
      {{user("stay.cpp", 1)}, 1000, 10},
      {{user("gone.cpp", 1)}, 300, 3},
      {{user("shrink.cpp", 1)}, 5000, 5},
  });
  const Snapshot now = snap({
      {{user("stay.cpp", 1)}, 1000, 10},
      {{user("new.cpp", 1)}, 200, 2},
      {{user("shrink.cpp", 1)}, 1000, 1},
  });
  const auto diff = now.compare_to(old, KeyType::line);
  ASSERT_EQ(diff.size(), 4u);
  EXPECT_EQ(diff[0].traceback[0].file, "shrink.cpp");
  EXPECT_EQ(diff[0].size_diff, -4000);
  EXPECT_EQ(diff[0].count_diff, -4);
  EXPECT_EQ(diff[1].traceback[0].file, "gone.cpp");
  EXPECT_EQ(diff[1].size, 0);
  EXPECT_EQ(diff[1].size_diff, -300);
  EXPECT_EQ(diff[1].count_diff, -3);
  EXPECT_EQ(diff[2].traceback[0].file, "new.cpp");
  EXPECT_EQ(diff[2].size_diff, 200);
  EXPECT_EQ(diff[2].count_diff, 2);
  EXPECT_EQ(diff[3].traceback[0].file, "stay.cpp");
  EXPECT_EQ(diff[3].size_diff, 0);
}

TEST(Snapshot, CumulativeCountsEveryFrameOncePerTrace) {
  const Frame rec = user("rec.cpp", 5, "recurse()");
  const Snapshot s = snap({
      {{kMalloc, user("leaf.cpp", 1), rec, rec, user("main.cpp", 2, "main")}, 100, 1},
      {{kMalloc, user("other.cpp", 1), user("main.cpp", 2, "main")}, 10, 1},
  });
  const auto stats = s.statistics(KeyType::line, true);
  auto find = [&](const char* file) -> const Statistic* {
    for (const auto& st : stats)
      if (st.traceback[0].file == file) return &st;
    return nullptr;
  };
  ASSERT_NE(find("main.cpp"), nullptr);
  EXPECT_EQ(find("main.cpp")->size, 110);
  ASSERT_NE(find("rec.cpp"), nullptr);
  EXPECT_EQ(find("rec.cpp")->size, 100);  // recursion does not count it twice
  EXPECT_EQ(find("rec.cpp")->count, 1);
  EXPECT_NE(find(""), nullptr);  // plumbing frames count too (every frame)
  EXPECT_THROW(s.statistics(KeyType::traceback, true), std::invalid_argument);
}

TEST(Snapshot, FiltersIncludeExcludeAndAllFrames) {
  const Snapshot s = snap({
      {{kMalloc, user("/src/net/conn.cpp", 1), user("/src/main.cpp", 2, "main")}, 1, 1},
      {{kMalloc, user("/src/db/query.cpp", 1, "db::run()"), user("/src/main.cpp", 3, "main")}, 2, 1},
      {{kMalloc, user("/usr/src/lib.cpp", 1)}, 4, 1},
  });
  auto total = [](const Snapshot& x) { return x.total_size(); };
  EXPECT_EQ(total(s.filter_traces({Filter(true, "/src/*")})), 3);
  EXPECT_EQ(total(s.filter_traces({Filter(false, "*/db/*")})), 5);
  EXPECT_EQ(total(s.filter_traces({Filter(true, "/src/*"), Filter(false, "*/net/*")})), 2);
  EXPECT_EQ(total(s.filter_traces({Filter(true, "db::*", Filter::Field::function)})), 2);
  // The user frame only, unless all_frames.
  EXPECT_EQ(total(s.filter_traces({Filter(true, "*main.cpp")})), 0);
  EXPECT_EQ(total(s.filter_traces({Filter(true, "*main.cpp", Filter::Field::file, true)})), 3);
  EXPECT_EQ(total(s.filter_traces({Filter(false, "*main.cpp", Filter::Field::file, true)})), 4);
  EXPECT_EQ(total(s.filter_traces({Filter(true, "/src/[nd]?/*")})), 2);  // "db" only: [nd]? is 2 chars
  EXPECT_EQ(total(s.filter_traces({Filter(true, "/src/[!n]*")})), 2);
}

TEST(Snapshot, BadGlobsAndKeysAreErrors) {
  EXPECT_THROW(Filter(true, "[abc"), std::invalid_argument);
  EXPECT_THROW(Filter(true, ""), std::invalid_argument);
  EXPECT_THROW(Filter(true, "abc\\"), std::invalid_argument);
  EXPECT_NO_THROW(Filter(true, "[]]x"));
  EXPECT_NO_THROW(Filter(true, "a\\*b"));
  EXPECT_THROW(parse_key_type("lines"), std::invalid_argument);
  EXPECT_THROW(parse_key_type(""), std::invalid_argument);
  EXPECT_EQ(parse_key_type("traceback"), KeyType::traceback);
  EXPECT_THROW(parse_mode("EXACT"), std::invalid_argument);
  EXPECT_EQ(parse_mode("sampled"), Mode::sampled);
}

TEST(Glob, MatchesLikeFnmatch) {
  const Frame f{"", "a*b?c", 0, "", 0};
  EXPECT_TRUE(Filter(true, "a\\*b\\?c").matches(f));
  EXPECT_FALSE(Filter(true, "a\\*b\\?c").matches(Frame{"", "axbyc", 0, "", 0}));
  EXPECT_TRUE(Filter(true, "*").matches(Frame{"", "x/y/z", 0, "", 0}));
  EXPECT_TRUE(Filter(true, "*.cpp").matches(Frame{"", "/a/b.cpp", 0, "", 0}));
  EXPECT_FALSE(Filter(true, "*.cpp").matches(Frame{"", "/a/b.cppx", 0, "", 0}));
  EXPECT_TRUE(Filter(true, "*a*a*a*").matches(Frame{"", "banana bread a", 0, "", 0}));
  EXPECT_TRUE(Filter(true, "[a-c]x").matches(Frame{"", "bx", 0, "", 0}));
  EXPECT_FALSE(Filter(true, "[a-c]x").matches(Frame{"", "dx", 0, "", 0}));
}

}  // namespace
}  // namespace liveheap
