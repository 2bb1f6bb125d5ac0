// The verdict rule on synthetic series of known shape, and a history grouped under a key.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <random>

#include "liveheap/history.hpp"
#include "liveheap/json.hpp"

namespace liveheap {
namespace {

std::vector<std::int64_t> times(std::size_t n, std::int64_t step_ms = 10000) {
  std::vector<std::int64_t> t;
  for (std::size_t i = 0; i < n; ++i) t.push_back(1000000 + static_cast<std::int64_t>(i) * step_ms);
  return t;
}

// The process's cumulative work, built interval by interval.
class Work {
 public:
  explicit Work(std::size_t n) : per_interval_(n, 1 << 20) {}
  // From point `from` on, `bytes` per interval.
  Work& at(std::size_t from, std::int64_t bytes) {
    for (std::size_t i = from; i < per_interval_.size(); ++i) per_interval_[i] = bytes;
    return *this;
  }
  std::vector<std::int64_t> cumulative() const {
    std::vector<std::int64_t> out;
    std::int64_t total = 1 << 20;
    for (std::size_t i = 0; i < per_interval_.size(); ++i)
      out.push_back(total += i == 0 ? 0 : per_interval_[i]);
    return out;
  }

 private:
  std::vector<std::int64_t> per_interval_;
};

// A callsite's series, a point a second: its live size, its cumulative allocation, and what
// the whole process allocated in the interval ending at the point.
class Series {
 public:
  explicit Series(std::uint64_t noise = 0) : noise_(noise) {}
  void add(std::int64_t size, std::int64_t allocated, std::int64_t process_bytes) {
    t_.push_back(1000000 + 1000 * static_cast<std::int64_t>(t_.size()));
    sizes_.push_back(size);
    allocated_.push_back(allocated);
    if (t_.size() > 1) work_ += process_bytes;
    works_.push_back(work_ + allocated);  // the callsite's allocation is the process's too
  }
  Verdict verdict() const { return classify(t_, sizes_, allocated_, works_, noise_); }

