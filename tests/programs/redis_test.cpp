// redis-server (over jemalloc, as Debian builds it) under the preload library, filled with a
// bounded load of strings (DEBUG POPULATE) and a list (redis-benchmark's LPUSH, which grows
// its listpacks by realloc): liveheap's traced bytes against redis's own count, INFO memory's
// used_memory. Exact mode within a few percent; sampled mode within its statistical bound.
#include <signal.h>

#include <cmath>
#include <regex>

#include <gtest/gtest.h>

#include "../support/temp_dir.hpp"
#include "../support/wait.hpp"
#include "program_run.hpp"

namespace programs_test {
namespace {

constexpr auto kCliTimeout = 30s;
constexpr int kKeys = 60000;
constexpr int kPushes = 80000;
// A 252-byte value is a 256-byte allocation, a jemalloc size class of its own.
constexpr int kValueBytes = 252;
// Sampled mode's interval for this test: small enough that the load is ~600 samples.
constexpr std::int64_t kSampleInterval = 64 * 1024;
// used_memory counts jemalloc's usable sizes, liveheap the requested ones: the small objects
// and the listpacks round up to their size classes (this load reads about 92% in exact mode).
constexpr double kRounding = 0.10;

class Redis {
 public:
  Redis(const std::string& mode, const test_support::TempDir& dir)
      : port_(http_test::free_port()), admin_port_(http_test::free_port()) {
    std::vector<std::string> env = preload_env(mode, admin_port_, dir.path());
    env.push_back("LIVEHEAP_SAMPLE_INTERVAL=" + std::to_string(kSampleInterval));
    server_ = std::make_unique<http_test::ChildProcess>(
        std::vector<std::string>{"/usr/bin/redis-server", "--port", std::to_string(port_), "--bind",
                                 "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.path(),
                                 "--logfile", dir / "redis.log", "--enable-debug-command", "local"},
        clean_env(env));
  }
  ~Redis() {
    ::kill(server_->pid(), SIGTERM);
    server_->wait(10000);
  }
  // redis-cli's answer to `args`, or throws.
  std::string cli(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/usr/bin/redis-cli", "-p", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProgramRun answer = run(argv, {}, kCliTimeout);
    if (answer.how() != "exit 0") throw std::runtime_error("redis-cli: " + answer.how() + answer.err);
    return answer.out;
  }
  ProgramRun benchmark(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/usr/bin/redis-benchmark", "-p", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, {}, kCliTimeout);
  }
  std::int64_t used_memory() const {
    std::smatch match;
    const std::string info = cli({"INFO", "memory"});
    static const std::regex kUsed(R"(used_memory:(\d+))");
    if (!std::regex_search(info, match, kUsed)) throw std::runtime_error("no used_memory: " + info);
    return std::stoll(match[1]);
  }
  std::int64_t traced() const {
    return traced_bytes(get_json(admin_port_, "/debug/memory/stats?format=json"));
  }

 private:
  std::uint16_t port_;
  std::uint16_t admin_port_;
  std::unique_ptr<http_test::ChildProcess> server_;
};

// Fills redis with the load and compares; `bound` is a fraction of used_memory.
void expect_traced_near_used_memory(const std::string& mode, double bound_of) {
  ASSERT_TRUE(installed("/usr/bin/redis-server", "redis-server"));
  ASSERT_TRUE(installed("/usr/bin/redis-cli", "redis-tools"));
  ASSERT_TRUE(installed("/usr/bin/redis-benchmark", "redis-tools"));
  test_support::TempDir dir;
  Redis redis(mode, dir);
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience, [&] {
    return redis.cli({"PING"}) == "PONG\n";
  })) << "redis-server never answered PING";
  ASSERT_EQ(redis.cli({"DEBUG", "POPULATE", std::to_string(kKeys), "key", std::to_string(kValueBytes)}),
            "OK\n");
  ASSERT_EQ(redis.cli({"DBSIZE"}), std::to_string(kKeys) + "\n");
  const ProgramRun bench = redis.benchmark(
      {"-q", "-t", "lpush", "-n", std::to_string(kPushes), "-d", std::to_string(kValueBytes), "-P", "16"});
  ASSERT_EQ(bench.how(), "exit 0") << bench.err;
  ASSERT_EQ(redis.cli({"LLEN", "mylist"}), std::to_string(kPushes) + "\n");
  const std::int64_t used = redis.used_memory();
  ASSERT_GT(used, std::int64_t{kKeys + kPushes} * kValueBytes);
  std::int64_t traced = -1;
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience, [&] {
    traced = redis.traced();
    return true;
  })) << "liveheap's /stats never answered";
  const double bound = bound_of * static_cast<double>(used);
  EXPECT_LE(std::abs(static_cast<double>(traced - used)), bound)
      << mode << ": liveheap traced " << traced << " B, redis used_memory " << used << " B ("
      << 100.0 * static_cast<double>(traced) / static_cast<double>(used) << "%), bound +-" << 100.0 * bound_of
      << "%";
}

TEST(Redis, ExactModeTracesRedisUsedMemoryWithinAFewPercent) {
  expect_traced_near_used_memory("exact", kRounding);
}

// The load is ~N = bytes / interval samples of blocks smaller than the interval: the
// estimate's standard deviation is about sqrt(N) samples, 1/sqrt(N) of the total (4% for
// this load of ~40 MB). The bound is four deviations plus exact mode's allowance: a false
// failure is about one in 15000 runs.
TEST(Redis, SampledModeEstimatesRedisUsedMemoryWithinItsStatisticalBound) {
  const double samples =
      static_cast<double>(kKeys + kPushes) * (kValueBytes + 40) / static_cast<double>(kSampleInterval);
  expect_traced_near_used_memory("sampled", kRounding + 4.0 / std::sqrt(samples));
}

}  // namespace
}  // namespace programs_test
