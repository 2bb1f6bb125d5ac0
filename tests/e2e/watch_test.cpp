// End to end: liveheap-watch against the real leaky_server, as CI would run it.
#include <sstream>

#include <gtest/gtest.h>

#include "e2e_support.hpp"

namespace liveheap::e2e {
namespace {

using nlohmann::json;

// The CI flow: baseline, traffic, then one round that gates on growth.
std::vector<std::string> gate(const LeakyServer& server, const char* threshold) {
  return {"--url", server.url(), "--rounds", "1", "--interval", "0", "--fail-over", threshold};
}

TEST(WatchTest, FailOverPassesOnTheWellBehavedRoute) {
  LeakyServer server;
  server.story("/ok");
  server.post("/debug/memory/baseline");
  for (int i = 0; i < 30; ++i) server.story("/ok?kb=1024");
  const WatchRun run = run_watch(gate(server, "256KiB"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("round 1"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("stayed within --fail-over"), std::string::npos) << run.output;
}

TEST(WatchTest, FailOverFailsOnALeakyRoute) {
  LeakyServer server;
  server.post("/debug/memory/baseline");
  for (int i = 0; i < 3; ++i) server.story("/figure");
  const WatchRun run = run_watch(gate(server, "10MiB"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("is over --fail-over 10.0 MiB (10485760 B)"), std::string::npos)
      << run.output;
  // The round names the leak's line, as the server's text /diff would.
  const std::string site = "leak_stories.cpp:" + std::to_string(marked_line("site: figure"));
  EXPECT_NE(run.output.find(site + ": size=19.2 MiB (+19.2 MiB), count=3 (+3)"),
            std::string::npos)
      << run.output;
}

TEST(WatchTest, KeyTracebackPrintsReadableStacks) {
  LeakyServer server;
  server.post("/debug/memory/baseline");
  for (int i = 0; i < 3; ++i) server.story("/figure");
  const WatchRun run = run_watch({"--url", server.url(), "--rounds", "1", "--interval", "0",
                                  "--key", "traceback", "--limit", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Rebuilt from the server's JSON (full names) and laid out as /tracebacks lays it out:
  // short names, Boost.Asio's frames folded, every line within 200 columns.
  const std::string site = "leak_stories.cpp\", line " + std::to_string(marked_line("site: figure")) +
                           ", in leaky::(anonymous namespace)::Figure::Figure\n";
  EXPECT_NE(run.output.find(site), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(", in leaky::render_figure\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(" frames in boost::asio"), std::string::npos) << run.output;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 200u) << line;
}

TEST(WatchTest, JsonLinesOnePerRound) {
  LeakyServer server;
  const WatchRun run = run_watch({"--url", server.url(), "--baseline", "--rounds", "3",
                                  "--interval", "0.1", "--json", "--limit", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::istringstream lines(run.output);
  std::string line;
  int round = 0;
  while (std::getline(lines, line)) {
    const json j = json::parse(line);
    EXPECT_EQ(j["round"], ++round);
    EXPECT_EQ(j["mode"], "exact");
    EXPECT_TRUE(j["total"]["size_diff"].is_number_integer());
    EXPECT_LE(j["stats"].size(), 2u);
  }
  EXPECT_EQ(round, 3);
}

TEST(WatchTest, TokenIsSentAndMissingTokenExplained) {
  LeakyServer server({.env = {"LIVEHEAP_TOKEN=s3cret"}, .args = {}, .read_stderr = false});
  const WatchRun refused = run_watch({"--url", server.url(), "--baseline", "--rounds", "1",
                                      "--interval", "0"});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("401"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--token"), std::string::npos) << refused.output;

  const std::vector<std::string> args = {"--url", server.url(), "--baseline", "--rounds", "1",
                                         "--interval", "0"};
  auto with_flag = args;
  with_flag.insert(with_flag.end(), {"--token", "s3cret"});
  EXPECT_EQ(run_watch(with_flag).exit_code, 0);
  EXPECT_EQ(run_watch(args, {"LIVEHEAP_TOKEN=s3cret"}).exit_code, 0);
}

TEST(WatchTest, NoBaselineIsExplained) {
  LeakyServer server;
  const WatchRun run = run_watch({"--url", server.url(), "--rounds", "1", "--interval", "0"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("409"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("--baseline"), std::string::npos) << run.output;
}

TEST(WatchTest, ServerDownIsAClearError) {
  const std::uint16_t port = http_test::free_port();
  const std::string where = "127.0.0.1:" + std::to_string(port);
  const WatchRun run = run_watch({"--url", "http://" + where + "/debug/memory", "--rounds", "1",
                                  "--interval", "0"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(run.output, "liveheap-watch: cannot connect to " + where + ": Connection refused\n");
}

TEST(WatchTest, WrongPrefixIsAClearError) {
  LeakyServer server;
  const WatchRun run = run_watch({"--url", server.url() + "x", "--rounds", "1", "--interval", "0"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("404"), std::string::npos) << run.output;
}

TEST(WatchTest, BadUsageIsAClearError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--fail-over", "ten"}, {"--key", "lines"}, {"--limit", "0"},
        {"--interval", "-1"}, {"--url", "https://x/"}, {"--url", "http://h:99999/"},
        {"--rounds"}, {"--frobnicate", "1"}, {"--pid", "0"}, {"--pid", "-3"}, {"--pid", "ALL"},
        {"--pid", "12x"}, {"--pid", "4194305"}, {"--pid"}}) {
    const WatchRun run = run_watch(args);
    EXPECT_EQ(run.exit_code, 2) << args[0] << ": " << run.output;
    EXPECT_TRUE(run.output.starts_with("liveheap-watch: ")) << run.output;
    EXPECT_NE(run.output.find("Usage:"), std::string::npos) << run.output;
  }
}

}  // namespace
}  // namespace liveheap::e2e
