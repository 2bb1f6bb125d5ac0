// The tracker-memory cap end to end: samples/many_stacks, an unmodified program
// whose random branching recursion gives nearly every allocation a stack of its own, under
// LD_PRELOAD with LIVEHEAP_MAX_TRACKER_MEMORY far below what its stacks would cost
// (~140 B each, ~280 B for the first 16,384). The tracker must stay under the cap by its
// own count and by RSS, the reports must still add up to the program's heap to the byte,
// and the fold and drop counters must agree with them exactly.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>

#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"
#include "liveheap/format.hpp"

namespace http_test {
namespace {

constexpr std::int64_t kCap = 24 << 20;
constexpr int kAllocs = 300000;

struct Allocated {
  std::int64_t blocks = 0;
  std::int64_t bytes = 0;
};

class TrackerCapTest : public ::testing::Test {
 protected:
  void start(int keep_of_9) {
    port_ = free_port();
    program_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{LIVEHEAP_MANY_STACKS, "--phases", "--allocs", std::to_string(kAllocs),
                                 "--keep", std::to_string(keep_of_9)},
        std::vector<std::string>{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port_), "LIVEHEAP_MODE=exact",
                                 "LIVEHEAP_MAX_TRACKER_MEMORY=24MiB"});
    ASSERT_EQ(program_->read_line(20000).value_or("EOF"), "READY");
  }

  Allocated allocate() {
    program_->write_line("go");
    const std::string line = program_->read_line(120000).value_or("EOF");
    std::istringstream in(line);
    std::string word;
    Allocated a;
    std::int64_t allocs = 0;
    in >> word >> a.blocks >> a.bytes >> allocs;
    EXPECT_EQ(word, "ALLOCATED") << line;
    EXPECT_EQ(allocs, kAllocs);
    return a;
  }

  nlohmann::json stats() { return get(port_, "/debug/memory/stats?format=json").json(); }

  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> program_;
};

// The memory glibc holds for the program's blocks: RSS minus this is (mostly) liveheap.
std::int64_t heap_bytes(const nlohmann::json& stats) {
  return stats["mallinfo"]["arena"].get<std::int64_t>() + stats["mallinfo"]["hblkhd"].get<std::int64_t>();
}

