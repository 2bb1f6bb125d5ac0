// End to end: leaky_server --compare-every N logs, every N requests, what grew since the
// first request (liveheap/request_comparison.hpp), as someone would do by hand.
#include <gtest/gtest.h>

#include "e2e_support.hpp"

namespace liveheap::e2e {
namespace {

// The lines it printed until one contains `until` (included), or all within the timeout.
std::string output_until(LeakyServer& server, const std::string& until) {
  std::string output;
  while (const auto line = server.output_line(10000)) {
    output += *line + "\n";
    if (line->find(until) != std::string::npos) break;
  }
  return output;
}

TEST(RequestComparisonTest, LogsTheGrowingLineEveryNRequests) {
  LeakyServer server({.env = {}, .args = {"--compare-every", "3"}, .read_stderr = true});
  // Request 1 is the reference; requests 4 and 7 compare, before serving theirs.
  for (int i = 0; i < 7; ++i) server.story("/figure");
  const std::string site = "leak_stories.cpp:" + std::to_string(marked_line("site: figure"));

  const std::string at_4 = output_until(server, site);
  EXPECT_NE(at_4.find("liveheap: request 4: heap "), std::string::npos) << at_4;
  EXPECT_NE(at_4.find(site + ": size=19.2 MiB (+19.2 MiB), count=3 (+3)"), std::string::npos)
      << at_4;
  const std::string at_7 = output_until(server, site);
  EXPECT_NE(at_7.find("liveheap: request 7: heap "), std::string::npos) << at_7;
  EXPECT_NE(at_7.find(site + ": size=38.5 MiB (+38.5 MiB), count=6 (+6)"), std::string::npos)
      << at_7;
}

}  // namespace
}  // namespace liveheap::e2e
