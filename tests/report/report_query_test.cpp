// The request model (liveheap/report_query.hpp): a query written by to_query reads back as
// the same request, defaults are not written, and refusals name the parameter.
#include <gtest/gtest.h>

#include <string>

#include "liveheap/report_query.hpp"

namespace liveheap {
namespace {

constexpr query::ParamSet kEvery = ~0u;

TEST(ReportQueries, WhatToQueryWritesReadsBackAsTheSameRequest) {
  ReportQuery q;
  q.format = AnswerFormat::folded2;
  q.key = KeyType::function;
  q.limit = 10000;
  q.cumulative = true;
  q.include = {"*leak stories*.cpp", "function:std::vector<int>::push_back"};
  q.exclude = {"/usr/include/*"};
  q.routes = {"GET /users/{id}", "POST *"};
  q.seconds = 30;
  q.mode = Mode::sampled;
  q.frames = 64;
  q.sample_interval = 4096;
  q.max_tracker_memory = 256u << 20;
  q.traceback = true;
  q.verdicts = true;
  q.pid = query::kAllProcesses;
  q.diff_nothing_without_baseline = true;
  const std::string text = to_query(q);
  const ReportQuery read = parse_report_query(text, kEvery);
  EXPECT_EQ(read.format, q.format);
  EXPECT_EQ(read.key, q.key);
  EXPECT_EQ(read.limit, q.limit);
  EXPECT_EQ(read.cumulative, q.cumulative);
  EXPECT_EQ(read.include, q.include);
  EXPECT_EQ(read.exclude, q.exclude);
  EXPECT_EQ(read.filters.size(), 3u);
  EXPECT_EQ(read.routes, q.routes);
  EXPECT_EQ(read.seconds, q.seconds);
  EXPECT_EQ(read.mode, q.mode);
  EXPECT_EQ(read.frames, q.frames);
  EXPECT_EQ(read.sample_interval, q.sample_interval);
  EXPECT_EQ(read.max_tracker_memory, q.max_tracker_memory);
  EXPECT_EQ(read.traceback, q.traceback);
  EXPECT_EQ(read.verdicts, q.verdicts);
  EXPECT_EQ(read.pid, q.pid);
  EXPECT_EQ(read.diff_nothing_without_baseline, q.diff_nothing_without_baseline);
  EXPECT_EQ(to_query(read), text);
}

TEST(ReportQueries, DefaultsAreNotWrittenAndAPidIsANumber) {
  EXPECT_EQ(to_query(ReportQuery{}), "");
  ReportQuery q;
  q.format = AnswerFormat::json;
  q.pid = 4321;
  q.include = {"a b&c=d"};
  EXPECT_EQ(to_query(q), "format=json&include=a%20b%26c%3Dd&pid=4321");
  EXPECT_EQ(parse_report_query(to_query(q), kEvery).include, q.include);
}

TEST(ReportQueries, TheReportRequestIsTheQuerysReportPart) {
  const ReportQuery q = parse_report_query(
      "key=file&limit=3&cumulative=1&include=a*&exclude=b*&traceback=1&route=GET%20%2Fx&seconds=5", kEvery);
  const ReportRequest expected{KeyType::file, 3, true, {"a*"}, {"b*"}, true, {"GET /x"}};
  EXPECT_EQ(report_request(q), expected);
  EXPECT_EQ(report_request(ReportQuery{}), ReportRequest{});
}

TEST(ReportQueries, ARefusalNamesTheParameter) {
  const auto refusal = [](std::string_view text, query::ParamSet allowed) -> std::string {
    try {
      parse_report_query(text, allowed);
    } catch (const query::QueryError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal("limit=0", kEvery), "limit='0' is not a whole number from 1 to 10000");
  EXPECT_EQ(refusal("key=line&key=file", kEvery), "parameter 'key' given twice");
  EXPECT_EQ(refusal("key=file", query::kFormat), "unknown parameter 'key' (this route takes format)");
  EXPECT_EQ(refusal("include=%zz", kEvery),
            "bad percent-encoding '%zz' in the value of include (expected %XX with two hex digits)");
}

}  // namespace
}  // namespace liveheap
