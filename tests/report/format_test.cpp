// Text output against CPython's tracemalloc, byte for byte (expected strings were printed
// by Python 3.11's tracemalloc._format_size, Statistic and StatisticDiff).
#include <gtest/gtest.h>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"

namespace liveheap {
namespace {

struct SizeCase {
  double size;
  const char* plain;
  const char* sign;
};

TEST(Format, SizeMatchesTracemallocByteForByte) {
  const SizeCase cases[] = {
      {0, "0 B", "+0 B"},
      {1, "1 B", "+1 B"},
      {99, "99 B", "+99 B"},
      {100, "100 B", "+100 B"},
      {1023, "1023 B", "+1023 B"},
      {1024, "1024 B", "+1024 B"},
      {10239, "10239 B", "+10239 B"},
      {10240, "10.0 KiB", "+10.0 KiB"},
      {102297, "99.9 KiB", "+99.9 KiB"},
      {102298, "99.9 KiB", "+99.9 KiB"},
      {102399, "100.0 KiB", "+100.0 KiB"},
      {102400, "100 KiB", "+100 KiB"},
      {10485759, "10240 KiB", "+10240 KiB"},
      {10485760, "10.0 MiB", "+10.0 MiB"},
      {40370176, "38.5 MiB", "+38.5 MiB"},
      {-1, "-1 B", "-1 B"},
      {-99, "-99 B", "-99 B"},
      {-10240, "-10.0 KiB", "-10.0 KiB"},
      {-26843545, "-25.6 MiB", "-25.6 MiB"},
      {1073741824, "1024 MiB", "+1024 MiB"},
      {107374182400, "100 GiB", "+100 GiB"},
      {1099511627776, "1024 GiB", "+1024 GiB"},
      {10995116277760, "10.0 TiB", "+10.0 TiB"},
      {1125899906842624, "1024 TiB", "+1024 TiB"},
      {-1125899906842624, "-1024 TiB", "-1024 TiB"},
  };
  for (const SizeCase& c : cases) {
    EXPECT_EQ(format_size(c.size, false), c.plain) << c.size;
    EXPECT_EQ(format_size(c.size, true), c.sign) << c.size;
  }
}

Traceback line_key() { return {Frame{"f()", "samples/leaky_server.cpp", 57, "leaky_server", 0x10}}; }

TEST(Format, StatisticsMatchTracemalloc) {
  EXPECT_EQ(format_statistic({line_key(), 40370176, 6}, KeyType::line),
            "samples/leaky_server.cpp:57: size=38.5 MiB, count=6, average=6571 KiB");
  EXPECT_EQ(format_statistic({line_key(), 0, 0}, KeyType::line),
            "samples/leaky_server.cpp:57: size=0 B, count=0");
  EXPECT_EQ(format_statistic_diff({line_key(), 40370176, 26843545, 6, 4}, KeyType::line),
            "samples/leaky_server.cpp:57: size=38.5 MiB (+25.6 MiB), count=6 (+4), average=6571 KiB");
  EXPECT_EQ(format_statistic_diff({line_key(), 0, -26843545, 0, -4}, KeyType::line),
            "samples/leaky_server.cpp:57: size=0 B (-25.6 MiB), count=0 (-4)");
  EXPECT_EQ(format_statistic_diff({line_key(), 1000, 0, 3, 0}, KeyType::line),
            "samples/leaky_server.cpp:57: size=1000 B (+0 B), count=3 (+0), average=333 B");
}

TEST(Format, KeysByType) {
  const Frame user{"handle(int)", "/src/app.cpp", 12, "/bin/app", 0x42};
  const Frame alloc{"operator new(unsigned long)", "", 0, "/lib/libliveheap.so", 0x1};
  const Traceback whole{alloc, user};
  EXPECT_EQ(format_key({user}, KeyType::line), "/src/app.cpp:12");
  EXPECT_EQ(format_key({user}, KeyType::file), "/src/app.cpp");
  EXPECT_EQ(format_key({user}, KeyType::function), "handle(int)");
  EXPECT_EQ(format_key(whole, KeyType::traceback), "/src/app.cpp:12");  // the user frame
  const Frame no_debug{"libfoo.so+0x1234", "", 0, "/usr/lib/libfoo.so", 0x1234};
  EXPECT_EQ(format_key({no_debug}, KeyType::line), "libfoo.so+0x1234");
  const auto lines = format_traceback(whole);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "  File \"/lib/libliveheap.so\", in operator new");
  EXPECT_EQ(lines[1], "  File \"/src/app.cpp\", line 12, in handle");
}

TEST(Format, TheTrackerMemoryCapIsNamedOnlyOnceReached) {
  TrackerMemoryCap cap{24 << 20, false, 0, 0, 0, 0};
  EXPECT_EQ(format_cap(cap), "");
  cap = {24 << 20, true, 121332, 7765248, 3, 300};
  EXPECT_EQ(format_cap(cap),
            "tracker-memory cap 24.0 MiB reached: 121332 allocations (7583 KiB) folded into "
            "[over the tracker-memory cap], 3 dropped (300 B)");
  EXPECT_EQ(to_json(cap), nlohmann::json::parse(R"({"max_bytes": 25165824, "reached": true,
      "folded_blocks": 121332, "folded_bytes": 7765248, "dropped_blocks": 3, "dropped_bytes": 300})"));
  SnapshotInfo info;
  info.cap = cap;
  EXPECT_EQ(to_json(info)["tracker_memory_cap"], to_json(cap));
}

TEST(Format, JsonCarriesTheSameFieldsAsNumbers) {
  const nlohmann::json j = to_json(StatisticDiff{line_key(), 40370176, 26843545, 6, 4}, KeyType::line);
  EXPECT_EQ(j["key"], "samples/leaky_server.cpp:57");
  EXPECT_EQ(j["file"], "samples/leaky_server.cpp");
  EXPECT_EQ(j["line"], 57);
  EXPECT_EQ(j["function"], "f()");
  EXPECT_EQ(j["module"], "leaky_server");
  EXPECT_EQ(j["size"], 40370176);
  EXPECT_EQ(j["size_diff"], 26843545);
  EXPECT_EQ(j["count"], 6);
  EXPECT_EQ(j["count_diff"], 4);
  EXPECT_DOUBLE_EQ(j["average"].get<double>(), 40370176.0 / 6);
  EXPECT_EQ(j["traceback"][0]["address"], "0x10");
  const nlohmann::json s = to_json(Statistic{line_key(), 0, 0}, KeyType::line);
  EXPECT_FALSE(s.contains("size_diff"));
  EXPECT_EQ(s["average"], 0.0);
}

}  // namespace
}  // namespace liveheap
