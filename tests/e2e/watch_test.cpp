// End to end: liveheap-watch against the real leaky_server, as CI would run it.
#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

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
  EXPECT_NE(run.output.find("is over --fail-over 10.0 MiB (10485760 B)"), std::string::npos) << run.output;
  // The round names the leak's line, as the server's text /diff would.
  const std::string site = "leak_stories.cpp:" + std::to_string(marked_line("site: figure"));
  EXPECT_NE(run.output.find(site + ": size=19.2 MiB (+19.2 MiB), count=3 (+3)"), std::string::npos)
      << run.output;
}

// The line of `output` that holds `text`, or "" when none does.
std::string line_with(const std::string& output, const std::string& text) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.find(text) != std::string::npos) return line;
  return "";
}

// The server's history ticks every second (the shortest LIVEHEAP_HISTORY_INTERVAL), so
// that a few seconds of traffic give it verdicts.
Launch history_every_second() {
  return {.env = {"LIVEHEAP_HISTORY_INTERVAL=1"}, .args = {}, .read_stderr = false};
}

// The points the server's history holds now.
std::size_t points(const LeakyServer& server) {
  return server.get("/debug/memory/history?format=json").json().at("points").size();
}

// Until the server's history holds `n` points (a second each; a minute at most).
testing::AssertionResult wait_for_points(const LeakyServer& server, std::size_t n) {
  std::size_t seen = 0;
  return http_test::wait_until(
             std::chrono::seconds(60), [&] { return (seen = points(server)) >= n; },
             std::chrono::milliseconds(200))
         << ": the history holds " << seen << " points, not " << n;
}

