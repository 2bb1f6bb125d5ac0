// The exact-mode truth test: known bytes at known lines, and the diff must say exactly that.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "liveheap/format.hpp"
#include "../support/tracing_session.hpp"
#include "liveheap/tracker.hpp"

namespace {

using test_support::TracingSession;

struct Site {
  int line;
  std::int64_t size;
  std::int64_t count;
};

// The diff entry for this file at `line`, or nullptr.
const liveheap::StatisticDiff* find_line(const std::vector<liveheap::StatisticDiff>& diff,
                                         int line) {
  for (const auto& d : diff) {
    const liveheap::Frame& f = d.traceback.at(0);
    if (f.line == static_cast<unsigned>(line) && f.file.ends_with("exact_truth_test.cpp"))
      return &d;
  }
  return nullptr;
}

std::string dump(const std::vector<liveheap::StatisticDiff>& diff) {
  std::string text;
  for (const auto& d : diff)
    text += liveheap::format_statistic_diff(d, liveheap::KeyType::line) + "\n";
  return text;
}

// Kept out of the measured lines: std::thread's own bookkeeping allocates too.
[[gnu::noinline]] void run_thread(void (*body)(void**), void** out) {
  std::thread t(body, out);
  t.join();
}

void* g_thread_block = nullptr;
int g_thread_line = 0;
[[gnu::noinline]] void thread_body(void** out) {
  *out = std::malloc(3333); g_thread_line = __LINE__;
}

TEST(ExactTruth, DiffNamesEveryLineWithExactSizeAndCount) {
  std::vector<Site> sites;
  std::vector<void*> keep;
  // Reserved before the baseline so that recording sites allocates nothing at them.
  sites.reserve(32);
  keep.reserve(32);
  TracingSession tracing({liveheap::Mode::exact, 32});
  const liveheap::Snapshot before = liveheap::take_snapshot();

  for (int i = 0; i < 4; ++i) {
    keep.push_back(std::malloc(1000)); if (i == 0) sites.push_back({__LINE__, 4000, 4});
  }
  keep.push_back(std::calloc(10, 123)); sites.push_back({__LINE__, 1230, 1});
  char* array = new char[4096]; sites.push_back({__LINE__, 4096, 1});
  void* grown = std::malloc(10);
  grown = std::realloc(grown, 100000); sites.push_back({__LINE__, 100000, 1});
  void* aligned = nullptr;
  ASSERT_EQ(posix_memalign(&aligned, 256, 777), 0); sites.push_back({__LINE__, 777, 1});
  auto* numbers = new std::vector<long>(); numbers->reserve(500); sites.push_back({__LINE__, 4000 + 24, 2});
  for (int i = 0; i < 100; ++i) {
    void* transient = std::malloc(50000); std::memset(transient, 1, 8); std::free(transient);
  }
  const int transient_line = __LINE__ - 2;
  run_thread(thread_body, &g_thread_block);
  sites.push_back({g_thread_line, 3333, 1});

  const liveheap::Snapshot after = liveheap::take_snapshot();
  const auto diff = after.compare_to(before, liveheap::KeyType::line);
  for (const Site& site : sites) {
    const liveheap::StatisticDiff* d = find_line(diff, site.line);
    ASSERT_NE(d, nullptr) << "line " << site.line << " missing from:\n" << dump(diff);
    EXPECT_EQ(d->size_diff, site.size) << "line " << site.line << "\n" << dump(diff);
    EXPECT_EQ(d->count_diff, site.count) << "line " << site.line << "\n" << dump(diff);
    EXPECT_EQ(d->size, site.size) << "line " << site.line;
  }
  const liveheap::StatisticDiff* transient = find_line(diff, transient_line);
  if (transient != nullptr) {
    EXPECT_EQ(transient->size, 0) << dump(diff);
  }
  // The malloc(10) that realloc replaced left nothing behind.
  EXPECT_EQ(find_line(diff, sites[3].line - 1), nullptr) << dump(diff);

  for (void* p : keep) std::free(p);
  delete[] array;
  std::free(grown);
  std::free(aligned);
  delete numbers;
  std::free(g_thread_block);
  const auto cleared = liveheap::take_snapshot().compare_to(before, liveheap::KeyType::line);
  for (const Site& site : sites) {
    const liveheap::StatisticDiff* d = find_line(cleared, site.line);
    if (d != nullptr) {
      EXPECT_EQ(d->size, 0) << "line " << site.line << "\n" << dump(cleared);
    }
  }
}

}  // namespace