TEST_F(TrackerCapTest, StaysUnderTheCapAndEveryByteIsAccountedFor) {
  start(9);  // every block kept: the folded blocks are all still live
  // After the baseline: its symbolizing loads debug info once (libbacktrace's own mmaps,
  // ~25 MiB for liveheap's library), a cost of the first report, not of the stacks.
  ASSERT_EQ(post(port_, "/debug/memory/baseline").status, 200);
  const nlohmann::json before = stats();
  EXPECT_EQ(before["tracker_memory_cap"]["max_bytes"], kCap);
  EXPECT_EQ(before["tracker_memory_cap"]["reached"], false);
  EXPECT_EQ(before["tracker_memory_cap"]["folded_blocks"], 0);
  const Allocated truth = allocate();
  const auto allocated_at = std::chrono::steady_clock::now();
  ASSERT_EQ(truth.blocks, kAllocs);
  ASSERT_EQ(truth.bytes, kAllocs * 64);

  // Read before any report: a report's own allocations are the tracker's too, transiently.
  // The allocator's figures are read afresh at most once per 1000 times what a read took
  // (src/tracker/allocator.cpp): one the history thread made while the loop ran, slowed by
  // a loaded machine, is served for seconds. Figures read since the loop ended, then.
  nlohmann::json after;
  ASSERT_TRUE(wait_until(
      kPatience,
      [&] {
        after = stats();
        const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - allocated_at);
        return after["mallinfo"]["age_ms"].get<std::int64_t>() < since.count();
      },
      std::chrono::milliseconds(100)))
      << "the allocator's figures were never read after the loop";
  const nlohmann::json& cap = after["tracker_memory_cap"];
  EXPECT_LE(after["tracker_memory"].get<std::int64_t>(), kCap) << after.dump(1);
  EXPECT_EQ(cap["reached"], true);
  EXPECT_EQ(cap["dropped_blocks"], 0) << "the live table kept its quarter of the cap";
  EXPECT_EQ(cap["dropped_bytes"], 0);
  const auto folded = cap["folded_blocks"].get<std::int64_t>();
  // Uncapped, these stacks would cost ~46 MiB: most of them must have folded.
  EXPECT_GT(folded, kAllocs / 2) << after.dump(1);
  EXPECT_LT(after["stacks"].get<std::int64_t>(), kAllocs / 2);
  EXPECT_EQ(cap["folded_bytes"].get<std::int64_t>(), folded * 64);
  // The host pays no more than the cap: whatever RSS grew by beyond glibc's heap is within
  // what the cap left (plus a little: page tables, the server's buffers).
  const std::int64_t rss_growth = after["rss"].get<std::int64_t>() - before["rss"].get<std::int64_t>();
  const std::int64_t heap_growth = heap_bytes(after) - heap_bytes(before);
  EXPECT_LE(rss_growth - heap_growth, kCap - before["tracker_memory"].get<std::int64_t>() + (2 << 20))
      << "rss grew " << rss_growth << ", the heap " << heap_growth;

  // The reports add up to the program's heap, the folded blocks at one key.
  const nlohmann::json diff = get(port_, "/debug/memory/diff?format=json&limit=10000").json();
  EXPECT_EQ(diff["total"]["size_diff"], truth.bytes) << diff["total"].dump();
  EXPECT_EQ(diff["total"]["count_diff"], truth.blocks);
  EXPECT_EQ(diff["tracker_memory_cap"]["reached"], true);
  EXPECT_EQ(diff["tracker_memory_cap"]["folded_blocks"], folded);
  nlohmann::json over;
  std::int64_t size_sum = 0, count_sum = 0;
  for (const nlohmann::json& s : diff["stats"]) {
    size_sum += s["size_diff"].get<std::int64_t>();
    count_sum += s["count_diff"].get<std::int64_t>();
    if (s["key"] == "[over the tracker-memory cap]") over = s;
  }
  EXPECT_EQ(size_sum, truth.bytes);
  EXPECT_EQ(count_sum, truth.blocks);
  ASSERT_FALSE(over.is_null()) << diff.dump(1).substr(0, 4000);
  EXPECT_EQ(over["count_diff"], folded);
  EXPECT_EQ(over["size_diff"], folded * 64);
  EXPECT_EQ(over["function"], "[over the tracker-memory cap]");

  // Every report says so, text and JSON.
  const std::string note = "tracker-memory cap 24.0 MiB reached: " + std::to_string(folded) +
                           " allocations (" + format_size(static_cast<double>(folded * 64), false) +
                           ") folded into [over the tracker-memory cap], 0 dropped (0 B)";
  for (const char* target : {"/debug/memory/stats", "/debug/memory/top?limit=3", "/debug/memory/diff?limit=3",
                             "/debug/memory/tracebacks?limit=1"}) {
    const Reply reply = get(port_, target);
    EXPECT_NE(reply.body.find(note), std::string::npos) << target << "\n" << reply.body;
  }
  for (const char* target :
       {"/debug/memory/top?format=json&limit=1", "/debug/memory/tracebacks?format=json&limit=1",
        "/debug/memory/baseline?format=json"}) {
    const nlohmann::json j = get(port_, target).json();
    EXPECT_EQ(j["tracker_memory_cap"]["max_bytes"], kCap) << target;
  }
  EXPECT_EQ(get(port_, "/debug/memory/top?format=json&limit=1").json()["tracker_memory_cap"]["folded_bytes"],
            folded * 64);
  const std::string metrics = get(port_, "/debug/memory/metrics").body;
  EXPECT_NE(metrics.find("\nliveheap_folded_allocations_total " + std::to_string(folded) + "\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("\nliveheap_tracker_max_bytes " + std::to_string(kCap) + "\n"), std::string::npos);
  EXPECT_EQ(program_->wait(30000), 0);
}

// With frees (4 of every 9 blocks freed at once, so their stacks were interned or folded
// and then emptied), the totals are still the heap to the byte.
TEST_F(TrackerCapTest, FreedBlocksLeaveTheirFoldedBytes) {
  start(5);
  ASSERT_EQ(post(port_, "/debug/memory/baseline").status, 200);
  const Allocated truth = allocate();
  const nlohmann::json after = stats();
  EXPECT_LE(after["tracker_memory"].get<std::int64_t>(), kCap);
  const nlohmann::json diff = get(port_, "/debug/memory/diff?format=json&limit=1").json();
  EXPECT_EQ(diff["total"]["size_diff"], truth.bytes);
  EXPECT_EQ(diff["total"]["count_diff"], truth.blocks);
  EXPECT_GT(diff["tracker_memory_cap"]["folded_blocks"].get<std::int64_t>(), kAllocs / 2);
  EXPECT_EQ(program_->wait(30000), 0);
}

}  // namespace
}  // namespace http_test