// A real leak that keeps growing while liveheap-watch runs: /client keeps a 64 KiB receive
// buffer per request, forever. --fail-on-growing fails when that growth passes the size,
// and only then.
TEST(WatchTest, FailOnGrowingFailsOnAGrowingLeakAboveTheSize) {
  LeakyServer server(history_every_second());
  server.post("/debug/memory/baseline");
  std::atomic<bool> stop = false;
  std::thread traffic([&] {
    while (!stop) {
      server.story("/client");
      // The pace of the traffic (the leak grows all along), not a wait for anything.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  // Six points at least: the server says "unknown" below five.
  const testing::AssertionResult six = wait_for_points(server, 6);
  if (!six) {
    stop = true;
    traffic.join();
    FAIL() << six.message();
  }
  const std::vector<std::string> once = {"--url",      server.url(), "--rounds",         "1",
                                         "--interval", "0",          "--fail-on-growing"};
  auto below = once;
  below.push_back("1GiB");
  const WatchRun passed = run_watch(below);
  auto above = once;
  above.push_back("1MiB");
  const WatchRun failed = run_watch(above);
  stop = true;
  traffic.join();

  const std::string site = "leak_stories.cpp:" + std::to_string(marked_line("site: client"));
  // The round prints the server's verdict after the line, as /diff?verdicts=1 does.
  EXPECT_EQ(passed.exit_code, 0) << passed.output;
  EXPECT_NE(line_with(passed.output, site + ": size=").find(" [growing, retains "), std::string::npos)
      << passed.output;
  EXPECT_NE(
      passed.output.find("no callsite the server calls growing grew by more than --fail-on-growing 1024 MiB"),
      std::string::npos)
      << passed.output;

  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  const std::string message = line_with(failed.output, " is growing (");
  EXPECT_TRUE(message.starts_with("liveheap-watch: ")) << failed.output;
  EXPECT_NE(message.find(site + " is growing (+"), std::string::npos) << message;
  EXPECT_NE(message.find("/min, retains "), std::string::npos) << message;  // the server's reasons
  EXPECT_NE(message.find(" since the baseline, size="), std::string::npos) << message;
  EXPECT_NE(message.find("over --fail-on-growing 1024 KiB (1048576 B)"), std::string::npos) << message;
}

// A cache that filled up and stopped: above the size, but plateaued, so the gate passes.
TEST(WatchTest, FailOnGrowingPassesOnAPlateau) {
  LeakyServer server(history_every_second());
  server.post("/debug/memory/baseline");
  // Two empty points first, so the history holds the rise; then 32 plans (64 KiB each) fill
  // the cache to its capacity, and the program keeps working for six points while the cache
  // holds flat (hits: the same shapes again). A plateau is flat while the program works: a
  // history that only idles after the fill says nothing yet ("unknown").
  ASSERT_TRUE(wait_for_points(server, 2));
  for (int i = 1; i <= 32; ++i) server.story("/cache?shape=" + std::to_string(i) + "x1");
  const std::size_t filled = points(server);
  for (int i = 0; points(server) < filled + 6; ++i) {
    server.story("/cache?shape=" + std::to_string(1 + i % 32) + "x1");
    server.story("/ok");  // the rest of the program works too
  }
  const WatchRun run =
      run_watch({"--url", server.url(), "--rounds", "1", "--interval", "0", "--fail-on-growing=256KiB"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string site = "leak_stories.cpp:" + std::to_string(marked_line("site: cache"));
  const std::string line = line_with(run.output, site + ": size=");
  EXPECT_NE(line.find(" [plateaued, "), std::string::npos) << run.output;
  // Over the size: only the verdict kept it from failing.
  const json stat = stat_at(server.diff(), marked_line("site: cache"));
  ASSERT_FALSE(stat.is_null());
  EXPECT_GT(stat["size_diff"].get<std::int64_t>(), 256 * 1024);
  EXPECT_EQ(stat["verdict"], "plateaued");
}

TEST(WatchTest, KeyTracebackPrintsReadableStacks) {
  LeakyServer server;
  server.post("/debug/memory/baseline");
  for (int i = 0; i < 3; ++i) server.story("/figure");
  const WatchRun run = run_watch(
      {"--url", server.url(), "--rounds", "1", "--interval", "0", "--key", "traceback", "--limit", "1"});
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
  const WatchRun run = run_watch(
      {"--url", server.url(), "--baseline", "--rounds", "3", "--interval", "0.1", "--json", "--limit", "2"});
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
  const WatchRun refused =
      run_watch({"--url", server.url(), "--baseline", "--rounds", "1", "--interval", "0"});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("401"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--token"), std::string::npos) << refused.output;

  const std::vector<std::string> args = {"--url", server.url(), "--baseline", "--rounds",
                                         "1",     "--interval", "0"};
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
  const WatchRun run =
      run_watch({"--url", "http://" + where + "/debug/memory", "--rounds", "1", "--interval", "0"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(run.output, "liveheap-watch: cannot connect to " + where + ": Connection refused\n");
}

TEST(WatchTest, WrongPrefixIsAClearError) {
  LeakyServer server;
  const WatchRun run = run_watch({"--url", server.url() + "x", "--rounds", "1", "--interval", "0"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("404"), std::string::npos) << run.output;
}

TEST(WatchTest, BadFailOnGrowingNamesTheOptionAndTheValue) {
  const WatchRun run = run_watch({"--fail-on-growing=abc"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(
      run.output.starts_with("liveheap-watch: --fail-on-growing: a size is bytes with an optional unit"))
      << run.output;
  EXPECT_NE(run.output.find("not 'abc'"), std::string::npos) << run.output;
}

TEST(WatchTest, BadUsageIsAClearError) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--fail-over", "ten"},
                                               {"--key", "lines"},
                                               {"--limit", "0"},
                                               {"--fail-on-growing=abc"},
                                               {"--fail-on-growing", "-1MiB"},
                                               {"--fail-on-growing"},
                                               {"--json=1"},
                                               {"--interval", "-1"},
                                               {"--url", "https://x/"},
                                               {"--url", "http://h:99999/"},
                                               {"--rounds"},
                                               {"--frobnicate", "1"},
                                               {"--pid", "0"},
                                               {"--pid", "-3"},
                                               {"--pid", "ALL"},
                                               {"--pid", "12x"},
                                               {"--pid", "4194305"},
                                               {"--pid"}}) {
    const WatchRun run = run_watch(args);
    EXPECT_EQ(run.exit_code, 2) << args[0] << ": " << run.output;
    EXPECT_TRUE(run.output.starts_with("liveheap-watch: ")) << run.output;
    EXPECT_NE(run.output.find("Usage:"), std::string::npos) << run.output;
  }
}

}  // namespace
}  // namespace liveheap::e2e
