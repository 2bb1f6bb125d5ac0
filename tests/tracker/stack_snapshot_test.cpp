// StackSnapshot: a snapshot that is integers until shown. Taking one symbolizes nothing;
// symbolized() asks the symbolizer each distinct address once (for a pair, the union);
// the result is the Snapshot take_snapshot() gives; ids survive clear, stop/start and fork;
// code unloaded since is never named, and an id the process never interned is refused.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../support/tracing_session.hpp"
#include "liveheap/format.hpp"
#include "liveheap/report.hpp"
#include "liveheap/tracker.hpp"

namespace {

using liveheap::KeyType;
using liveheap::Snapshot;
using liveheap::StackSnapshot;
using test_support::TracingSession;

const liveheap::Options kExact = [] {
  liveheap::Options o;
  o.max_frames = 16;
  return o;
}();

// Five blocks from five lines of this file, 1000 + 100 * k bytes each.
struct KnownBlocks {
  [[gnu::noinline]] KnownBlocks() {
    blocks.reserve(5);  // the vectors grow before, not at the known lines
    lines.reserve(5);
    blocks.push_back(std::malloc(1000)); lines.push_back(__LINE__);
    blocks.push_back(std::malloc(1100)); lines.push_back(__LINE__);
    blocks.push_back(std::malloc(1200)); lines.push_back(__LINE__);
    blocks.push_back(std::malloc(1300)); lines.push_back(__LINE__);
    blocks.push_back(std::malloc(1400)); lines.push_back(__LINE__);
  }
  ~KnownBlocks() {
    for (void* p : blocks) std::free(p);
  }
  std::vector<void*> blocks;
  std::vector<int> lines;
};

// The distinct return addresses a symbolized snapshot's frames came from (the over-the-cap
// frame, 1, is named without the symbolizer).
std::set<std::uintptr_t> addresses_of(std::initializer_list<const Snapshot*> snapshots) {
  std::set<std::uintptr_t> addresses;
  for (const Snapshot* s : snapshots)
    for (const liveheap::Trace& t : s->traces())
      for (const liveheap::Frame& f : t.traceback)
        if (f.address != 1) addresses.insert(f.address);
  return addresses;
}

std::uint64_t asked() { return liveheap::symbolizer_stats().addresses_asked; }

// The size a snapshot holds at `line` of this file (key=line).
std::int64_t size_at(const Snapshot& snapshot, int line) {
  for (const liveheap::Statistic& s : snapshot.statistics(KeyType::line))
    if (s.traceback.at(0).line == static_cast<unsigned>(line) &&
        s.traceback.at(0).file.ends_with("stack_snapshot_test.cpp"))
      return s.size;
  return -1;
}

// Trace by trace: the same stacks (frame by frame), sizes and counts.
void expect_same_traces(const Snapshot& a, const Snapshot& b) {
  ASSERT_EQ(a.traces().size(), b.traces().size());
  for (std::size_t i = 0; i < a.traces().size(); ++i) {
    const liveheap::Trace& x = a.traces()[i];
    const liveheap::Trace& y = b.traces()[i];
    EXPECT_TRUE(x.traceback == y.traceback) << "trace " << i;
    EXPECT_EQ(x.size, y.size) << "trace " << i;
    EXPECT_EQ(x.count, y.count) << "trace " << i;
    EXPECT_EQ(x.alloc_size, y.alloc_size) << "trace " << i;
    EXPECT_EQ(x.alloc_count, y.alloc_count) << "trace " << i;
  }
}

TEST(StackSnapshot, TakingOneSymbolizesNothingShowingItAsksEachAddressOnce) {
  TracingSession session(kExact);
  KnownBlocks known;
  liveheap::IgnoreScope ignore;  // nothing below is traced: both takes see the same heap
  const std::uint64_t before = asked();
  const StackSnapshot stacks = liveheap::take_stack_snapshot();
  EXPECT_EQ(asked(), before);  // integers only

  const Snapshot reference = liveheap::take_snapshot();  // the old way: symbolized at once
  EXPECT_EQ(stacks.total_size(), reference.total_size());
  EXPECT_EQ(stacks.total_count(), reference.total_count());
  EXPECT_EQ(stacks.stacks.size(), reference.traces().size());
  EXPECT_EQ(stacks.info.max_frames, 16u);
  EXPECT_EQ(stacks.info.mode, liveheap::Mode::exact);
  for (std::size_t i = 1; i < stacks.stacks.size(); ++i)
    EXPECT_LT(stacks.stacks[i - 1].id, stacks.stacks[i].id);

  const std::uint64_t before_shown = asked();
  const Snapshot shown = liveheap::symbolized(stacks);
  EXPECT_EQ(asked() - before_shown, addresses_of({&shown}).size());
  expect_same_traces(shown, reference);
  for (std::size_t k = 0; k < known.lines.size(); ++k)
    EXPECT_EQ(size_at(shown, known.lines[k]), 1000 + 100 * static_cast<std::int64_t>(k)) << k;
  EXPECT_EQ(shown.info().taken_at_ms, stacks.info.taken_at_ms);
}

// A diff made of two StackSnapshots is byte for byte the diff of the two Snapshots the old
// way made at the same moments, and it asks the union of their addresses once.
TEST(StackSnapshot, DiffIsTheOldDiffAndAsksTheUnionOnce) {
  TracingSession session(kExact);
  std::vector<void*> first;
  for (int i = 0; i < 3; ++i) first.push_back(std::malloc(700));
  StackSnapshot old_stacks;
  Snapshot old_reference;
  {
    liveheap::IgnoreScope ignore;
    old_stacks = liveheap::take_stack_snapshot();
    old_reference = liveheap::take_snapshot();
  }
  KnownBlocks known;  // grown
  std::free(first[0]);  // shrunk
  StackSnapshot now_stacks;
  Snapshot now_reference;
  {
    liveheap::IgnoreScope ignore;
    now_stacks = liveheap::take_stack_snapshot();
    now_reference = liveheap::take_snapshot();
  }
  liveheap::IgnoreScope ignore;
  const std::uint64_t before = asked();
  const liveheap::SymbolizedPair both = liveheap::symbolized(now_stacks, old_stacks);
  EXPECT_EQ(asked() - before, addresses_of({&both.now, &both.old}).size());
  ASSERT_FALSE(both.now.traces().empty());
  ASSERT_FALSE(both.old.traces().empty());
  EXPECT_EQ(both.now.traces().front().traceback.table(), both.old.traces().front().traceback.table());
  expect_same_traces(both.now, now_reference);
  expect_same_traces(both.old, old_reference);

  // The references with the same infos, so that the documents may be compared whole.
  const Snapshot now_old_way(now_reference.traces(), both.now.info());
  const Snapshot old_old_way(old_reference.traces(), both.old.info());
  for (KeyType key : {KeyType::line, KeyType::file, KeyType::function, KeyType::traceback})
    for (bool cumulative : {false, true}) {
      if (key == KeyType::traceback && cumulative) continue;
      liveheap::ReportRequest request;
      request.key = key;
      request.cumulative = cumulative;
      request.limit = 1000;
      const liveheap::Report lazy = liveheap::make_diff_report(both.now, both.old, "the baseline", request);
      const liveheap::Report eager = liveheap::make_diff_report(now_old_way, old_old_way, "the baseline", request);
      EXPECT_EQ(liveheap::to_json(lazy), liveheap::to_json(eager)) << liveheap::to_string(key);
      EXPECT_EQ(liveheap::to_text(lazy), liveheap::to_text(eager)) << liveheap::to_string(key);
    }
  // The known lines grew by their sizes; the 700-byte line shrank by one block.
  const auto diff = both.now.compare_to(both.old, KeyType::line);
  std::int64_t grown = 0;
  for (const liveheap::StatisticDiff& d : diff)
    for (std::size_t k = 0; k < known.lines.size(); ++k)
      if (d.traceback.at(0).line == static_cast<unsigned>(known.lines[k]) &&
          d.traceback.at(0).file.ends_with("stack_snapshot_test.cpp"))
        grown += d.size_diff;
  EXPECT_EQ(grown, 1000 + 1100 + 1200 + 1300 + 1400);
  // Also grown: KnownBlocks' two vectors of 5; shrunk: one 700-byte block.
  EXPECT_EQ(both.now.total_size() - both.old.total_size(),
            6000 + static_cast<std::int64_t>(5 * sizeof(void*) + 5 * sizeof(int)) - 700);
  for (std::size_t i = 1; i < first.size(); ++i) std::free(first[i]);
}

// Stack ids are never freed nor renumbered: a snapshot taken before clear(), stop() and
// start() is named with its own frames afterwards, and in a forked child.
TEST(StackSnapshot, IdsOutliveClearStopStartAndFork) {
  TracingSession session(kExact);
  KnownBlocks known;
  StackSnapshot stacks;
  Snapshot reference;
  {
    liveheap::IgnoreScope ignore;
    stacks = liveheap::take_stack_snapshot();
    reference = liveheap::take_snapshot();
  }
  liveheap::clear();
  liveheap::stop();
  liveheap::start(kExact);
  {
    // New stacks interned since: ids go on from where they were, none is reused.
    std::vector<void*> more;
    for (int i = 0; i < 50; ++i) more.push_back(std::malloc(static_cast<std::size_t>(64 + i)));
    for (void* p : more) std::free(p);
  }
  liveheap::IgnoreScope ignore;
  expect_same_traces(liveheap::symbolized(stacks), reference);

  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int status = 0;
    try {
      const Snapshot shown = liveheap::symbolized(stacks);
      status = shown.traces().size() == reference.traces().size() ? 0 : 2;
      for (std::size_t i = 0; status == 0 && i < shown.traces().size(); ++i)
        if (!(shown.traces()[i].traceback == reference.traces()[i].traceback) ||
            shown.traces()[i].size != reference.traces()[i].size)
          status = 3;
    } catch (...) {
      status = 4;
    }
    _exit(status);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(StackSnapshot, AnIdNeverInternedIsRefused) {
  TracingSession session(kExact);
  liveheap::IgnoreScope ignore;
  StackSnapshot forged = liveheap::take_stack_snapshot();
  forged.stacks.push_back({0xfffff0, 10, 1, 10, 1});
  try {
    liveheap::symbolized(forged);
    ADD_FAILURE() << "a forged id was symbolized";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "stack id 16777200 is not one this process interned");
  }
  StackSnapshot by_hand;
  by_hand.stacks.push_back({1, 10, 1, 0, 0});
  EXPECT_THROW(liveheap::symbolized(by_hand), std::invalid_argument);
  EXPECT_TRUE(liveheap::symbolized(StackSnapshot{}).traces().empty());
}

// A block allocated by a plugin keeps the plugin's return address in its stack. Once the
// plugin is unloaded, another object may be mapped there: the snapshot that holds that
// stack is refused, naming the plugin; one that does not is still shown.
TEST(StackSnapshot, CodeUnloadedSinceIsNeverNamed) {
  TracingSession session(kExact);
  void* plugin = dlopen(LIVEHEAP_STACK_SNAPSHOT_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << dlerror();
  using Allocate = void* (*)(std::size_t);
  const auto allocate = reinterpret_cast<Allocate>(dlsym(plugin, "plugin_allocate"));
  ASSERT_NE(allocate, nullptr);
  void* block = allocate(4321);
  StackSnapshot with_plugin, without_plugin;
  {
    liveheap::IgnoreScope ignore;
    with_plugin = liveheap::take_stack_snapshot();
    // Shown while the plugin is there, it names the plugin's function.
    bool named = false;
    const Snapshot shown = liveheap::symbolized(with_plugin);
    for (const liveheap::Trace& t : shown.traces())
      for (const liveheap::Frame& f : t.traceback) named = named || f.function == "plugin_allocate";
    EXPECT_TRUE(named);
  }
  std::free(block);
  {
    liveheap::IgnoreScope ignore;
    without_plugin = liveheap::take_stack_snapshot();
  }
  ASSERT_EQ(dlclose(plugin), 0);
  liveheap::IgnoreScope ignore;
  try {
    liveheap::symbolized(with_plugin);
    ADD_FAILURE() << "a stack of unloaded code was symbolized";
  } catch (const liveheap::UnloadedCodeError& e) {
    EXPECT_EQ(std::string(e.what()),
              std::string(LIVEHEAP_STACK_SNAPSHOT_PLUGIN) +
                  " was unloaded or replaced (dlclose) since the snapshot was taken: its stacks' "
                  "return addresses may hold other code now");
  }
  EXPECT_THROW(liveheap::symbolized(liveheap::take_stack_snapshot(), with_plugin), liveheap::UnloadedCodeError);
  const Snapshot shown = liveheap::symbolized(without_plugin);
  EXPECT_EQ(shown.traces().size(), without_plugin.stacks.size());
  EXPECT_EQ(shown.total_size(), without_plugin.total_size());
}

}  // namespace
