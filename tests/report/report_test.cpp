// The report document (liveheap/report.hpp) on hand-built snapshots of known bytes: its
// JSON field by field and byte for byte, its text, reading JSON back (round trips, and
// malformed documents refused naming the field).
#include <gtest/gtest.h>

#include <algorithm>

#include "liveheap/format.hpp"
#include "liveheap/json.hpp"
#include "liveheap/report.hpp"

namespace liveheap {
namespace {

using nlohmann::json;

const Frame kAlloc{"operator new(unsigned long)", "", 0, "/lib/libliveheap.so", 0x1};
const Frame kHandle{"handle(int)", "/src/app.cpp", 12, "/bin/app", 0x42};
const Frame kFill{"cache::fill()", "/src/cache.cpp", 40, "/bin/app", 0x99};

constexpr std::int64_t kNowMs = 1795345872000;
constexpr std::int64_t kOldMs = 1795345860000;

SnapshotInfo info_at(std::int64_t ms, Mode mode = Mode::exact, std::uint64_t interval = 0) {
  SnapshotInfo info;
  info.mode = mode;
  info.sample_interval = interval;
  info.max_frames = 32;
  info.taken_at_ms = ms;
  return info;
}

// handle() grew from 1000 B in 2 blocks to 41000 B in 10; cache::fill() stayed at 4096 B.
Snapshot now_snapshot(Mode mode = Mode::exact, std::uint64_t interval = 0) {
  return Snapshot({{Traceback{kAlloc, kHandle}, 41000, 10}, {Traceback{kAlloc, kFill}, 4096, 1}},
                  info_at(kNowMs, mode, interval));
}
Snapshot old_snapshot() {
  return Snapshot({{Traceback{kAlloc, kHandle}, 1000, 2}, {Traceback{kAlloc, kFill}, 4096, 1}},
                  info_at(kOldMs));
}

// handle() is growing at 1200.4 B/min, last grew 3 s ago, keeps all of the 40,000 bytes it
// allocated over the history, last allocated 3 s ago; the rest has no verdict yet.
Verdict verdict_of(const Traceback& key) {
  Verdict v;
  for (const Frame& f : key)
    if (f == kHandle) {
      v.trend = Trend::growing;
      v.growth_per_min = 1200.4;
      v.since_last_growth_s = 3;
      v.retention = 1.0;
      v.idle_s = 3;
      v.allocated = 40000;
    }
  return v;
}

Report known_diff(ReportRequest request = {}) {
  return make_diff_report(now_snapshot(), old_snapshot(), "the baseline", request, verdict_of);
}

TEST(ReportJson, KnownDiffFieldByField) {
  const json j = json::parse(to_json(known_diff()));
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["mode"], "exact");
  EXPECT_EQ(j["sample_interval"], 0);
  EXPECT_EQ(j["max_frames"], 32);
  EXPECT_EQ(j["taken_at_ms"], kNowMs);
  EXPECT_EQ(j["old_taken_at_ms"], kOldMs);
  EXPECT_EQ(j["against"], "the baseline");
  EXPECT_EQ(j["key"], "line");
  EXPECT_EQ(j["cumulative"], false);
  EXPECT_EQ(j["limit"], 10);
  EXPECT_EQ(j["include"], json::array());
  EXPECT_EQ(j["exclude"], json::array());
  EXPECT_EQ(j["keys"], 2);
  EXPECT_EQ(j["truncated"], false);
  EXPECT_EQ(j["total"], (json{{"size", 45096}, {"size_diff", 40000}, {"count", 11}, {"count_diff", 8}}));
  ASSERT_EQ(j["stats"].size(), 2u);
  const json& grew = j["stats"][0];
  EXPECT_EQ(grew["key"], "/src/app.cpp:12");
  EXPECT_EQ(grew["function"], "handle(int)");
  EXPECT_EQ(grew["short_function"], "handle");
  EXPECT_EQ(grew["file"], "/src/app.cpp");
  EXPECT_EQ(grew["line"], 12);
  EXPECT_EQ(grew["module"], "/bin/app");
  EXPECT_EQ(grew["size"], 41000);
  EXPECT_EQ(grew["size_diff"], 40000);
  EXPECT_EQ(grew["count"], 10);
  EXPECT_EQ(grew["count_diff"], 8);
  EXPECT_EQ(grew["average"], 4100.0);
  EXPECT_EQ(grew["verdict"], "growing");
  EXPECT_EQ(grew["growth_per_min"], 1200.0);  // rounded to whole bytes
  EXPECT_EQ(grew["since_last_growth_s"], 3.0);
  EXPECT_EQ(grew["retention"], 1.0);
  EXPECT_EQ(grew["idle_s"], 3.0);
  EXPECT_EQ(grew["allocated_in_window"], 40000.0);
  EXPECT_FALSE(grew.contains("traceback")) << "whole stacks only where asked";
  const json& flat = j["stats"][1];
  EXPECT_EQ(flat["key"], "/src/cache.cpp:40");
  EXPECT_EQ(flat["size_diff"], 0);
  EXPECT_EQ(flat["verdict"], "unknown");
  EXPECT_TRUE(flat["growth_per_min"].is_null());
  EXPECT_TRUE(flat["since_last_growth_s"].is_null());
  EXPECT_TRUE(flat["retention"].is_null());
  EXPECT_TRUE(flat["idle_s"].is_null());
  EXPECT_EQ(j.size(), 17u) << j.dump();  // nothing more
  EXPECT_EQ(grew.size(), 18u) << grew.dump();
}

TEST(ReportJson, KnownDiffByteForByte) {
  EXPECT_EQ(
      to_json(known_diff()),
      R"j({"against":"the baseline","cumulative":false,"exclude":[],"include":[],"key":"line","keys":2,)j"
      R"j("limit":10,"max_frames":32,"mode":"exact","old_taken_at_ms":1795345860000,"sample_interval":0,)j"
      R"j("schema":1,"stats":[{"allocated_in_window":40000.0,"average":4100.0,"count":10,"count_diff":8,)j"
      R"j("file":"/src/app.cpp","function":"handle(int)","growth_per_min":1200.0,"idle_s":3.0,)j"
      R"j("key":"/src/app.cpp:12","kind":"native","line":12,"module":"/bin/app","retention":1.0,"short_function":"handle",)j"
      R"j("since_last_growth_s":3.0,"size":41000,"size_diff":40000,"verdict":"growing"},)j"
      R"j({"allocated_in_window":0.0,"average":4096.0,"count":1,"count_diff":0,)j"
      R"j("file":"/src/cache.cpp","function":"cache::fill()","growth_per_min":null,"idle_s":null,)j"
      R"j("key":"/src/cache.cpp:40","kind":"native","line":40,"module":"/bin/app","retention":null,"short_function":"cache::fill",)j"
      R"j("since_last_growth_s":null,"size":4096,"size_diff":0,"verdict":"unknown"}],)j"
      R"j("taken_at_ms":1795345872000,"total":{"count":11,"count_diff":8,"size":45096,"size_diff":40000},)j"
      R"j("tracker_memory_cap":{"dropped_blocks":0,"dropped_bytes":0,"folded_blocks":0,)j"
      R"j("folded_bytes":0,"max_bytes":0,"reached":false},"truncated":false})j");
}

TEST(ReportJson, StatisticsHaveNoDiffFieldsAndStacksWhereAsked) {
  ReportRequest request;
  request.key = KeyType::traceback;
  const json j = to_json_value(make_report(now_snapshot(), request, verdict_of));
  EXPECT_FALSE(j.contains("against"));
  EXPECT_FALSE(j.contains("old_taken_at_ms"));
  EXPECT_EQ(j["total"], (json{{"size", 45096}, {"count", 11}}));
  ASSERT_EQ(j["stats"].size(), 2u);
  const json& top = j["stats"][0];
  EXPECT_FALSE(top.contains("size_diff"));
  EXPECT_EQ(top["key"], "/src/app.cpp:12");
  EXPECT_EQ(top["function"], "handle(int)");  // the user frame, not operator new
  ASSERT_EQ(top["traceback"].size(), 2u);
  EXPECT_EQ(top["traceback"][0]["function"], "operator new(unsigned long)");
  EXPECT_EQ(top["traceback"][0]["address"], "0x1");
  EXPECT_EQ(top["traceback"][1]["address"], "0x42");
  EXPECT_EQ(top["traceback"][1]["short_function"], "handle");

  request = {};
  request.traceback = true;  // key=line with traceback=1: the whole stack, not the key's frame
  const json line = to_json_value(make_report(now_snapshot(), request));
  ASSERT_EQ(line["stats"][0]["traceback"].size(), 2u);
  EXPECT_EQ(line["stats"][0]["traceback"][0]["function"], "operator new(unsigned long)");
  EXPECT_EQ(line["stats"][0]["traceback"][1]["line"], 12);
  EXPECT_EQ(line["stats"][0]["key"], "/src/app.cpp:12");
}

// traceback=1 with a key of one frame: each line carries the biggest whole stack counted in
// it (for a diff, the one that changed most); the line's key, frame and values stay the key's.
TEST(ReportJson, TracebackWithKeyLineCarriesTheBiggestWholeStack) {
  const Frame from_a{"serve_a()", "/src/a.cpp", 3, "/bin/app", 0x70};
  const Frame from_b{"serve_b()", "/src/b.cpp", 8, "/bin/app", 0x80};
  const Snapshot old(
      {{Traceback{kAlloc, kHandle, from_a}, 500, 1}, {Traceback{kAlloc, kHandle, from_b}, 100, 1}},
      info_at(kOldMs));
  const Snapshot now(
      {{Traceback{kAlloc, kHandle, from_a}, 600, 2}, {Traceback{kAlloc, kHandle, from_b}, 400, 3}},
      info_at(kNowMs));
  for (const KeyType key : {KeyType::line, KeyType::function, KeyType::file}) {
    ReportRequest request;
    request.key = key;
    request.traceback = true;
    const Report top = make_report(now, request);
    ASSERT_EQ(top.lines.size(), 1u) << to_string(key);
    EXPECT_EQ(top.lines[0].traceback, (Traceback{kAlloc, kHandle, from_a})) << to_string(key);
    EXPECT_EQ(top.lines[0].key, format_key(Traceback{kHandle}, key));
    EXPECT_EQ(top.lines[0].size, 1000);
    // The diff: serve_b's stack grew by 300 B, serve_a's by 100 B.
    const Report diff = make_diff_report(now, old, "the baseline", request);
    ASSERT_EQ(diff.lines.size(), 1u);
    EXPECT_EQ(diff.lines[0].traceback, (Traceback{kAlloc, kHandle, from_b})) << to_string(key);
    EXPECT_EQ(diff.lines[0].size_diff, 400);
  }
  ReportRequest cumulative;
  cumulative.traceback = true;
  cumulative.cumulative = true;
  const Report all = make_report(now, cumulative);
  ASSERT_EQ(all.lines.size(), 4u);  // operator new, handle, serve_a, serve_b
  for (const ReportLine& line : all.lines) {
    ASSERT_TRUE(line.traceback);
    EXPECT_EQ(line.traceback->size(), 3u) << line.key;
    EXPECT_NE(std::find(line.traceback->begin(), line.traceback->end(), line.frame), line.traceback->end())
        << line.key;
  }
}

TEST(ReportJson, LinesStopAtTheByteBudget) {
  const Report report = known_diff();
  const std::string whole = to_json(report);
  const json one = json::parse(to_json(report, 400));  // room for the first line only
  EXPECT_EQ(one["truncated"], true);
  ASSERT_EQ(one["stats"].size(), 1u);
  EXPECT_EQ(one["keys"], 2);
  EXPECT_EQ(json::parse(whole)["stats"][0], one["stats"][0]);
}

TEST(ReportText, KnownDiffWithVerdicts) {
  EXPECT_EQ(to_text(known_diff(), {.verdicts = true}),
            "Top 2 of 2 lines against the baseline: size=44.0 KiB (+39.1 KiB), count=11 (+8) (mode=exact)\n"
            "/src/app.cpp:12: size=40.0 KiB (+39.1 KiB), count=10 (+8), average=4100 B"
            " [growing, retains 100%, idle 3 s]\n"
            "/src/cache.cpp:40: size=4096 B (+0 B), count=1 (+0), average=4096 B [unknown]\n");
  EXPECT_EQ(to_text(known_diff()),
            "Top 2 of 2 lines against the baseline: size=44.0 KiB (+39.1 KiB), count=11 (+8) (mode=exact)\n"
            "/src/app.cpp:12: size=40.0 KiB (+39.1 KiB), count=10 (+8), average=4100 B\n"
            "/src/cache.cpp:40: size=4096 B (+0 B), count=1 (+0), average=4096 B\n");
}

TEST(ReportText, StatisticsHeaderSaysHowTheReportWasMade) {
  ReportRequest request;
  request.key = KeyType::function;
  request.limit = 1;
  request.cumulative = true;
  request.include = {"*.cpp"};
  request.exclude = {"function:cache::*"};
  // Cumulative, the include glob also picks the lines shown: malloc's frame is not one.
  EXPECT_EQ(to_text(make_report(now_snapshot(Mode::sampled, 524288), request)),
            "Top 1 of 1 functions: size=40.0 KiB, count=10 (mode=sampled, one sample per 512 KiB, "
            "cumulative, include=*.cpp, exclude=function:cache::*)\n"
            "handle(int): size=40.0 KiB, count=10, average=4100 B\n");
}

TEST(ReportText, WholeStacksAndTruncation) {
  ReportRequest request;
  request.key = KeyType::traceback;
  const Report report = make_report(now_snapshot(), request);
  EXPECT_EQ(to_text(report, {.stacks = true}),
            "Top 2 of 2 tracebacks: size=44.0 KiB, count=11 (mode=exact)\n"
            "\n/src/app.cpp:12: size=40.0 KiB, count=10, average=4100 B\n"
            "  File \"/lib/libliveheap.so\", in operator new\n"
            "  File \"/src/app.cpp\", line 12, in handle\n"
            "\n/src/cache.cpp:40: size=4096 B, count=1, average=4096 B\n"
            "  File \"/lib/libliveheap.so\", in operator new\n"
            "  File \"/src/cache.cpp\", line 40, in cache::fill\n");
  EXPECT_EQ(to_text(report, {.max_bytes = 120}),
            "Top 2 of 2 tracebacks: size=44.0 KiB, count=11 (mode=exact)\n"
            "/src/app.cpp:12: size=40.0 KiB, count=10, average=4100 B\n"
            "(truncated at 120 B: 1 of 2 rows shown; ask for a smaller limit= or narrow with include=)\n");
}

// A merged (pid=all) report, as the process holding the port writes it.
Report merged_report() {
  Report report = known_diff();
  report.diff->against = "the baseline";
  report.pids = std::vector<long>{101, 102};
  report.failed = {{103, 409, "no baseline to diff against"}};
  return report;
}

TEST(ReportText, MergedProcesses) {
  EXPECT_EQ(to_text(merged_report()),
            "Top 2 of 2 lines against the baselines of 2 processes: size=44.0 KiB (+39.1 KiB), "
            "count=11 (+8) (mode=exact, pids [101,102])\n"
            "pid 103 did not answer: no baseline to diff against\n"
            "/src/app.cpp:12: size=40.0 KiB (+39.1 KiB), count=10 (+8), average=4100 B\n"
            "/src/cache.cpp:40: size=4096 B (+0 B), count=1 (+0), average=4096 B\n");
  // Held to the cap as one process's report is.
  EXPECT_EQ(to_text(merged_report(), {.max_bytes = 300}),
            "Top 2 of 2 lines against the baselines of 2 processes: size=44.0 KiB (+39.1 KiB), "
            "count=11 (+8) (mode=exact, pids [101,102])\n"
            "pid 103 did not answer: no baseline to diff against\n"
            "/src/app.cpp:12: size=40.0 KiB (+39.1 KiB), count=10 (+8), average=4100 B\n"
            "(truncated at 300 B: 1 of 2 rows shown; ask for a smaller limit= or narrow with include=)\n");
  const json j = to_json_value(merged_report());
  EXPECT_EQ(j["pids"], json::array({101, 102}));
  EXPECT_EQ(j["failed"],
            json::array({{{"pid", 103}, {"status", 409}, {"error", "no baseline to diff against"}}}));
}

// to_json -> report_from_json -> to_json gives the same bytes, and the text reads the same.
void expect_round_trip(const Report& report, const TextStyle& style = {}) {
  const std::string first = to_json(report);
  const Report back = report_from_json(std::string_view(first));
  EXPECT_EQ(to_json(back), first);
  EXPECT_EQ(to_text(back, style), to_text(report, style));
}

TEST(ReportJson, RoundTrips) {
  expect_round_trip(known_diff(), {.verdicts = true});
  expect_round_trip(make_report(now_snapshot(Mode::sampled, 524288), {}));
  ReportRequest whole;
  whole.key = KeyType::traceback;
  expect_round_trip(make_report(now_snapshot(), whole, verdict_of), {.stacks = true});
  expect_round_trip(known_diff(whole));
  ReportRequest with_stacks;
  with_stacks.traceback = true;
  with_stacks.include = {"*app*"};
  expect_round_trip(known_diff(with_stacks));
  expect_round_trip(merged_report());
  expect_round_trip(make_report(Snapshot({}, info_at(kNowMs)), {}));  // no lines at all

  const Report back = report_from_json(std::string_view(to_json(known_diff(with_stacks))));
  EXPECT_TRUE(back.request.traceback);
  ASSERT_EQ(back.lines.size(), 1u);
  EXPECT_EQ(back.lines[0].frame, (Frame{"handle(int)", "/src/app.cpp", 12, "/bin/app", 0}));
  ASSERT_EQ(back.lines[0].traceback->size(), 2u);      // the whole stack
  EXPECT_EQ(back.lines[0].traceback->at(1), kHandle);  // with its address
  EXPECT_EQ(back.lines[0].verdict->trend, Trend::growing);
  EXPECT_EQ(back.lines[0].verdict->growth_per_min, 1200.0);
  EXPECT_EQ(back.lines[0].verdict->retention, 1.0);
  EXPECT_EQ(back.lines[0].verdict->idle_s, 3.0);
  EXPECT_EQ(back.lines[0].verdict->allocated, 40000.0);
  EXPECT_EQ(back.diff->old_taken_at_ms, kOldMs);
}

// The message report_from_json gives for `document`, or "" when it accepts it.
std::string refusal(const json& document) {
  try {
    report_from_json(document);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ReportJson, MalformedDocumentsAreRefusedNamingTheField) {
  const json good = to_json_value(known_diff());
  ASSERT_EQ(refusal(good), "");
  const auto without = [&](const json::json_pointer& where) {
    json j = good;
    j.at(where.parent_pointer()).erase(where.back());
    return refusal(j);
  };
  const auto with = [&](const json::json_pointer& where, json value) {
    json j = good;
    j[where] = std::move(value);
    return refusal(j);
  };
  EXPECT_EQ(without("/schema"_json_pointer), "report JSON: schema is missing");
  EXPECT_EQ(with("/schema"_json_pointer, 2), "report JSON: schema 2 is not the schema this build reads (1)");
  EXPECT_EQ(without("/stats/1/size_diff"_json_pointer), "report JSON: stats[1].size_diff is missing");
  EXPECT_EQ(without("/total/count_diff"_json_pointer), "report JSON: total.count_diff is missing");
  EXPECT_EQ(with("/total/size"_json_pointer, "45096"), "report JSON: total.size is a string, not an integer");
  EXPECT_EQ(with("/total/size"_json_pointer, 4.5), "report JSON: total.size is a fraction, not an integer");
  EXPECT_EQ(with("/limit"_json_pointer, -1), "report JSON: limit is negative, not a whole number");
  EXPECT_EQ(with("/stats"_json_pointer, json::object()), "report JSON: stats is an object, not an array");
  EXPECT_EQ(with("/stats/0"_json_pointer, 7), "report JSON: stats[0] is a number, not an object");
  EXPECT_EQ(with("/include/0"_json_pointer, 1), "report JSON: include[0] is a number, not a string");
  EXPECT_EQ(with("/truncated"_json_pointer, 0), "report JSON: truncated is a number, not true or false");
  EXPECT_EQ(with("/mode"_json_pointer, "fast"),
            "report JSON: mode is not known: unknown mode 'fast' (expected off, exact or sampled)");
  EXPECT_EQ(with("/key"_json_pointer, "stack"),
            "report JSON: key is not known: unknown key 'stack' (expected line, file, function, traceback or "
            "route)");
  EXPECT_EQ(with("/stats/0/verdict"_json_pointer, "soaring"),
            "report JSON: stats[0].verdict is not known: 'soaring' (expected growing, plateaued, stable, "
            "shrinking or unknown)");
  EXPECT_EQ(with("/stats/0/growth_per_min"_json_pointer, nullptr),
            "report JSON: stats[0].growth_per_min is null, not a number");
  EXPECT_EQ(with("/stats/1/since_last_growth_s"_json_pointer, 1.0),
            "report JSON: stats[1].since_last_growth_s is a number, not null (the verdict is unknown)");
  EXPECT_EQ(with("/stats/0/retention"_json_pointer, "all"),
            "report JSON: stats[0].retention is a string, not a number or null");
  EXPECT_EQ(without("/stats/0/idle_s"_json_pointer), "") << "an older server's report has no reasons";
  EXPECT_EQ(without("/stats/0/short_function"_json_pointer),
            "report JSON: stats[0].short_function is missing");
  EXPECT_EQ(with("/stats/0/line"_json_pointer, 1LL << 40),
            "report JSON: stats[0].line is too large, not a whole number");

  ReportRequest whole;
  whole.key = KeyType::traceback;
  const json stacks = to_json_value(known_diff(whole));
  json no_stack = stacks;
  no_stack["stats"][1].erase("traceback");
  EXPECT_EQ(refusal(no_stack), "report JSON: stats[1].traceback is missing");
  json bad_address = stacks;
  bad_address["stats"][0]["traceback"][1]["address"] = "42";
  EXPECT_EQ(refusal(bad_address),
            "report JSON: stats[0].traceback[1].address '42' is not a hex address like 0x1f");

  ReportRequest some;
  some.traceback = true;
  json uneven = to_json_value(known_diff(some));
  uneven["stats"][1].erase("traceback");
  EXPECT_EQ(refusal(uneven), "report JSON: stats[1].traceback is missing (stats[0] has one)");

  json merged = to_json_value(merged_report());
  merged.erase("failed");
  EXPECT_EQ(refusal(merged), "report JSON: failed is missing");

  EXPECT_EQ(refusal(json::array()), "report JSON: the document is an array, not an object");
  EXPECT_THROW(report_from_json(std::string_view("{\"schema\": 1,")), std::invalid_argument);
}

}  // namespace
}  // namespace liveheap
