// The verdict measured against the program's work, end to end: a real process under the
// preload library with a 1 s history leaks while it works, then idles. The leak is growing
// while it works and still growing fifteen idle points later (on the clock it would read as
// a plateau).
#include <string>

#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"

namespace http_test {
namespace {

// The stat of work_then_idle.cpp:`line` in a JSON report, or null; `seen` keeps the answer.
nlohmann::json leak_stat(std::uint16_t port, int line, std::string* seen = nullptr) {
  const Reply reply = get(port, "/debug/memory/top?format=json&include=*work_then_idle.cpp&limit=50");
  if (seen != nullptr) *seen = std::to_string(reply.status) + " " + reply.body.substr(0, 2000);
  if (reply.status != 200) return nullptr;
  const nlohmann::json report = reply.json();  // a range-for over a temporary's member would dangle
  for (const nlohmann::json& s : report.at("stats"))
    if (s.at("line") == line) return s;
  return nullptr;
}

std::size_t points(std::uint16_t port) {
  const Reply reply = get(port, "/debug/memory/history?format=json&limit=1");
  return reply.status == 200 ? reply.json().at("points").size() : 0;
}

class VerdictPreload : public ::testing::TestWithParam<const char*> {};

TEST_P(VerdictPreload, ALeakSeenGrowingWhileWorkingStaysGrowingThroughFifteenIdlePoints) {
  const std::uint16_t port = free_port();
  std::vector<std::string> env = {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                  "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port),
                                  std::string("LIVEHEAP_MODE=") + GetParam(), "LIVEHEAP_HISTORY_INTERVAL=1"};
  if (std::string(GetParam()) == "sampled") env.push_back("LIVEHEAP_SAMPLE_INTERVAL=16384");
  ChildProcess program({LIVEHEAP_WORK_THEN_IDLE}, env);
  const std::string started = program.read_line(20000).value_or("EOF");
  ASSERT_TRUE(started.starts_with("LEAK ")) << started;
  const int line = std::stoi(started.substr(5));

  // While it works: growing once the history holds five points of work.
  nlohmann::json stat;
  std::string seen;
  ASSERT_TRUE(wait_until(std::chrono::seconds(20), [&] {
    stat = leak_stat(port, line, &seen);
    return !stat.is_null() && stat["verdict"] == "growing";
  }, std::chrono::milliseconds(250))) << "line " << line << ": " << seen;

  program.write_line("idle");
  ASSERT_EQ(program.read_line(5000).value_or("EOF"), "IDLE");
  const std::size_t at_idle = points(port);
  ASSERT_TRUE(wait_until(std::chrono::seconds(30), [&] { return points(port) >= at_idle + 16; },
                         std::chrono::milliseconds(250)));

  stat = leak_stat(port, line);
  ASSERT_FALSE(stat.is_null());
  EXPECT_EQ(stat["verdict"], "growing") << stat.dump();
  EXPECT_GE(stat["idle_s"].get<double>(), 14.0) << stat.dump();
  EXPECT_GE(stat["retention"].get<double>(), 0.9) << stat.dump();
  // The history says why: the points since it stopped are idle.
  const nlohmann::json history = get(port, "/debug/memory/history?format=json&limit=1").json();
  const nlohmann::json& all = history.at("points");
  ASSERT_GE(all.size(), 15u);
  for (std::size_t i = all.size() - 14; i < all.size(); ++i) EXPECT_EQ(all[i]["idle"], true) << i;
  // And the text says it as the reader sees it.
  const std::string text = get(port, "/debug/memory/top?include=*work_then_idle.cpp&verdicts=1").body;
  EXPECT_NE(text.find("work_then_idle.cpp:" + std::to_string(line) + ": size="), std::string::npos) << text;
  EXPECT_NE(text.find(" [growing, retains "), std::string::npos) << text;
  EXPECT_EQ(program.wait(5000), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, VerdictPreload, ::testing::Values("exact", "sampled"));

}  // namespace
}  // namespace http_test
