// RequestComparison: the reference and the comparisons happen on a liveheap thread with the
// exact growth, and host requests that arrive while a comparison runs do not wait for it.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "liveheap/request_comparison.hpp"
#include "liveheap/request_scope.hpp"
#include "../support/tracing_session.hpp"
#include "history.hpp"
#include "liveheap/tracker.hpp"

namespace {

using test_support::TracingSession;
using liveheap::http::ComparisonConfig;
using liveheap::http::RequestComparison;
using Clock = std::chrono::steady_clock;

// The lines a comparison logs, and when each arrived.
class Log {
 public:
  void add(std::string_view line) {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(line);
    times_.push_back(Clock::now());
    changed_.notify_all();
  }
  // Waits (30 s at most) until `n` lines arrived; the time the n-th did.
  Clock::time_point wait_for(std::size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(30), [&] { return lines_.size() >= n; });
    return lines_.size() >= n ? times_[n - 1] : Clock::time_point::max();
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
  std::vector<Clock::time_point> times_;
};

TEST(RequestComparison, LogsTheReferenceThenTheExactGrowth) {
  TracingSession tracing({liveheap::Mode::exact, 16});
  Log log;
  {
    RequestComparison comparison(ComparisonConfig{
        .every_n = 3, .top_k = 1, .log = [&](std::string_view line) { log.add(line); }});
    comparison.on_request();  // request 1: the reference, on the comparison's thread
    log.wait_for(1);
    EXPECT_TRUE(log.lines()[0].starts_with("liveheap: request 1: reference snapshot taken, heap "))
        << log.lines()[0];
    void* blocks[3];
    for (void*& p : blocks) { p = std::malloc(100000); } const int line = __LINE__;
    comparison.on_request();
    comparison.on_request();
    comparison.on_request();  // request 4 = 1 + N: a comparison
    log.wait_for(3);
    const auto lines = log.lines();
    EXPECT_TRUE(lines[1].starts_with("liveheap: request 4: heap ")) << lines[1];
    EXPECT_TRUE(lines[2].starts_with("  ")) << lines[2];
    EXPECT_TRUE(lines[2].ends_with("request_comparison_test.cpp:" + std::to_string(line) +
                                   ": size=293 KiB (+293 KiB), count=3 (+3), average=97.7 KiB"))
        << lines[2];
    EXPECT_EQ(comparison.requests(), 4u);
    for (void* p : blocks) std::free(p);
  }
}

// A host that tags its requests learns which of them grew the heap: after the lines, the
// routes that grew, each with what its requests left; untagged, no such section.
TEST(RequestComparison, NamesTheRoutesWhoseRequestsGrewTheHeap) {
  TracingSession tracing({liveheap::Mode::exact, 16});
  Log log;
  void* kept = nullptr;
  {
    RequestComparison comparison(ComparisonConfig{
        .every_n = 1, .top_k = 2, .log = [&](std::string_view line) { log.add(line); }});
    comparison.on_request();  // request 1: the reference
    log.wait_for(1);
    {
      liveheap::RequestScope scope("POST /karyogram");
      kept = std::malloc(300000);
    }
    comparison.on_request();  // request 2: a comparison
    log.wait_for(5);
  }
  const auto lines = log.lines();
  const auto by_route = std::find(lines.begin(), lines.end(), "  which requests grew it, by route:");
  ASSERT_NE(by_route, lines.end()) << ::testing::PrintToString(lines);
  ASSERT_NE(by_route + 1, lines.end());
  EXPECT_TRUE((by_route + 1)->starts_with("  POST /karyogram: size=293 KiB (+293 KiB), count=1 (+1)"))
      << *(by_route + 1);
  std::free(kept);
}

// With the history recording, each line carries its verdict once the history can tell: a
// callsite that kept what it allocated at every point of work is growing.
TEST(RequestComparison, EachLineCarriesItsVerdictOnceTheHistoryCanTell) {
  liveheap::Options options;
  options.max_frames = 16;
  options.history_interval_s = 0;  // the test ticks
  TracingSession tracing(options);
  Log log;
  std::vector<void*> kept;
  kept.reserve(8);
  int line = 0;
  {
    RequestComparison comparison(ComparisonConfig{
        .every_n = 8, .top_k = 1, .log = [&](std::string_view text) { log.add(text); }});
    comparison.on_request();
    log.wait_for(1);
    for (int i = 0; i < 7; ++i) {  // requests 2..8, each leaking 100,000 bytes, a point each
      kept.push_back(std::malloc(100000)); line = __LINE__;
      liveheap::tracker::history_tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // distinct point times
      comparison.on_request();
    }
    comparison.on_request();  // request 9 = 1 + N: a comparison
    log.wait_for(3);
  }
  const auto lines = log.lines();
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[2].find("request_comparison_test.cpp:" + std::to_string(line) + ": size=684 KiB (+684 KiB), count=7 (+7)"),
            std::string::npos) << lines[2];
  EXPECT_TRUE(lines[2].ends_with(" [growing, retains 100%, idle 0 s]")) << lines[2];
  for (void* p : kept) std::free(p);
}

