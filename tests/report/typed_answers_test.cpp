// The typed answers of /stats, /baseline, /trim, /processes and /history on hand-built
// values: each reads back as it was written (from_json(to_json(x)) == x), its text, and
// malformed documents refused naming the field.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "liveheap/baseline_report.hpp"
#include "liveheap/history_report.hpp"
#include "liveheap/processes_report.hpp"
#include "liveheap/stats_report.hpp"
#include "liveheap/trim_report.hpp"

namespace liveheap {
namespace {

// The message of the std::invalid_argument `read` throws, or "" when it throws none.
template <typename Read>
std::string refusal(Read read) {
  try {
    read();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// `json` with the first `from` replaced by `to`.
std::string edited(std::string json, const std::string& from, const std::string& to) {
  const auto at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << json;
  if (at != std::string::npos) json.replace(at, from.size(), to);
  return json;
}

StatsReport jemalloc_stats() {
  StatsReport r;
  r.mode = Mode::sampled;
  r.tracing = true;
  r.sample_interval = 524288;
  r.max_frames = 64;
  r.traced_current = 1 << 20;
  r.traced_peak = 3 << 20;
  r.tracker_memory = 5 << 20;
  r.cap = {256 << 20, true, 3, 4096, 1, 100};
  r.stack_table_bytes = 1 << 20;
  r.live_table_bytes = 0;
  r.stacks = 42;
  r.live_blocks = 7;
  r.dropped = 1;
  r.fallback_walks = 2;
  r.sampled = {7, 65536, 8192, 1 << 20, 3, 4096, 3 << 20};
  r.symbolizer = {100, 98, StatsReport::SymbolizerProcess{4321, 30 << 20, 12}, ""};
  r.rss = 40 << 20;
  r.peak_rss = 50 << 20;
  r.mallinfo = {1, 2, 3, 4, 5, std::nullopt, std::nullopt};
  // Not in the order of their names: read back, they come in the allocator's order again.
  r.allocator = {"jemalloc",
                 "/usr/lib/libjemalloc.so.2",
                 {{"allocated", 1000},
                  {"active", 2000},
                  {"resident", 3000},
                  {"retained", 0},
                  {"mapped", 4000},
                  {"metadata", 500}}};
  r.windows = 1;
  return r;
}

TEST(StatsReports, ReadBackAsWrittenWithTheAllocatorsFiguresInItsOrder) {
  const StatsReport r = jemalloc_stats();
  EXPECT_EQ(stats_report_from_json(to_json(r)), r);
  StatsReport glibc = r;
  glibc.mode = Mode::exact;
  glibc.symbolizer = {5, 5, std::nullopt, "cannot start liveheap-symbolizer"};
  glibc.mallinfo.age_ms = 1500;
  glibc.mallinfo.read_ms = 0.25;
  glibc.allocator = {
      "glibc", "libc.so.6", {{"arena", 1}, {"hblkhd", 2}, {"uordblks", 3}, {"fordblks", 4}, {"keepcost", 5}}};
  EXPECT_EQ(stats_report_from_json(to_json(glibc)), glibc);
}

TEST(StatsReports, TextSaysWhatTheJsonSays) {
  EXPECT_EQ(to_text(jemalloc_stats()),
            "tracing: on, mode=sampled, max_frames=64, sample_interval=512 KiB\n"
            "traced: current=1024 KiB, peak=3072 KiB\n"
            "tracker memory: 5120 KiB (cap 256 MiB; stack table 1024 KiB, live-block table 0 B)\n" +
                format_cap(jemalloc_stats().cap) +
                "\nstacks=42, live_blocks=7, dropped=1, fallback_walks=2\n"
                "sampled: 7 samples live in 3072 KiB of glibc's heap and 64.0 KiB of runs, 8192 B kept for "
                "reuse (at most 1024 KiB now), "
                "4096 B kept by threads for their next sample, 3 madvise calls\n"
                "rss=40.0 MiB, peak_rss=50.0 MiB\n"
                "allocator: jemalloc: allocated=1000 B, active=2000 B, resident=3000 B, retained=0 B, "
                "mapped=4000 B, metadata=500 B\n"
                "symbolizer: pid 4321, rss=30.0 MiB, 12 files read\n");
}

TEST(StatsReports, AMalformedDocumentIsRefusedNamingTheField) {
  const std::string good = to_json(jemalloc_stats());
  EXPECT_EQ(refusal([&] { stats_report_from_json(edited(good, "\"peak\":3145728", "\"peek\":3145728")); }),
            "stats JSON: traced.peak is missing");
  EXPECT_EQ(refusal([&] { stats_report_from_json(edited(good, "\"rss\":41943040", "\"rss\":\"40 MiB\"")); }),
            "stats JSON: rss is a string, not an integer");
  EXPECT_EQ(refusal([&] {
              stats_report_from_json(edited(good, "\"mode\":\"sampled\"", "\"mode\":\"sometimes\""));
            }).rfind("stats JSON: mode is not known: ", 0),
            0u);
  EXPECT_EQ(refusal([&] { stats_report_from_json(edited(good, "\"active\":2000", "\"active\":-1.5")); }),
            "stats JSON: allocator.active is a fraction, not an integer");
  EXPECT_EQ(refusal([&] { stats_report_from_json("[1, 2]"); }),
            "stats JSON: the document is an array, not an object");
  EXPECT_EQ(refusal([&] { stats_report_from_json("{"); }), "stats JSON: the text is not JSON");
}

BaselineReport a_baseline() {
  BaselineReport r;
  r.mode = Mode::exact;
  r.max_frames = 32;
  r.taken_at_ms = 1795345860000;
  r.age_ms = 3500;
  r.total_size = 3 << 20;
  r.total_count = 300;
  r.stacks = 42;
  r.traced_current = 3 << 20;
  r.traced_peak = 4 << 20;
  r.tracker_memory = 1 << 20;
  r.cap.max_bytes = 256 << 20;
  return r;
}

TEST(BaselineReports, ReadBackAsWrittenAndSaidInOneLine) {
  BaselineReport r = a_baseline();
  EXPECT_EQ(baseline_report_from_json(to_json(r)), r);
  EXPECT_EQ(to_text(r), "baseline taken 3 s ago: size=3072 KiB, count=300, stacks=42 (mode=exact)");
  r.group_processes = 3;
  EXPECT_EQ(baseline_report_from_json(to_json(r)), r);
  EXPECT_EQ(to_text(r),
            "baseline taken 3 s ago: size=3072 KiB, count=300, stacks=42 (mode=exact) "
            "(this is 1 of the 3 processes of this program: pid=all sets them all)");
  EXPECT_EQ(
      refusal([&] { baseline_report_from_json(edited(to_json(r), "\"count\":300", "\"blocks\":300")); }),
      "baseline JSON: total.count is missing");
  EXPECT_EQ(refusal([&] {
              baseline_report_from_json(edited(to_json(r), "\"processes\":3", "\"processes\":true"));
            }),
            "baseline JSON: group.processes is a boolean, not a whole number");
}

TEST(BaselineReports, EveryProcessesAnswerReadsBackAsWritten) {
  BaselinesReport all;
  all.processes = {{41, 200, a_baseline(), ""}, {42, 502, std::nullopt, "unreachable: cannot connect"}};
  EXPECT_EQ(baselines_report_from_json(to_json(all)), all);
  EXPECT_EQ(to_text(all),
            "pid 41: baseline of 3072 KiB in 300 blocks\npid 42: unreachable: cannot connect\n");
  EXPECT_EQ(
      refusal([&] { baselines_report_from_json(edited(to_json(all), "\"stacks\":42", "\"stacks\":null")); }),
      "baselines JSON: processes[0].baseline.stacks is null, not a whole number");
  EXPECT_EQ(refusal([&] { baselines_report_from_json(edited(to_json(all), "\"error\":", "\"why\":")); }),
            "baselines JSON: processes[1].error is missing");
}

TEST(TrimReports, ReadBackAsWrittenAndSaidInOneLine) {
  const TrimReport r{true, "glibc", "malloc_trim(0) released memory", 1 << 20, 40 << 20, 12 << 20};
  EXPECT_EQ(trim_report_from_json(to_json(r)), r);
  EXPECT_EQ(to_text(r),
            "malloc_trim(0) released memory: rss 40.0 MiB -> 12.0 MiB; liveheap gave back 1024 KiB of freed "
            "samples");
  EXPECT_EQ(to_text(TrimReport{false, "jemalloc", "jemalloc: purged every arena", 0, 100, 100}),
            "jemalloc: purged every arena: rss 100 B -> 100 B");
  EXPECT_EQ(
      refusal([&] { trim_report_from_json(edited(to_json(r), "\"released\":true", "\"released\":1")); }),
      "trim JSON: released is a number, not true or false");
}

TEST(TrimReports, MemoryWentBackWhenGlibcSaysSoOrElseWhenRssFell) {
  EXPECT_TRUE(trim_released("malloc_trim(0) released memory", 10, 10));
  EXPECT_FALSE(trim_released("malloc_trim(0) released nothing", 10, 5));
  EXPECT_TRUE(trim_released("jemalloc: purged every arena", 10, 5));
  EXPECT_FALSE(trim_released("jemalloc: purged every arena", 10, 10));
}

TEST(ProcessesReports, ReadBackAsWrittenAndLaidOutAsATable) {
  ProcessesReport r;
  r.processes = {{41, 1, "prefork_truth 2", "exact", 1 << 20, 8 << 20, 1795345860000},
                 {42, 41, "prefork_truth 2", "unreachable", std::nullopt, std::nullopt, 1795345861000}};
  r.this_pid = 41;
  EXPECT_EQ(processes_report_from_json(to_json(r)), r);
  EXPECT_EQ(to_text(r),
            "2 processes (this one: pid 41)\n"
            "     PID     PPID MODE             TRACED         RSS  CMDLINE\n"
            "      41        1 exact          1024 KiB    8192 KiB  prefork_truth 2\n"
            "      42       41 unreachable           -           -  prefork_truth 2\n");
  EXPECT_EQ(
      refusal([&] { processes_report_from_json(edited(to_json(r), "\"ppid\":41", "\"ppid\":\"41\"")); }),
      "processes JSON: processes[1].ppid is a string, not an integer");
  EXPECT_EQ(refusal([&] { processes_report_from_json(edited(to_json(r), "\"rss\":8388608", "\"rss\":[]")); }),
            "processes JSON: processes[0].rss is an array, not an integer or null");
}

// A history of three points one second apart, with two stacks: one that grows, one that
// holds its size.
History three_points() {
  const Frame grows{"grow()", "/src/app.cpp", 12, "/bin/app", 0x42};
  const Frame holds{"hold()", "/src/cache.cpp", 40, "/bin/app", 0x99};
  History h;
  h.interval_s = 1;
  h.max_points = 360;
  h.stacks_per_point = 100;
  for (int i = 0; i < 3; ++i)
    h.points.push_back({1795345860000 + 1000 * i,
                        1000 * (i + 2),
                        4000,
                        1 << 20,
                        0,
                        0,
                        {{"arena", 100}, {"hblkhd", 200}},
                        10000 * (i + 1),
                        10 * (i + 1)});
  h.stacks.push_back({Traceback{grows}, {1000, 2000, 3000}, {1, 2, 3}, {1000, 2000, 3000}, {1, 2, 3}});
  h.stacks.push_back({Traceback{holds}, {1000, 1000, 1000}, {1, 1, 1}, {1000, 1000, 1000}, {1, 1, 1}});
  return h;
}

TEST(HistoryReports, ReadBackAsWrittenWithTheTopKeysAndTheirSeries) {
  ReportRequest request;
  request.key = KeyType::line;
  request.limit = 1;
  const HistoryReport made = make_history_report(three_points(), request, "glibc");
  ASSERT_EQ(made.lines.size(), 1u);
  EXPECT_EQ(made.keys, 2u);
  EXPECT_EQ(made.lines[0].stat.key, "/src/app.cpp:12");
  EXPECT_EQ(made.lines[0].series.back(), (HistoryReport::Sample{1795345862000, 3000, 3}));
  const HistoryReport read = history_report_from_json(to_json(made));
  EXPECT_EQ(history_report_from_json(to_json(read)), read);
  EXPECT_EQ(to_json(read), to_json(made));
  EXPECT_EQ(read.points, made.points);  // the allocator's figures in glibc's order
  EXPECT_EQ(to_text(read), to_text(made));
  EXPECT_EQ(to_text(made).substr(0, to_text(made).find('\n')),
            "History: 3 points every 1 s over 2 s; last: traced=4000 B, peak=4000 B, rss=1024 KiB");
  EXPECT_NE(to_text(made).find(
                "\nTop 1 of 2 lines by size now:\n/src/app.cpp:12: size=3000 B, count=3, average=1000 B ["),
            std::string::npos)
      << to_text(made);
}

TEST(HistoryReports, LinesPastTheByteBudgetAreLeftOutAndSaidSo) {
  ReportRequest request;
  request.key = KeyType::function;
  const HistoryReport made = make_history_report(three_points(), request, "glibc");
  ASSERT_EQ(made.lines.size(), 2u);
  const HistoryReport cut = history_report_from_json(to_json(made, 600));
  EXPECT_TRUE(cut.truncated);
  EXPECT_LT(cut.lines.size(), 2u);
  const std::string text = to_text(made, 200);
  EXPECT_NE(text.find("(truncated at 200 B: "), std::string::npos) << text;
}

TEST(HistoryReports, AMalformedDocumentIsRefusedNamingTheField) {
  ReportRequest request;
  request.traceback = true;
  const std::string good = to_json(make_history_report(three_points(), request, "glibc"));
  EXPECT_EQ(refusal([&] {
              history_report_from_json(edited(good, "[1795345862000,3000,3]", "[1795345862000,3000]"));
            }),
            "history JSON: stats[0].allocated_series[2] is an array, not an array of three integers");
  EXPECT_EQ(refusal([&] { history_report_from_json(edited(good, "\"idle\":false", "\"idle\":0")); }),
            "history JSON: points[0].idle is a number, not true or false");
  EXPECT_EQ(refusal([&] {
              history_report_from_json(edited(good, "\"key\":\"line\"", "\"key\":\"lines\""));
            }).rfind("history JSON: key is not known: ", 0),
            0u);
  EXPECT_EQ(refusal([&] { history_report_from_json(edited(good, "\"traceback\":[", "\"stack\":[")); }),
            "history JSON: stats[1].traceback is there (stats[0] has none)");
}

}  // namespace
}  // namespace liveheap