 private:
  std::uint64_t noise_;
  std::vector<std::int64_t> t_, sizes_, allocated_, works_;
  std::int64_t work_ = 0;
};

TEST(Verdict, TooFewPointsIsUnknownUnlessTheyRose) {
  const Verdict v = classify(times(4), {4000, 4000, 4000, 4000});
  EXPECT_EQ(v.trend, Trend::unknown);
  // A rise with all the work seen and no sign of a bound is a leak candidate already.
  EXPECT_EQ(classify(times(4), {1000, 2000, 3000, 4000}).trend, Trend::growing);
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
  EXPECT_DOUBLE_EQ(v.growth_per_min, -180000.0);   // -30,000 per 10 s
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

TEST(Verdict, TextNamesTrendRetentionAndIdleTime) {
  std::vector<std::int64_t> sizes, allocated;
  for (int i = 0; i < 30; ++i) sizes.push_back(1000 * i), allocated.push_back(1000 * i);
  for (int i = 0; i < 62; ++i) sizes.push_back(29000), allocated.push_back(29000);  // 620 s idle
  EXPECT_EQ(verdict_text(classify(times(sizes.size()), sizes, allocated,
                                  Work(sizes.size()).at(30, 0).cumulative(), 0)),
            " [growing, retains 100%, idle 620 s]");
  EXPECT_EQ(verdict_text(classify(times(30), std::vector<std::int64_t>(30, 4096),
                                  std::vector<std::int64_t>(30, 4096), Work(30).cumulative(), 0)),
            " [stable, allocated nothing]");
  EXPECT_EQ(verdict_text(Verdict{}), " [unknown]");
}

// ---- The rule on the program's work: series shaped as the stories the verdict must tell.
// One point a second; `Work` is the process's allocation per interval (cumulative, as the
// history records it), `allocated` the callsite's own cumulative allocation.

TEST(VerdictOnWork, ALeakStaysGrowingThroughAnyIdlePeriod) {
  // 20 s of requests, each point leaking 1000 bytes more, then 15 idle points (a few bytes of
  // background noise): on the clock that reads as a plateau, on the work it is the same leak.
  Series s;
  for (int i = 0; i < 20; ++i) s.add(1000 * i, 1000 * i, 1 << 20);
  for (int i = 0; i < 15; ++i) s.add(19000, 19000, 100);
  const Verdict v = s.verdict();
  EXPECT_EQ(v.trend, Trend::growing);
  EXPECT_DOUBLE_EQ(*v.retention, 1.0);
  EXPECT_DOUBLE_EQ(*v.idle_s, 15.0);
  EXPECT_EQ(v.work_points, 19u);
  EXPECT_DOUBLE_EQ(v.growth_per_min, 60000.0);  // per minute of work: idle minutes do not dilute it
  // Any number of idle points later, the same answer.
  for (int i = 0; i < 300; ++i) s.add(19000, 19000, 0);
  EXPECT_EQ(s.verdict().trend, Trend::growing);
}

TEST(VerdictOnWork, ABurstyLeakOneRequestInTenIsGrowing) {
  // One request a point; every tenth leaks 64 KiB, the others allocate and free.
  Series s;
  std::int64_t live = 0, allocated = 0;
  for (int i = 0; i < 45; ++i) {
    allocated += 4096;
    if (i % 10 == 9) live += 65536, allocated += 65536;
    s.add(live, allocated, 200000);
  }
  EXPECT_EQ(s.verdict().trend, Trend::growing);
  for (int i = 0; i < 15; ++i) s.add(live, allocated, 0);  // and idle after
  EXPECT_EQ(s.verdict().trend, Trend::growing);
}

TEST(VerdictOnWork, ALeakThatStepsRarelyIsGrowingUntilFlatForTwiceItsLongestStep) {
  // A step every 25 points of work: the recent window (20 points) sees none, but the rhythm
  // goes on. Flat for more than twice the longest gap while the program works: it stopped.
  Series s;
  std::int64_t live = 0;
  for (int i = 0; i < 100; ++i) {
    if (i % 25 == 24) live += 100000;
    s.add(live, live + 4096 * i, 200000);
  }
  EXPECT_EQ(s.verdict().trend, Trend::growing);
  // The last step was at point 99: 50 flat points later (twice its longest gap) it still is.
  for (int i = 0; i < 50; ++i) s.add(live, live + 4096 * (100 + i), 200000);
  EXPECT_EQ(s.verdict().trend, Trend::growing);
  for (int i = 0; i < 5; ++i) s.add(live, live + 4096 * (150 + i), 200000);
  EXPECT_EQ(s.verdict().trend, Trend::plateaued);
}

TEST(VerdictOnWork, AnLruAtCapacityWithKeysCyclingPastItIsPlateaued) {
  // Fills to 100,000 bytes in 10 points, then evicts as much as it inserts (50,000 a point)
  // with entries of varying size while the program works.
  Series s;
  std::int64_t allocated = 0;
  for (int i = 0; i <= 10; ++i) s.add(10000 * i, allocated = 10000 * i, 1 << 20);
  for (int i = 0; i < 30; ++i) s.add(100000 + (i % 3) * 300 - 300, allocated += 50000, 1 << 20);
  const Verdict v = s.verdict();
  EXPECT_EQ(v.trend, Trend::plateaued);
  EXPECT_LT(*v.retention, 0.1);  // frees what it allocates
  EXPECT_DOUBLE_EQ(*v.idle_s, 0.0);
}

TEST(VerdictOnWork, AFullCacheThatOnlyHitsIsPlateauedDuringWorkAndAfterIdle) {
  // A primitive cache: fills in 10 points, then every shape is a hit (it allocates nothing)
  // while the rest of the program works; then the program idles.
  Series s;
  for (int i = 0; i <= 10; ++i) s.add(200000 * i, 200000 * i, 4 << 20);
  for (int i = 0; i < 20; ++i) s.add(2000000, 2000000, 4 << 20);
  Verdict v = s.verdict();
  EXPECT_EQ(v.trend, Trend::plateaued);
  EXPECT_DOUBLE_EQ(*v.idle_s, 20.0);
  for (int i = 0; i < 15; ++i) s.add(2000000, 2000000, 0);
  v = s.verdict();
  EXPECT_EQ(v.trend, Trend::plateaued);
  EXPECT_DOUBLE_EQ(*v.retention, 1.0);  // what it allocated it keeps: the verdict says it stopped
  EXPECT_DOUBLE_EQ(*v.idle_s, 35.0);
}

TEST(VerdictOnWork, MemoryMadeAtStartupIsStable) {
  Series s;
  for (int i = 0; i < 40; ++i) s.add(8 << 20, 8 << 20, 1 << 20);
  const Verdict v = s.verdict();
  EXPECT_EQ(v.trend, Trend::stable);
  EXPECT_FALSE(v.retention.has_value());  // allocated nothing in the window
  EXPECT_FALSE(v.idle_s.has_value());
}

TEST(VerdictOnWork, ALeakSeenInOnlyThreePointsOfWorkIsGrowingThroughTheIdleAfter) {
  // 60 points, work in only 3 intervals (a short burst of traffic, then nothing): the leak
  // rose with all the work seen and nothing says it is bounded.
  Series s;
  for (int i = 0; i < 4; ++i) s.add(1000 * i, 1000 * i, 1 << 20);
  for (int i = 0; i < 56; ++i) s.add(3000, 3000, 1000);  // noise: under kVerdictIdleBytes
  const Verdict v = s.verdict();
  EXPECT_EQ(v.trend, Trend::growing);
  EXPECT_EQ(v.work_points, 3u);
  EXPECT_DOUBLE_EQ(*v.retention, 1.0);
  EXPECT_DOUBLE_EQ(*v.idle_s, 56.0);
}

TEST(VerdictOnWork, AFlatCallsiteIsUnknownUntilEnoughWorkIsSeen) {
  Series s;
  for (int i = 0; i < 4; ++i) s.add(3000, 3000, 1 << 20);
  for (int i = 0; i < 56; ++i) s.add(3000, 3000, 1000);
  EXPECT_EQ(s.verdict().trend, Trend::unknown);
  s.add(3000, 3000, 1 << 20);
  s.add(3000, 3000, 1 << 20);
  EXPECT_EQ(s.verdict().trend, Trend::stable);
  EXPECT_EQ(Series().verdict().trend, Trend::unknown);
}

TEST(VerdictOnWork, ALeakWhoseRouteWentQuietWhileLessWorkFollowedStaysGrowing) {
  // The sample's walkthrough: a leak rises with 90 MiB of work on its route, the program then
  // does 30 MiB of work elsewhere while the leak holds, then idles two minutes.
  Series s;
  s.add(0, 0, 1 << 20);
  for (int i = 1; i <= 3; ++i) s.add(20000000 * i, 20000000 * i, 30 << 20);
  for (int i = 0; i < 2; ++i) s.add(60000000, 60000000, 15 << 20);
  for (int i = 0; i < 120; ++i) s.add(60000000, 60000000, 0);
  Verdict v = s.verdict();
  EXPECT_EQ(v.trend, Trend::growing);
  EXPECT_GT(v.growth_per_min, 0);
  // Once the program has worked as much again with the leak flat, it reads as bounded: the
  // rule's stated limit (a leak one route reaches, with traffic gone elsewhere).
  for (int i = 0; i < 10; ++i) s.add(60000000, 60000000, 15 << 20);
  v = s.verdict();
  EXPECT_EQ(v.trend, Trend::plateaued);
  EXPECT_DOUBLE_EQ(*v.retention, 1.0);  // which retention tells
}

TEST(VerdictOnWork, AnLruSeenFillingThenTurningOverInFewPointsIsPlateauedAfterIdle) {
  // The sample's LRU: 32 entries of 64 KiB fill it across two points, the next point's 12
  // inserts evict as many, then the program idles two minutes.
  constexpr std::int64_t kEntry = 65536;
  Series s;
  s.add(0, 0, 1 << 20);
  s.add(20 * kEntry, 20 * kEntry, 20 << 20);
  s.add(32 * kEntry, 32 * kEntry, 12 << 20);
  s.add(32 * kEntry, 44 * kEntry, 12 << 20);
  for (int i = 0; i < 120; ++i) s.add(32 * kEntry, 44 * kEntry, 0);
  Verdict v = s.verdict();
  EXPECT_EQ(v.trend, Trend::plateaued);
  // One insert past capacity is no evidence yet (under a tenth of what it gained).
  Series one;
  one.add(0, 0, 1 << 20);
  one.add(32 * kEntry, 32 * kEntry, 32 << 20);
  one.add(32 * kEntry, 33 * kEntry, 1 << 20);
  EXPECT_EQ(one.verdict().trend, Trend::growing);
}

TEST(VerdictOnWork, SampledEstimatesFollowTheSameRuleWithTheirNoise) {
  // 512 KiB samples: a process interval of one sample's weight is noise (idle); the leak's
  // estimate rises a sample at a time while the program works, then the program idles.
  constexpr std::int64_t kSample = 512 * 1024;
  Series s(kSample);
  for (int i = 0; i < 20; ++i) s.add(kSample * (i / 2), kSample * (i / 2), 4 * kSample);
  for (int i = 0; i < 15; ++i) s.add(kSample * 9, kSample * 9, i % 3 == 0 ? kSample : 0);
  EXPECT_EQ(s.verdict().trend, Trend::growing);
}

// An LRU of 512 entries of 4 KiB, a new key every request, 100 requests a point, sampled at
// 16 KiB (each block kept with p = 1 - e^(-1/4), weighing 4 KiB / p), as the history records
// it: as the entries turn over, the estimate's samples are replaced and it wanders by about
// one standard error, for several points at a time. 3,000 histories of 30 points of work (a
// window of 10), from a fixed seed. With the trend judged at 4 standard errors, 24 read a
// trend from the window's slope (10 `shrinking`); at kVerdictTrendErrors (5), none.
// What remains: ~1 % read `growing` when the last point is a new high of the wander, too
// recent for its turnover since to show (docs/history.md, "What it cannot tell"), and ~5 %
// `stable` when it ends well below its high: neither is `shrinking`.
TEST(VerdictOnWork, SampledLruAtCapacityReadsNoTrendAsItsSamplesTurnOver) {
  constexpr std::int64_t kInterval = 16384, kEntry = 4096, kEntries = 512, kPerPoint = 100;
  const double p = -std::expm1(-static_cast<double>(kEntry) / static_cast<double>(kInterval));
  const double weight = static_cast<double>(kEntry) / p;
  std::mt19937_64 random(20261128);
  const auto sampled = [&] { return static_cast<double>(random() >> 11) * 0x1p-53 < p; };
  constexpr int kRuns = 3000;
  std::map<Trend, int> read;
  for (int run = 0; run < kRuns; ++run) {
    History h;
    h.interval_s = 1;
    h.noise = kInterval;
    KeySeries lru;
    std::deque<bool> entries;  // whether each live entry was sampled
    std::int64_t live_samples = 0, samples_made = 0;
    for (int point = 0; point < 30; ++point) {
      for (int r = 0; r < kPerPoint; ++r) {
        entries.push_back(sampled());
        live_samples += entries.back(), samples_made += entries.back();
        if (static_cast<std::int64_t>(entries.size()) > kEntries)
          live_samples -= entries.front(), entries.pop_front();
      }
      HistoryPoint at;
      at.t_ms = 1000000 + 1000 * point;
      at.allocated = (point + 1) * (1 << 20) + std::llround(static_cast<double>(samples_made) * weight);
      h.points.push_back(at);
      lru.sizes.push_back(std::llround(static_cast<double>(live_samples) * weight));
      lru.counts.push_back(std::llround(static_cast<double>(live_samples) / p));
      lru.allocated.push_back(std::llround(static_cast<double>(samples_made) * weight));
    }
    ++read[classify(h, lru).trend];
  }
  EXPECT_LE(read[Trend::shrinking], 1);
  EXPECT_LE(read[Trend::growing], kRuns * 15 / 1000);
  EXPECT_GE(read[Trend::plateaued], kRuns * 92 / 100);
}

TEST(VerdictOnWork, ProcessesMergeRetentionByWhatEachAllocated) {
  Verdict a, b;
  a.trend = b.trend = Trend::growing;
  a.retention = 1.0, a.allocated = 3000, a.idle_s = 40;
  b.retention = 0.0, b.allocated = 1000, b.idle_s = 5;
  merge_verdicts(a, b);
  EXPECT_EQ(a.trend, Trend::growing);
  EXPECT_DOUBLE_EQ(*a.retention, 0.75);
  EXPECT_DOUBLE_EQ(a.allocated, 4000);
  EXPECT_DOUBLE_EQ(*a.idle_s, 5);
  Verdict c;
  c.trend = Trend::plateaued;
  merge_verdicts(a, c);  // they disagree: unknown, the reasons still summed
  EXPECT_EQ(a.trend, Trend::unknown);
  EXPECT_DOUBLE_EQ(*a.retention, 0.75);

  nlohmann::json j;
  add_verdict_json(j, b);
  EXPECT_EQ(j["retention"], 0.0);
  EXPECT_EQ(j["idle_s"], 5.0);
  const Verdict read = verdict_from_json(j);
  EXPECT_EQ(read.trend, Trend::growing);
  EXPECT_DOUBLE_EQ(*read.retention, 0.0);
  EXPECT_DOUBLE_EQ(read.allocated, 1000);
  EXPECT_FALSE(verdict_from_json(nlohmann::json{{"verdict", "stable"}}).retention.has_value());
}

Frame frame(std::string function, std::string file, unsigned line) {
  return Frame{std::move(function), std::move(file), line, "/bin/prog", 0x1000 + line};
}

TEST(HistoryIndex, GroupsStacksUnderTheReportKey) {
  History h;
  h.interval_s = 1;
  for (int i = 0; i < 3; ++i) h.points.push_back({1000 * i, 0, 0, 0, 0, 0});
  // Two stacks through leak.cpp:10 (from different callers), one through cache.cpp:20.
  // Live bytes, blocks; allocated bytes, blocks (cumulative).
  h.stacks.push_back({Traceback{frame("leak", "leak.cpp", 10), frame("a", "main.cpp", 1)},
                      {100, 200, 300},
                      {1, 2, 3},
                      {100, 200, 300},
                      {1, 2, 3}});
  h.stacks.push_back({Traceback{frame("leak", "leak.cpp", 10), frame("b", "main.cpp", 2)},
                      {0, 50, 100},
                      {0, 1, 2},
                      {4000, 4050, 4100},
                      {40, 41, 42}});
  h.stacks.push_back({Traceback{frame("cache", "cache.cpp", 20), frame("a", "main.cpp", 1)},
                      {500, 500, 500},
                      {5, 5, 5},
                      {500, 500, 500},
                      {5, 5, 5}});
  HistoryIndex index(h, KeyType::line, false, {});
  ASSERT_EQ(index.all().size(), 2u);
  EXPECT_EQ(index.all()[0].sizes, (std::vector<std::int64_t>{500, 500, 500}));  // biggest last
  const KeySeries* leak = index.find(Traceback{frame("leak", "leak.cpp", 10)});
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->sizes, (std::vector<std::int64_t>{100, 250, 400}));
  EXPECT_EQ(leak->counts, (std::vector<std::int64_t>{1, 3, 5}));
  EXPECT_EQ(leak->allocated, (std::vector<std::int64_t>{4100, 4250, 4400}));  // the group's work
  EXPECT_EQ(leak->allocations, (std::vector<std::int64_t>{41, 43, 45}));
  EXPECT_EQ(index.find(Traceback{frame("other", "other.cpp", 3)}), nullptr);

  HistoryIndex callers(h, KeyType::line, true, {Filter::parse(false, "cache.cpp")});
  const KeySeries* main1 = callers.find(Traceback{frame("a", "main.cpp", 1)});
  ASSERT_NE(main1, nullptr);
  EXPECT_EQ(main1->sizes, (std::vector<std::int64_t>{100, 200, 300}));  // cache.cpp excluded
}

}  // namespace
}  // namespace liveheap