// Distinct stacks, 2^depth of them: each level calls the next through one of two call sites.
[[gnu::noinline]] void* level(unsigned bits, int depth);
[[gnu::noinline]] void* left(unsigned bits, int depth) {
  void* p = level(bits, depth);
  asm volatile("" ::: "memory");  // no tail call: this frame stays on the stack
  return p;
}
[[gnu::noinline]] void* right(unsigned bits, int depth) {
  void* p = level(bits, depth);
  asm volatile("" ::: "memory");
  return p;
}
void* level(unsigned bits, int depth) {
  if (depth == 0) return std::malloc(16);
  void* p = (bits & 1) ? left(bits >> 1, depth - 1) : right(bits >> 1, depth - 1);
  asm volatile("" ::: "memory");
  return p;
}

TEST(RequestComparison, ConcurrentRequestsDoNotWaitForAComparison) {
  TracingSession tracing({liveheap::Mode::exact, 32});
  constexpr int kDepth = 14;  // 16384 stacks: a comparison takes a while
  std::vector<void*> blocks;
  for (unsigned bits = 0; bits < (1u << kDepth); ++bits) blocks.push_back(level(bits, kDepth));
  constexpr unsigned kEvery = 1'000'000;
  Log log;
  {
    RequestComparison comparison(ComparisonConfig{
        .every_n = kEvery, .top_k = 1, .log = [&](std::string_view line) { log.add(line); }});
    comparison.on_request();  // the reference
    log.wait_for(1);
    for (unsigned i = 1; i < kEvery; ++i) comparison.on_request();
    const auto started = Clock::now();
    comparison.on_request();  // request 1 + N: the comparison starts on its thread

    constexpr int kThreads = 4, kCalls = 1000;
    std::vector<Clock::duration> slowest(kThreads);
    std::vector<Clock::time_point> finished(kThreads);
    std::vector<std::thread> hosts;
    for (int t = 0; t < kThreads; ++t)
      hosts.emplace_back([&, t] {
        for (int i = 0; i < kCalls; ++i) {
          const auto before = Clock::now();
          comparison.on_request();
          slowest[t] = std::max(slowest[t], Clock::now() - before);
        }
        finished[t] = Clock::now();
      });
    for (std::thread& host : hosts) host.join();
    const auto ended = log.wait_for(3);  // the comparison's header and its one growth line
    ASSERT_NE(ended, Clock::time_point::max());
    const auto comparison_time = ended - started;
    const auto worst = *std::max_element(slowest.begin(), slowest.end());
    std::printf("comparison of %zu stacks: %lld us; slowest of %d concurrent requests: %lld us\n",
                blocks.size(),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(comparison_time).count()),
                kThreads * kCalls,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(worst).count()));
    for (int t = 0; t < kThreads; ++t) EXPECT_LT(finished[t], ended) << "host thread " << t;
    EXPECT_LT(worst * 10, comparison_time);
    EXPECT_EQ(comparison.requests(), kEvery + 1u + kThreads * kCalls);
  }
  for (void* p : blocks) std::free(p);
}

}  // namespace
