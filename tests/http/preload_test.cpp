// End to end under LD_PRELOAD: an unmodified program (samples/exact_truth.cpp) allocates
// known bytes at known lines; liveheap_preload's admin server, started by LIVEHEAP_ADDR,
// must report exactly that through POST /baseline + GET /diff?format=json.
#include <chrono>
#include <thread>

#include "child_process.hpp"
#include "client.hpp"
#include "gtest/gtest.h"
#include "truth_sites.hpp"

namespace http_test {
namespace {

class PreloadTest : public ::testing::Test {
 protected:
  // Starts exact_truth --phases under LD_PRELOAD and waits for its first phase.
  void SetUp() override {
    port_ = free_port();
    program_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{LIVEHEAP_EXACT_TRUTH, "--phases"},
        std::vector<std::string>{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port_),
                                 "LIVEHEAP_MODE=exact"});
    const auto ready = program_->read_line(20000);
    ASSERT_EQ(ready.value_or("EOF"), "BASELINE-READY");
  }

  // Lets the program allocate; returns the sites it reports.
  std::vector<Site> allocate() {
    program_->write_line("go");
    std::vector<Site> sites;
    EXPECT_EQ(program_->read_line(20000).value_or("EOF"), "ALLOCATED");
    while (const auto line = program_->read_line(1000)) {
      if (!line->starts_with("SITE ")) break;
      sites.push_back(parse_site(*line));
    }
    return sites;
  }

  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> program_;
};

TEST_F(PreloadTest, DiffReportsTheExactTruth) {
  ASSERT_EQ(post(port_, "/debug/memory/baseline").status, 200);
  const std::vector<Site> sites = allocate();
  ASSERT_GE(sites.size(), 5u);

  const Reply reply = get(port_, "/debug/memory/diff?format=json&limit=100");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const auto report = reply.json();
  EXPECT_EQ(report["mode"], "exact");
  for (const Site& site : sites) {
    const nlohmann::json found = find_site(report, site);
    if (site.bytes == 0) {  // allocated and freed again: no growth, if listed at all
      if (!found.is_null()) {
        EXPECT_EQ(found["size_diff"], 0) << site.line;
        EXPECT_EQ(found["count_diff"], 0) << site.line;
      }
      continue;
    }
    ASSERT_FALSE(found.is_null()) << site.file << ":" << site.line << "\n" << report.dump(1);
    EXPECT_EQ(found["size_diff"], site.bytes) << site.line;
    EXPECT_EQ(found["count_diff"], site.count) << site.line;
  }
  EXPECT_EQ(program_->wait(10000), 0);
}

TEST_F(PreloadTest, LookingAtTheHeapDoesNotGrowIt) {
  allocate();  // then the program sits idle, waiting on stdin
  ASSERT_EQ(post(port_, "/debug/memory/baseline").status, 200);
  for (int i = 0; i < 5; ++i)
    for (const char* target :
         {"/debug/memory/stats", "/debug/memory/top?format=json&key=traceback",
          "/debug/memory/diff?limit=50", "/debug/memory/tracebacks?format=json",
          "/debug/memory/baseline", "/debug/memory/top?limit=0", "/debug/memory/",
          "/debug/memory/nope", "/elsewhere"})
      get(port_, target);
  const auto report = get(port_, "/debug/memory/diff?format=json&limit=10000").json();
  EXPECT_EQ(report["total"]["size_diff"], 0) << report.dump(1);
  EXPECT_EQ(report["total"]["count_diff"], 0) << report.dump(1);
}

// A wrapper that execs the program (pyenv's shims, `env`, a shell's `exec`) loads the
// preload library first and starts an admin server; exec must close its listening socket,
// or the program inherits a socket no thread serves (clients hang) and cannot bind its own.
TEST(PreloadWrapper, TheProgramAWrapperExecsServesThePort) {
  const std::uint16_t port = free_port();
  ChildProcess program({"/bin/sh", "-c", std::string("exec ") + LIVEHEAP_EXACT_TRUTH + " --phases"},
                       {std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port), "LIVEHEAP_MODE=exact"});
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "BASELINE-READY");
  const Reply stats = get(port, "/debug/memory/stats?format=json");
  ASSERT_EQ(stats.status, 200) << "no answer on the port: the wrapper's socket leaked into the program";
  EXPECT_EQ(stats.json()["mode"], "exact");
  // The program, not the wrapper, answers: its traced heap follows its allocations.
  ASSERT_EQ(post(port, "/debug/memory/baseline").status, 200);
  program.write_line("go");
  ASSERT_EQ(program.read_line(20000).value_or("EOF"), "ALLOCATED");
  const auto diff = get(port, "/debug/memory/diff?format=json").json();
  EXPECT_GT(diff["total"]["size_diff"].get<long>(), 0) << diff.dump(1);
}

// LIVEHEAP_PLUMBING: the program's own arena counts as plumbing, so key=line names the
// arena's callers; without it, the arena's one malloc line takes everything.
std::vector<Site> run_arena(ChildProcess& program, std::uint16_t port, nlohmann::json& diff) {
  EXPECT_EQ(program.read_line(20000).value_or("EOF"), "READY");
  EXPECT_EQ(post(port, "/debug/memory/baseline").status, 200);
  program.write_line("go");
  std::vector<Site> sites;
  while (const auto line = program.read_line(20000)) {
    if (!line->starts_with("SITE ")) break;
    sites.push_back(parse_site(*line));
  }
  diff = get(port, "/debug/memory/diff?format=json&key=line&limit=1000").json();
  return sites;
}

TEST(PreloadPlumbing, ANamedArenaPointsKeyLineAtItsCallers) {
  for (const bool named : {false, true}) {
    const std::uint16_t port = free_port();
    std::vector<std::string> env{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port),
                                 "LIVEHEAP_MODE=exact"};
    // Matches the name as shown ("(anonymous namespace)::arena_allocate"), not the full one.
    if (named) env.push_back("LIVEHEAP_PLUMBING=*/no_such_dir/*, function:*arena_allocate");
    ChildProcess program({LIVEHEAP_ARENA_PROGRAM}, env);
    nlohmann::json diff;
    const std::vector<Site> sites = run_arena(program, port, diff);
    ASSERT_EQ(sites.size(), 3u);
    const Site& small = sites[0];
    const Site& big = sites[1];
    const Site& arena = sites[2];
    if (named) {
      for (const Site* site : {&small, &big}) {
        const nlohmann::json stat = find_site(diff, *site);
        ASSERT_FALSE(stat.is_null()) << site->line << "\n" << diff.dump(1);
        EXPECT_EQ(stat["size_diff"], site->bytes) << site->line;
        EXPECT_EQ(stat["count_diff"], site->count) << site->line;
      }
      EXPECT_TRUE(find_site(diff, arena).is_null()) << diff.dump(1);
      const std::string text = get(port, "/debug/memory/diff?key=line&limit=2").body;
      EXPECT_NE(text.find(":" + std::to_string(big.line) +
                          ": size=293 KiB (+293 KiB), count=3 (+3), average=97.7 KiB\n"),
                std::string::npos) << text;
    } else {
      const nlohmann::json stat = find_site(diff, arena);
      ASSERT_FALSE(stat.is_null()) << diff.dump(1);
      EXPECT_EQ(stat["size_diff"], arena.bytes);
      EXPECT_EQ(stat["count_diff"], arena.count);
      EXPECT_TRUE(find_site(diff, small).is_null());
      EXPECT_TRUE(find_site(diff, big).is_null());
    }
    EXPECT_EQ(program.wait(10000), 0);
  }
}

}  // namespace
}  // namespace http_test
