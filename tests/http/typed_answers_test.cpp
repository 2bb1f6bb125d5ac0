// The typed answers of /stats, /baseline, /trim and /processes read back from this
// process's real answers: each one's JSON, read as its value and written again, is the
// same bytes, and the value the routes build reads back equal to itself.
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "liveheap/allocator.hpp"
#include "liveheap/baseline_report.hpp"
#include "liveheap/processes_report.hpp"
#include "liveheap/stats_report.hpp"
#include "liveheap/trim_report.hpp"
#include "reports.hpp"
#include "server_fixture.hpp"

namespace http_test {
namespace {

using TypedAnswers = ServerTest;

// The answer to `method` `target`, read as a value with `read` and written again: the same bytes.
template <typename Read>
auto read_back(const Reply& reply, const std::string& target, Read read) -> decltype(read(std::string())) {
  EXPECT_EQ(reply.status, 200) << target << ": " << reply.body;
  try {
    const auto value = read(reply.body);
    EXPECT_EQ(to_json(value) + "\n", reply.body) << target;
    EXPECT_EQ(read(to_json(value)), value) << target;
    return value;
  } catch (const std::invalid_argument& e) {
    ADD_FAILURE() << target << ": " << e.what();
    return {};
  }
}

TEST_F(TypedAnswers, StatsReadsBackByteForByte) {
  KnownAllocations known(3, 5000);
  const std::string target = "/debug/memory/stats?format=json";
  const StatsReport stats =
      read_back(get(port(), target), target, [](const std::string& s) { return stats_report_from_json(s); });
  EXPECT_TRUE(stats.tracing);
  EXPECT_GE(stats.traced_current, 15000);
  EXPECT_FALSE(stats.allocator.name.empty());
  // The answers of the routes that change tracing are the same document.
  ASSERT_EQ(post(port(), "/debug/memory/stop").status, 200);
  const StatsReport stopped = read_back(post(port(), "/debug/memory/start?format=json"), "POST start",
                                        [](const std::string& s) { return stats_report_from_json(s); });
  EXPECT_TRUE(stopped.tracing);
}

TEST_F(TypedAnswers, TheStatsValueTheRoutesBuildReadsBackEqual) {
  const liveheap::IgnoreScope ignore;
  const StatsReport now = liveheap::http::stats_now(2);
  EXPECT_EQ(stats_report_from_json(to_json(now)), now);  // the allocator's figures in its order
  EXPECT_EQ(now.windows, 2u);
  EXPECT_EQ(now.allocator.figures.size(), allocator_figure_order(now.allocator.name).size());
}

TEST_F(TypedAnswers, BaselineReadsBackByteForByte) {
  const auto read = [](const std::string& s) { return baseline_report_from_json(s); };
  KnownAllocations known(3, 5000);
  const BaselineReport posted =
      read_back(post(port(), "/debug/memory/baseline?format=json"), "POST baseline", read);
  EXPECT_GE(posted.total_size, 15000);
  const BaselineReport got =
      read_back(get(port(), "/debug/memory/baseline?format=json"), "GET baseline", read);
  EXPECT_EQ(got.taken_at_ms, posted.taken_at_ms);
  EXPECT_EQ(got.total_size, posted.total_size);
  EXPECT_EQ(to_text(got).substr(0, 15), "baseline taken ");
}

TEST_F(TypedAnswers, TrimReadsBackByteForByte) {
  const TrimReport trim = read_back(post(port(), "/debug/memory/trim?format=json"), "POST trim",
                                    [](const std::string& s) { return trim_report_from_json(s); });
  EXPECT_FALSE(trim.action.empty());
  EXPECT_GT(trim.rss_before, 0);
  EXPECT_EQ(trim.allocator, allocator_name());
  const Reply text = post(port(), "/debug/memory/trim");  // what was asked, then RSS before and after
  EXPECT_NE(text.body.find(": rss "), std::string::npos) << text.body;
}

TEST_F(TypedAnswers, ProcessesReadsBackByteForByte) {
  const ProcessesReport list = read_back(get(port(), "/debug/memory/processes?format=json"), "GET processes",
                                         [](const std::string& s) { return processes_report_from_json(s); });
  ASSERT_FALSE(list.processes.empty());
  EXPECT_EQ(list.this_pid, ::getpid());
}

}  // namespace
}  // namespace http_test
