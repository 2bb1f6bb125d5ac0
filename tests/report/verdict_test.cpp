// The verdict rule on synthetic series of known shape, and a history grouped under a key.
#include <gtest/gtest.h>

#include "liveheap/history.hpp"
#include "liveheap/json.hpp"

namespace liveheap {
namespace {

std::vector<std::int64_t> times(std::size_t n, std::int64_t step_ms = 10000) {
  std::vector<std::int64_t> t;
  for (std::size_t i = 0; i < n; ++i) t.push_back(1000000 + static_cast<std::int64_t>(i) * step_ms);
  return t;
}

TEST(Verdict, TooFewPointsIsUnknown) {
  const Verdict v = classify(times(4), {1000, 2000, 3000, 4000});
  EXPECT_EQ(v.trend, Trend::unknown);
  nlohmann::json j;
  add_verdict_json(j, v);
  EXPECT_EQ(j["verdict"], "unknown");
  EXPECT_TRUE(j["growth_per_min"].is_null());
}

TEST(Verdict, LeakGrowingForever) {
  // +1000 bytes every 10 s for 30 points: 6000 bytes per minute, a new high at each point.
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < 30; ++i) sizes.push_back(1000 * i);
  const Verdict v = classify(times(30), sizes);
  EXPECT_EQ(v.trend, Trend::growing);
  EXPECT_DOUBLE_EQ(v.growth_per_min, 6000.0);
  EXPECT_DOUBLE_EQ(v.since_last_growth_s, 0.0);
  EXPECT_EQ(v.window, 10u);  // 30 / 3
}

TEST(Verdict, CacheFillsToCapacityThenFlat) {
  // Fills 10,000 bytes per point to 100,000, then stays there for 20 points (200 s).
  std::vector<std::int64_t> sizes;
  for (int i = 0; i <= 10; ++i) sizes.push_back(10000 * i);
  for (int i = 0; i < 20; ++i) sizes.push_back(100000);
  const Verdict v = classify(times(sizes.size()), sizes);
  EXPECT_EQ(v.trend, Trend::plateaued);
  EXPECT_DOUBLE_EQ(v.growth_per_min, 0.0);
  EXPECT_DOUBLE_EQ(v.since_last_growth_s, 200.0);
  EXPECT_DOUBLE_EQ(v.tolerance, 1000.0);  // 1% of 100,000
}

TEST(Verdict, SteadyChurnIsStable) {
  // Allocates and frees around 50,000: +-200 bytes, under the 1% (505) tolerance.
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < 40; ++i) sizes.push_back(50000 + (i % 2 == 0 ? 200 : -200) + (i % 3 == 0 ? 100 : 0));
  const Verdict v = classify(times(sizes.size()), sizes);
  EXPECT_EQ(v.trend, Trend::stable);
}

TEST(Verdict, DrainingPoolIsShrinking) {
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < 20; ++i) sizes.push_back(1000000 - 30000 * i);
  const Verdict v = classify(times(sizes.size()), sizes);
  EXPECT_EQ(v.trend, Trend::shrinking);
  EXPECT_DOUBLE_EQ(v.growth_per_min, -180000.0);  // -30,000 per 10 s
  EXPECT_DOUBLE_EQ(v.since_last_growth_s, 190.0);  // the first point was the high
}

TEST(Verdict, FlatAllAlongIsStableNotPlateaued) {
  const Verdict v = classify(times(10), std::vector<std::int64_t>(10, 4096));
  EXPECT_EQ(v.trend, Trend::stable);
}

TEST(Verdict, SamplingNoiseWidensTheTolerance) {
  // A 100 KiB sample in sampled mode: a +50,000 step over the window is noise.
  std::vector<std::int64_t> sizes(12, 1000000);
  for (std::size_t i = 10; i < 12; ++i) sizes[i] += 50000;
  EXPECT_EQ(classify(times(12), sizes).trend, Trend::growing);
  EXPECT_EQ(classify(times(12), sizes, 102400).trend, Trend::stable);
}

TEST(Verdict, TextNamesTrendRateAndAge) {
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < 30; ++i) sizes.push_back(1000 * i);
  EXPECT_EQ(verdict_text(classify(times(30), sizes)), " [growing, +6000 B/min, last grew 0 s ago]");
  EXPECT_EQ(verdict_text(Verdict{}), " [unknown]");
}

Frame frame(std::string function, std::string file, unsigned line) {
  return Frame{std::move(function), std::move(file), line, "/bin/prog", 0x1000 + line};
}

TEST(HistoryIndex, GroupsStacksUnderTheReportKey) {
  History h;
  h.interval_s = 1;
  for (int i = 0; i < 3; ++i) h.points.push_back({1000 * i, 0, 0, 0, 0, 0});
  // Two stacks through leak.cpp:10 (from different callers), one through cache.cpp:20.
  h.stacks.push_back({Traceback{frame("leak", "leak.cpp", 10), frame("a", "main.cpp", 1)}, {100, 200, 300}, {1, 2, 3}});
  h.stacks.push_back({Traceback{frame("leak", "leak.cpp", 10), frame("b", "main.cpp", 2)}, {0, 50, 100}, {0, 1, 2}});
  h.stacks.push_back({Traceback{frame("cache", "cache.cpp", 20), frame("a", "main.cpp", 1)}, {500, 500, 500}, {5, 5, 5}});
  HistoryIndex index(h, KeyType::line, false, {});
  ASSERT_EQ(index.all().size(), 2u);
  EXPECT_EQ(index.all()[0].sizes, (std::vector<std::int64_t>{500, 500, 500}));  // biggest last
  const KeySeries* leak = index.find(Traceback{frame("leak", "leak.cpp", 10)});
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->sizes, (std::vector<std::int64_t>{100, 250, 400}));
  EXPECT_EQ(leak->counts, (std::vector<std::int64_t>{1, 3, 5}));
  EXPECT_EQ(index.find(Traceback{frame("other", "other.cpp", 3)}), nullptr);

  HistoryIndex callers(h, KeyType::line, true, {Filter::parse(false, "cache.cpp")});
  const KeySeries* main1 = callers.find(Traceback{frame("a", "main.cpp", 1)});
  ASSERT_NE(main1, nullptr);
  EXPECT_EQ(main1->sizes, (std::vector<std::int64_t>{100, 200, 300}));  // cache.cpp excluded
}

}  // namespace
}  // namespace liveheap
