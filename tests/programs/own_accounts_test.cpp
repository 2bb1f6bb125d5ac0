// liveheap's traced bytes against what real programs count of their own heap: sqlite3's
// "Memory Used" (.stats), python3's tracemalloc and node's process.memoryUsage().arrayBuffers,
// in exact mode with the program holding LIVEHEAP_ADDR's port.
#include <cmath>
#include <cstdlib>
#include <regex>

#include <gtest/gtest.h>

#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "program_run.hpp"

namespace programs_test {
namespace {

using http_test::ChildProcess;

constexpr int kLineTimeoutMs = 30000;

// A preloaded program that prints lines and waits for one on stdin between its steps.
class Stepped {
 public:
  Stepped(const std::vector<std::string>& argv, const std::string& runtime_dir)
      : port_(http_test::free_port()), process_(argv, clean_env(preload_env("exact", port_, runtime_dir))) {}

  // The next line it printed; fails the test (throws) when none comes in time.
  std::string line() {
    const auto line = process_.read_line(kLineTimeoutMs);
    if (!line) throw std::runtime_error("the program printed nothing more within the timeout");
    return *line;
  }
  void next() { process_.write_line(""); }
  void send(const std::string& line) { process_.write_line(line); }
  // Its traced bytes now (once its admin server answers).
  std::int64_t traced() {
    std::int64_t bytes = -1;
    const auto answered = test_support::wait_until(test_support::kPatience, [&] {
      bytes = traced_bytes(get_json(port_, "/debug/memory/stats?format=json"));
      return true;
    });
    if (!answered) throw std::runtime_error(std::string("/stats never answered: ") + answered.message());
    return bytes;
  }
  int wait() { return process_.wait(kLineTimeoutMs); }

 private:
  std::uint16_t port_;
  ChildProcess process_;
};

// Within `fraction` of `expected` (both in bytes), with the numbers in the message.
testing::AssertionResult near(std::int64_t actual, std::int64_t expected, double fraction) {
  const double off = std::abs(static_cast<double>(actual - expected)) / static_cast<double>(expected);
  if (off <= fraction) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "liveheap traced " << actual << " B, the program counts " << expected
                                     << " B: " << off * 100 << "% off (bound " << fraction * 100 << "%)";
}

TEST(OwnAccounts, Python3sGrowthIsTracemallocsGrowth) {
  ASSERT_TRUE(installed("/usr/bin/python3", "python3"));
  test_support::TempDir runtime;
  Stepped python({"/usr/bin/python3", "-B", "-c", R"(
import sys, tracemalloc
tracemalloc.start()
def step(*words):
    print(*words, flush=True)
    sys.stdin.readline()
step("ready")
before = tracemalloc.get_traced_memory()[0]
blocks = [bytearray(1 << 20) for _ in range(64)]
step("grew", tracemalloc.get_traced_memory()[0] - before)
)"},
                 runtime.path());
  ASSERT_EQ(python.line(), "ready");
  const std::int64_t before = python.traced();
  python.next();
  const std::string grew = python.line();
  ASSERT_TRUE(grew.starts_with("grew ")) << grew;
  const std::int64_t growth = std::stoll(grew.substr(5));
  // Large objects only: pymalloc carves small ones out of arenas it maps itself, which no
  // malloc tracker sees.
  EXPECT_TRUE(near(python.traced() - before, growth, 0.01));
  python.next();
  EXPECT_EQ(python.wait(), 0);
}

TEST(OwnAccounts, NodesArrayBufferGrowthIsMemoryUsagesGrowth) {
  ASSERT_TRUE(installed("/usr/bin/node", "nodejs"));
  test_support::TempDir runtime;
  Stepped node({"/usr/bin/node", "-e", R"(
const lines = require('readline').createInterface({input: process.stdin})[Symbol.asyncIterator]();
(async () => {
  console.log('ready', process.memoryUsage().arrayBuffers);
  await lines.next();
  const buffers = [];
  for (let i = 0; i < 64; i++) buffers.push(new ArrayBuffer(1 << 20));
  console.log('grew', process.memoryUsage().arrayBuffers);
  await lines.next();
  process.exit(buffers.length === 64 ? 0 : 1);
})();
)"},
               runtime.path());
  const std::string ready = node.line();
  ASSERT_TRUE(ready.starts_with("ready ")) << ready;
  const std::int64_t before = node.traced();
  node.next();
  const std::string grew = node.line();
  ASSERT_TRUE(grew.starts_with("grew ")) << grew;
  const std::int64_t growth = std::stoll(grew.substr(5)) - std::stoll(ready.substr(6));
  ASSERT_GE(growth, 64 << 20);
  EXPECT_TRUE(near(node.traced() - before, growth, 0.01));
  node.next();
  EXPECT_EQ(node.wait(), 0);
}

TEST(OwnAccounts, Sqlite3sMemoryUsedIsWhatLiveheapTraces) {
  ASSERT_TRUE(installed("/usr/bin/sqlite3", "sqlite3"));
  test_support::TempDir runtime;
  Stepped sqlite({"/usr/bin/sqlite3", ":memory:"}, runtime.path());
  // An in-memory database of ~25 MiB in sqlite's page cache: sqlite's heap is the program's.
  for (const char* line : {"CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB);",
                           "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) "
                           "INSERT INTO t SELECT x, randomblob(200) FROM c;",
                           ".stats on", "SELECT count(*) FROM t;", ".stats off", ".print done"})
    sqlite.send(line);
  std::int64_t memory_used = -1;
  static const std::regex kMemoryUsed(R"(^Memory Used: +(\d+) )");
  for (std::string line = sqlite.line(); line != "done"; line = sqlite.line()) {
    std::smatch match;
    if (std::regex_search(line, match, kMemoryUsed)) memory_used = std::stoll(match[1]);
  }
  ASSERT_GT(memory_used, 20 << 20) << "sqlite3's .stats printed no Memory Used line";
  // The shell's own few allocations (stdio, its line buffer) besides sqlite's.
  EXPECT_TRUE(near(sqlite.traced(), memory_used, 0.01));
  sqlite.send(".quit");
  EXPECT_EQ(sqlite.wait(), 0);
}

}  // namespace
}  // namespace programs_test
