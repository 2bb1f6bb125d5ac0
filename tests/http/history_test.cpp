// GET /history and the verdicts of /top and /diff over a real socket: known bytes at known
// lines, recorded tick by tick, give exact series and the verdict of each shape.
// Not reformatted: an allocation and the __LINE__ that names it share a line or a fixed offset.
// clang-format off
#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include "../support/tracing_session.hpp"
#include "history.hpp"
#include "liveheap/history_report.hpp"
#include "wall_clock.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

std::vector<void*> g_leak;
std::vector<void*> g_cache;
int g_leak_line = 0;
int g_cache_line = 0;

[[gnu::noinline]] void leak_step() {
  g_leak.push_back(std::malloc(1000)); g_leak_line = __LINE__;
}
[[gnu::noinline]] void cache_step() {
  if (g_cache.size() < 2) { g_cache.push_back(std::malloc(4096)); } g_cache_line = __LINE__;
}
// A steady churn: one block replaced every step, the same bytes live throughout.
void* g_churn = nullptr;
int g_churn_line = 0;
[[gnu::noinline]] void churn_step() {
  std::free(g_churn); g_churn = std::malloc(512); g_churn_line = __LINE__;
}
// A pool filled before the history starts, then drained one block a step.
void* g_pool[7] = {};
int g_pool_line = 0;
int g_pool_left = 0;
[[gnu::noinline]] void pool_fill() {
  for (void*& p : g_pool) { p = std::malloc(2048); } g_pool_line = __LINE__; g_pool_left = 7;
}
[[gnu::noinline]] void pool_step() { std::free(g_pool[--g_pool_left]); g_pool[g_pool_left] = nullptr; }
// The program's work between two points (a request served: allocated, then freed), which
// the verdicts are measured against: without it every interval would be idle.
[[gnu::noinline]] void work_step() {
  void* request = std::malloc(64 * 1024);
  asm volatile("" : : "r"(request) : "memory");  // the allocation is not optimized away
  std::free(request);
}

// The stat of `report` at this file's `line`, or null.
nlohmann::json stat_at(const nlohmann::json& report, int line) {
  for (const nlohmann::json& s : report.at("stats"))
    if (s.at("line") == line && s.at("file").get<std::string>().ends_with("history_test.cpp")) return s;
  return nullptr;
}

class HistoryRoute : public ServerTest {
 protected:
  void SetUp() override {
    liveheap::Options o;
    o.history_interval_s = 0;  // the test ticks
    tracing_.emplace(o);
    ServerTest::SetUp();
    g_leak.reserve(16);
    g_cache.reserve(16);
    pool_fill();
    for (int i = 0; i < 6; ++i) {
      leak_step();
      cache_step();
      churn_step();
      pool_step();
      work_step();
      liveheap::tracker::history_tick();
      // Distinct times for the trends: the clock the points are stamped with moved on.
      const std::int64_t last = liveheap::tracker::history_raw().points.back().t_ms;
      ASSERT_TRUE(wait_until(kPatience, [&] { return engine::now_ms() > last; }, std::chrono::milliseconds(1)));
    }
  }
  void TearDown() override {
    ServerTest::TearDown();
    for (void* p : g_leak) std::free(p);
    for (void* p : g_cache) std::free(p);
    for (void*& p : g_pool) std::free(std::exchange(p, nullptr));
    std::free(std::exchange(g_churn, nullptr));
    g_leak.clear();
    g_cache.clear();
    tracing_.reset();  // the next test's fixture starts tracing with the defaults again
  }

  std::optional<test_support::TracingSession> tracing_;
};

