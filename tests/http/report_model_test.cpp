// The report document read back from real answers of this process's routes: every JSON
// report round-trips byte for byte (report_from_json, then to_json), and the text a
// client renders from the JSON is the server's own text, byte for byte.
#include <stdexcept>
#include <string_view>

#include "liveheap/report.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

using ReportModelTest = ServerTest;

// GET `target`; its JSON read back as a report and written again must be the same bytes.
Report round_trip(std::uint16_t port, const std::string& target) {
  const Reply reply = get(port, target);
  EXPECT_EQ(reply.status, 200) << target << ": " << reply.body;
  Report report;
  try {
    report = report_from_json(std::string_view(reply.body));
  } catch (const std::invalid_argument& e) {
    ADD_FAILURE() << target << ": " << e.what();
    return report;
  }
  EXPECT_EQ(to_json(report) + "\n", reply.body) << target;
  return report;
}

const ReportLine* known_line(const Report& report) {
  for (const ReportLine& line : report.lines)
    if (line.frame.file.ends_with(kKnownFile) && line.frame.line == static_cast<unsigned>(kKnownLine))
      return &line;
  return nullptr;
}

TEST_F(ReportModelTest, EveryJsonReportRoundTripsByteForByte) {
  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  KnownAllocations known(7, 3001);  // average 3001 B; 21007 B in all
  const std::string m = "/debug/memory";
  for (const std::string query :
       {"", "&key=traceback", "&key=function", "&key=file&traceback=1", "&cumulative=1",
        "&traceback=1&exclude=*nowhere*", "&include=*.cpp&include=function:*known*"}) {
    const Report diff = round_trip(port(), m + "/diff?format=json&limit=10000" + query);
    ASSERT_TRUE(diff.diff.has_value()) << query;
    EXPECT_EQ(diff.diff->against, "the baseline");
    round_trip(port(), m + "/top?format=json&limit=10000" + query);
    round_trip(port(), m + "/peak?format=json&limit=10000" + query);
  }
  const Report diff = round_trip(port(), m + "/diff?format=json&limit=10000");
  const ReportLine* line = known_line(diff);
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->size_diff, 21007);
  EXPECT_EQ(line->count_diff, 7);
  EXPECT_EQ(line->average, 3001.0);
  const Report stacks = round_trip(port(), m + "/tracebacks?format=json&limit=50");
  EXPECT_EQ(stacks.request.key, KeyType::traceback);
  ASSERT_FALSE(stacks.lines.empty());
  EXPECT_GT(stacks.lines[0].traceback->size(), 1u);
  const Report window = round_trip(port(), m + "/diff?format=json&seconds=1");
  EXPECT_EQ(window.diff->against, "the heap 1 s ago");
}

// Sampled weights make fractional averages: they survive the round trip too.
TEST_F(ReportModelTest, SampledReportsRoundTrip) {
  ASSERT_EQ(post(port(), "/debug/memory/stop").status, 200);
  ASSERT_EQ(post(port(), "/debug/memory/start?mode=sampled&sample_interval=4096").status, 200);
  KnownAllocations known(50, 1000);
  const Report top = round_trip(port(), "/debug/memory/top?format=json&limit=10000");
  EXPECT_EQ(top.mode, Mode::sampled);
  EXPECT_EQ(top.sample_interval, 4096u);
  round_trip(port(), "/debug/memory/top?format=json&limit=10000&key=traceback");
  ASSERT_EQ(post(port(), "/debug/memory/stop").status, 200);
}

// The known allocations are the only ones in kKnownFile, so two requests filtered to it see
// the same heap: the text rendered from the JSON must be the server's text.
TEST_F(ReportModelTest, TextFromTheJsonIsTheServersText) {
  ASSERT_EQ(post(port(), "/debug/memory/baseline").status, 200);
  KnownAllocations known(3, 5000);
  const std::string only = std::string("include=*") + kKnownFile;
  struct Case {
    std::string route;
    TextStyle style;
  };
  for (const Case& c :
       {Case{"/diff?" + only, {}}, Case{"/diff?key=function&" + only, {}}, Case{"/top?" + only, {}},
        Case{"/top?cumulative=1&" + only, {}}, Case{"/tracebacks?" + only, {.stacks = true}}}) {
    const Report report = round_trip(port(), "/debug/memory" + c.route + "&format=json");
    const Reply text = get(port(), "/debug/memory" + c.route);
    ASSERT_EQ(text.status, 200) << text.body;
    EXPECT_EQ(to_text(report, c.style), text.body) << c.route;
    // The three blocks, and the vector of their three pointers.
    EXPECT_EQ(report.total.size, 15000 + 3 * sizeof(void*)) << c.route;
  }
}

}  // namespace
}  // namespace http_test
