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
  // Request 1 has the reference taken, requests 4 and 7 a comparison, each on a liveheap
  // thread while the request goes on: those three are "/", which keeps nothing, and each
  // log is awaited before the next figure, so the figures in each comparison are known.
  const std::string site = "leak_stories.cpp:" + std::to_string(marked_line("site: figure"));
  server.get("/");
  const std::string reference = output_until(server, "reference snapshot taken");
  EXPECT_NE(reference.find("liveheap: request 1: reference snapshot taken, heap "), std::string::npos)
      << reference;
  server.story("/figure");
  server.story("/figure");
  server.get("/");
  const std::string at_4 = output_until(server, site);
  EXPECT_NE(at_4.find("liveheap: request 4: heap "), std::string::npos) << at_4;
  EXPECT_NE(at_4.find(site + ": size=12.8 MiB (+12.8 MiB), count=2 (+2)"), std::string::npos) << at_4;
  server.story("/figure");
  server.story("/figure");
  server.get("/");
  const std::string at_7 = output_until(server, site);
  EXPECT_NE(at_7.find("liveheap: request 7: heap "), std::string::npos) << at_7;
  EXPECT_NE(at_7.find(site + ": size=25.6 MiB (+25.6 MiB), count=4 (+4)"), std::string::npos) << at_7;
}

}  // namespace
}  // namespace liveheap::e2e
