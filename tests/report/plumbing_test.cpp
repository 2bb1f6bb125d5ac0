// User-named plumbing (set_plumbing, LIVEHEAP_PLUMBING's list) on hand-built snapshots:
// the user's arena and a pool allocator stop being the `line` key; their callers are.
#include <stdexcept>

#include <gtest/gtest.h>

#include "hand_built.hpp"
#include "liveheap/format.hpp"
#include "liveheap/snapshot.hpp"

namespace liveheap {
namespace {

// set_plumbing is process-wide: every test leaves the list empty.
struct PlumbingGuard {
  ~PlumbingGuard() { set_plumbing({}); }
};

using hand_built::kMalloc;
using hand_built::user;
const Frame kArena{"void* my::Arena::allocate<int>(unsigned long)", "/src/arena.cpp", 30, "/bin/app", 0x2};
const Frame kPool{"pool_malloc", "src/pool.c", 700, "/usr/lib/libpool.so", 0x3};

Snapshot arena_snapshot() {
  return Snapshot({{{kMalloc, kArena, user("a.cpp", 10, "make_a()"), user("m.cpp", 1, "main")}, 100, 1},
                   {{kMalloc, kArena, user("b.cpp", 20, "make_b()"), user("m.cpp", 2, "main")}, 300, 3},
                   {{kMalloc, kPool, user("c.cpp", 5, "call_pool()")}, 50, 1}},
                  SnapshotInfo{});
}

std::vector<std::string> line_keys(const Snapshot& s) {
  std::vector<std::string> keys;
  for (const Statistic& stat : s.statistics(KeyType::line))
    keys.push_back(format_statistic(stat, KeyType::line));
  return keys;
}

TEST(UserPlumbing, LineKeyNamesTheCallersOfNamedAllocators) {
  PlumbingGuard guard;
  const Snapshot s = arena_snapshot();
  EXPECT_EQ(line_keys(s), (std::vector<std::string>{"/src/arena.cpp:30: size=400 B, count=4, average=100 B",
                                                    "src/pool.c:700: size=50 B, count=1, average=50 B"}));
  // A function glob on the name as shown (no return type, template arguments or
  // parameters), and a file glob.
  set_plumbing({"function:my::Arena::allocate<*>", "*/pool.c"});
  EXPECT_TRUE(is_plumbing(kArena));
  EXPECT_TRUE(is_plumbing(kPool));
  EXPECT_EQ(line_keys(s), (std::vector<std::string>{"b.cpp:20: size=300 B, count=3, average=100 B",
                                                    "a.cpp:10: size=100 B, count=1, average=100 B",
                                                    "c.cpp:5: size=50 B, count=1, average=50 B"}));
  EXPECT_EQ(format_key(s.traces()[0].traceback, KeyType::traceback), "a.cpp:10");
  EXPECT_EQ(s.statistics(KeyType::function)[0].traceback.front().function, "make_b()");

  // Full names match too; a later list replaces the earlier one.
  set_plumbing({"function:pool_*"});
  EXPECT_FALSE(is_plumbing(kArena));
  EXPECT_TRUE(is_plumbing(kPool));
  set_plumbing({});
  EXPECT_FALSE(is_plumbing(kPool));
  EXPECT_FALSE(is_plumbing(user("a.cpp", 10, "make_a()")));
}

TEST(UserPlumbing, BadGlobsAreErrorsAndChangeNothing) {
  PlumbingGuard guard;
  set_plumbing({"*/pool.c"});
  for (const char* bad : {"function:[oops", "", "function:", "[a-"})
    EXPECT_THROW(set_plumbing({"*.cpp", bad}), std::invalid_argument) << bad;
  EXPECT_TRUE(is_plumbing(kPool));                           // the old list stands
  EXPECT_FALSE(is_plumbing(user("a.cpp", 10, "make_a()")));  // "*.cpp" never applied
}

TEST(UserPlumbing, FilterParseIsTheRoutesSyntax) {
  const Filter by_file = Filter::parse(false, "*/pool.c");
  EXPECT_FALSE(by_file.inclusive);
  EXPECT_EQ(by_file.field, Filter::Field::file);
  EXPECT_EQ(by_file.pattern, "*/pool.c");
  const Filter by_function = Filter::parse(true, "function:pool_*");
  EXPECT_EQ(by_function.field, Filter::Field::function);
  EXPECT_EQ(by_function.pattern, "pool_*");
}

}  // namespace
}  // namespace liveheap