TEST_F(HistoryRoute, SeriesAreExactAndVerdictsNameTheShapes) {
  const Reply reply = get(port(), "/debug/memory/history?format=json&include=*history_test.cpp&limit=10");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const nlohmann::json h = reply.json();
  EXPECT_EQ(h["interval_s"], 0);
  EXPECT_EQ(h["points"].size(), 6u);
  EXPECT_EQ(h["keys"], 6);  // this file: leak, cache, churn, pool, and the two reserve() lines
  const nlohmann::json leak = stat_at(h, g_leak_line);
  const nlohmann::json cache = stat_at(h, g_cache_line);
  ASSERT_FALSE(leak.is_null()) << h.dump();
  ASSERT_FALSE(cache.is_null()) << h.dump();
  std::vector<std::int64_t> leak_sizes, cache_sizes;
  for (const auto& p : leak["series"]) leak_sizes.push_back(p[1]);
  for (const auto& p : cache["series"]) cache_sizes.push_back(p[1]);
  EXPECT_EQ(leak_sizes, (std::vector<std::int64_t>{1000, 2000, 3000, 4000, 5000, 6000}));
  EXPECT_EQ(cache_sizes, (std::vector<std::int64_t>{4096, 8192, 8192, 8192, 8192, 8192}));
  EXPECT_EQ(leak["series"][5][2], 6);  // blocks
  EXPECT_EQ(leak["series"][0][0], h["points"][0]["t_ms"]);
  EXPECT_EQ(leak["verdict"], "growing");
  EXPECT_EQ(leak["since_last_growth_s"], 0.0);
  EXPECT_GT(leak["growth_per_min"].get<double>(), 0);
  EXPECT_EQ(cache["verdict"], "plateaued");
  EXPECT_EQ(cache["growth_per_min"], 0.0);
  EXPECT_EQ(leak["size"], 6000);
  // The two other shapes: a steady churn is stable, a draining pool is shrinking.
  const nlohmann::json churn = stat_at(h, g_churn_line);
  const nlohmann::json pool = stat_at(h, g_pool_line);
  ASSERT_FALSE(churn.is_null()) << h.dump();
  ASSERT_FALSE(pool.is_null()) << h.dump();
  std::vector<std::int64_t> churn_sizes, pool_sizes;
  for (const auto& p : churn["series"]) churn_sizes.push_back(p[1]);
  for (const auto& p : pool["series"]) pool_sizes.push_back(p[1]);
  EXPECT_EQ(churn_sizes, (std::vector<std::int64_t>(6, 512)));
  EXPECT_EQ(pool_sizes, (std::vector<std::int64_t>{12288, 10240, 8192, 6144, 4096, 2048}));
  EXPECT_EQ(churn["verdict"], "stable");
  EXPECT_EQ(pool["verdict"], "shrinking");
  EXPECT_LT(pool["growth_per_min"].get<double>(), 0);
  // Why: the leak keeps what it allocates, the churn frees it, the pool allocated nothing.
  EXPECT_EQ(leak["retention"], 1.0);
  EXPECT_EQ(leak["idle_s"], 0.0);
  EXPECT_EQ(leak["allocated_in_window"], 5000);
  EXPECT_EQ(churn["retention"], 0.0);
  EXPECT_TRUE(pool["retention"].is_null());
  EXPECT_TRUE(pool["idle_s"].is_null());
  std::vector<std::int64_t> leak_allocated;
  for (const auto& p : leak["allocated_series"]) leak_allocated.push_back(p[1]);
  EXPECT_EQ(leak_allocated, (std::vector<std::int64_t>{1000, 2000, 3000, 4000, 5000, 6000}));
  // The process's work at each point: at least each step's request and leak.
  for (std::size_t i = 1; i < h["points"].size(); ++i) {
    const nlohmann::json& p = h["points"][i];
    EXPECT_GE(p["allocated"].get<std::int64_t>() - h["points"][i - 1]["allocated"].get<std::int64_t>(), 64 * 1024 + 1000);
    EXPECT_GE(p["allocations"].get<std::int64_t>() - h["points"][i - 1]["allocations"].get<std::int64_t>(), 3);
    EXPECT_EQ(p["idle"], false);
  }

  const Reply text = get(port(), "/debug/memory/history?include=*history_test.cpp");
  ASSERT_EQ(text.status, 200);
  EXPECT_TRUE(text.body.starts_with("History: 6 points every 0 s")) << text.body;
  EXPECT_NE(text.body.find(":" + std::to_string(g_cache_line) + ": size=8192 B, count=2, average=4096 B [plateaued, retains 100%, idle "),
            std::string::npos) << text.body;
}

TEST_F(HistoryRoute, TopAndDiffCarryVerdictsTextOnlyWhenAsked) {
  const nlohmann::json top = get(port(), "/debug/memory/top?format=json&include=*history_test.cpp").json();
  EXPECT_EQ(stat_at(top, g_leak_line)["verdict"], "growing");
  EXPECT_EQ(stat_at(top, g_cache_line)["verdict"], "plateaued");

  const std::string plain = get(port(), "/debug/memory/top?include=*history_test.cpp").body;
  EXPECT_EQ(plain.find('['), std::string::npos) << plain;  // tracemalloc's lines, unchanged
  const std::string with = get(port(), "/debug/memory/top?include=*history_test.cpp&verdicts=1").body;
  EXPECT_NE(with.find(":" + std::to_string(g_leak_line) + ": size=6000 B, count=6, average=1000 B [growing, retains 100%, idle 0 s]"),
            std::string::npos) << with;

  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  const nlohmann::json diff = get(port(), "/debug/memory/diff?format=json&include=*history_test.cpp").json();
  EXPECT_EQ(stat_at(diff, g_leak_line)["verdict"], "growing");
  const std::string diff_text = get(port(), "/debug/memory/diff?include=*history_test.cpp&verdicts=1").body;
  EXPECT_NE(diff_text.find("[plateaued, "), std::string::npos) << diff_text;
}

TEST_F(HistoryRoute, BadParametersAreRefused) {
  EXPECT_EQ(get(port(), "/debug/memory/history?verdicts=1").status, 400);
  EXPECT_EQ(get(port(), "/debug/memory/history?key=nope").status, 400);
  EXPECT_EQ(get(port(), "/debug/memory/top?verdicts=2").status, 400);
  EXPECT_EQ(post(port(), "/debug/memory/history").status, 405);
}

}  // namespace
}  // namespace http_test

namespace http_test {
namespace {

// The answer read back as its value writes the same bytes, and the text a client renders
// from it is the server's own text (the test ticks: both requests see one history).
TEST_F(HistoryRoute, TheAnswerReadsBackAsItsValueAndItsTextIsTheServersText) {
  for (const std::string query : {"", "key=file&", "key=traceback&limit=3&", "traceback=1&limit=4&",
                                  "include=*history_test.cpp&cumulative=1&", "limit=1&"}) {
    const Reply json = get(port(), "/debug/memory/history?" + query + "format=json");
    ASSERT_EQ(json.status, 200) << json.body;
    const liveheap::HistoryReport report = liveheap::history_report_from_json(json.body);
    EXPECT_EQ(liveheap::to_json(report) + "\n", json.body) << query;
    EXPECT_EQ(liveheap::history_report_from_json(liveheap::to_json(report)), report) << query;
    EXPECT_EQ(report.points.size(), 6u);
    const Reply text = get(port(), "/debug/memory/history?" + query);
    EXPECT_EQ(liveheap::to_text(report), text.body) << query;
  }
}

}  // namespace
}  // namespace http_test
