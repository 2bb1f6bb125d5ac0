// liveheap-watch --pid against a prefork server under LD_PRELOAD (prefork_truth: a master
// whose forked workers keep known bytes): one worker's growth exactly, and all of them merged.
#include <signal.h>
#include <stdlib.h>

#include <iterator>
#include <sstream>

#include <gtest/gtest.h>

#include "../support/temp_dir.hpp"
#include "e2e_support.hpp"

namespace liveheap::e2e {
namespace {

using nlohmann::json;

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  return {std::istream_iterator<std::string>(in), {}};
}

// prefork_truth 2 under the preload library, in a registry of its own; killed at the end.
class PreforkServer {
 public:
  PreforkServer() : port_(http_test::free_port()) {
    master_ = std::make_unique<http_test::ChildProcess>(
        std::vector<std::string>{LIVEHEAP_PREFORK_TRUTH, "2"},
        std::vector<std::string>{std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_LIBRARY,
                                 "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(port_), "LIVEHEAP_MODE=exact",
                                 "XDG_RUNTIME_DIR=" + dir_.path()});
    master_->read_line(20000);  // MASTER <pid>
    for (int k = 0; k < 2; ++k)
      workers_.push_back(std::stol(words(master_->read_line(20000).value_or("x 0 0")).at(2)));
    // Every worker registered: /processes lists three.
    std::size_t seen = 0;
    const testing::AssertionResult registered = http_test::wait_until(
        http_test::kPatience, [&] { return (seen = listed()) == 3; }, std::chrono::milliseconds(100));
    if (!registered) {
      kill_workers();  // the destructor does not run for a constructor that throws
      throw std::runtime_error("/processes listed " + std::to_string(seen) +
                               " processes, never the master and its two workers: " + registered.message());
    }
  }
  ~PreforkServer() {
    kill_workers();
    master_.reset();
  }

  std::size_t listed() const {
    const auto reply = http_test::get(port_, "/debug/memory/processes?format=json");
    return reply.status == 200 ? reply.json()["processes"].size() : 0;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/debug/memory"; }
  long worker(int k) const { return workers_.at(k); }

  // Tells the workers to keep their bytes: 3 x 1000 B in worker 0, 3 x 2000 B in worker 1,
  // at one line; returns that "file:line".
  std::string keep() {
    master_->write_line("go");
    std::string where;
    for (int k = 0; k < 2; ++k) where = words(master_->read_line(20000).value_or("x x x")).at(2);
    return where;
  }

 private:
  void kill_workers() {
    for (const long pid : workers_)
      if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }

  std::uint16_t port_;
  test_support::TempDir dir_;  // the registry of its own (XDG_RUNTIME_DIR)
  std::unique_ptr<http_test::ChildProcess> master_;
  std::vector<long> workers_;
};

// The figures a round printed for `where` ("/path/prefork_truth.cpp:42" -> what follows
// "prefork_truth.cpp:42: " up to the end of the line), or "" when it printed none.
std::string figures_of(const std::string& output, const std::string& where) {
  const std::string base = where.substr(where.rfind('/') + 1) + ": ";
  const auto at = output.find(base);
  if (at == std::string::npos) return "";
  const auto from = at + base.size();
  return output.substr(from, output.find('\n', from) - from);
}

TEST(WatchPidTest, OneWorkerAndAllWorkersMerged) {
  PreforkServer server;
  ASSERT_EQ(server.listed(), 3u);
  // --baseline with --pid all: every process takes its baseline.
  const WatchRun before =
      run_watch({"--url", server.url(), "--pid", "all", "--baseline", "--rounds", "1", "--interval", "0"});
  ASSERT_EQ(before.exit_code, 0) << before.output;
  const std::string where = server.keep();

  const std::string worker1 = std::to_string(server.worker(1));
  const WatchRun one = run_watch(
      {"--url", server.url(), "--pid", worker1, "--rounds", "1", "--interval", "0", "--limit", "100"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find(" of pid " + worker1 + " (mode=exact)"), std::string::npos) << one.output;
  // The server's verdict ends the line: unknown, its history (a point every 10 s) is young.
  EXPECT_EQ(figures_of(one.output, where), "size=6000 B (+6000 B), count=3 (+3), average=2000 B [unknown]")
      << one.output;

  const WatchRun all = run_watch({"--url", server.url(), "--pid", "all", "--rounds", "1", "--interval", "0",
                                  "--limit", "100", "--fail-over", "8000"});
  EXPECT_EQ(all.exit_code, 1) << all.output;  // the merged growth is over 8000 B
  EXPECT_NE(all.output.find(" of pids ["), std::string::npos) << all.output;
  EXPECT_EQ(figures_of(all.output, where), "size=9000 B (+9000 B), count=6 (+6), average=1500 B [unknown]")
      << all.output;

  const WatchRun lines = run_watch({"--url", server.url(), "--pid", "all", "--rounds", "1", "--interval", "0",
                                    "--json", "--limit", "1000"});
  ASSERT_EQ(lines.exit_code, 0) << lines.output;
  const json round = json::parse(lines.output);
  EXPECT_EQ(round["pids"].size(), 3u) << lines.output;
  EXPECT_TRUE(round["failed"].empty()) << lines.output;
}

// Without --pid, a program of several processes is read whole: every process merged, each
// one's share listed (the master's is nothing: it serves no request), the header naming how
// many; --pid port reads the holder alone and says the others exist.
TEST(WatchPidTest, ByDefaultEveryProcessOfTheProgramIsMerged) {
  PreforkServer server;
  const WatchRun before =
      run_watch({"--url", server.url(), "--baseline", "--rounds", "1", "--interval", "0"});
  ASSERT_EQ(before.exit_code, 0) << before.output;
  EXPECT_NE(before.output.find(" (3 processes merged)"), std::string::npos) << before.output;
  const std::string where = server.keep();

  const WatchRun merged =
      run_watch({"--url", server.url(), "--rounds", "1", "--interval", "0", "--limit", "100"});
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_NE(merged.output.find(" (3 processes merged) (mode=exact)\n"), std::string::npos) << merged.output;
  EXPECT_EQ(figures_of(merged.output, where), "size=9000 B (+9000 B), count=6 (+6), average=1500 B [unknown]")
      << merged.output;
  EXPECT_NE(merged.output.find("  pid " + std::to_string(server.worker(1)) + ": +"), std::string::npos)
      << merged.output;

  const WatchRun holder =
      run_watch({"--url", server.url(), "--pid", "port", "--rounds", "1", "--interval", "0"});
  ASSERT_EQ(holder.exit_code, 0) << holder.output;
  EXPECT_EQ(figures_of(holder.output, where), "") << holder.output;  // the master kept nothing
  EXPECT_NE(holder.output.find("(1 of the 3 processes of this program: --pid all merges them)\n"),
            std::string::npos)
      << holder.output;
}

TEST(WatchPidTest, APidNotInTheGroupIsAClearError) {
  PreforkServer server;
  const WatchRun run =
      run_watch({"--url", server.url(), "--pid", "1", "--rounds", "1", "--interval", "0", "--baseline"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("404 Not Found: no liveheap process with pid 1 in this group"), std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("is liveheap mounted"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace liveheap::e2e
