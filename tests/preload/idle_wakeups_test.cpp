// A traced process in which nothing happens is not woken by liveheap: `sleep` under the
// preload library, in each mode, with and without an endpoint, and as the second process of
// a group; the voluntary context switches of all its threads over a few seconds (a peak
// recorder that polled every 5 ms made 200 a second).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "../support/child_process.hpp"
#include "../support/temp_dir.hpp"
#include "../support/threads_of.hpp"
#include "../support/wait.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;

constexpr auto kWindow = 3s;
constexpr double kMostPerSecond = 3;

// Voluntary context switches summed over the threads of `pid`, and how many threads.
std::pair<long, int> voluntary_switches(pid_t pid) {
  long sum = 0;
  int threads = 0;
  for (const pid_t tid : test_support::threads_of(pid)) {
    std::ifstream status(test_support::task_dir(pid) + "/" + std::to_string(tid) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        sum += std::atol(line.c_str() + line.find(':') + 1);
        ++threads;
      }
  }
  return {sum, threads};
}

// `sleep 60` with the preload library and `extra` in its environment (none of the test's
// own LD_PRELOAD or LIVEHEAP_*), its stdin ours; killed and reaped at the end.
class IdleProcess : public test_support::ChildProcess {
 public:
  explicit IdleProcess(const std::vector<std::string>& extra)
      : test_support::ChildProcess({"sleep", "60"}, environment(extra),
                                   {.stdin_pipe = false, .with_stderr = true}) {}

 private:
  static std::vector<std::string> environment(const std::vector<std::string>& extra) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::string_view(*e).rfind("LD_PRELOAD=", 0) != 0 &&
          std::string_view(*e).rfind("LIVEHEAP_", 0) != 0)
        env.emplace_back(*e);
    env.push_back(std::string("LD_PRELOAD=") + LIVEHEAP_PRELOAD_PATH);
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }
};

struct Case {
  const char* mode;
  bool endpoint;
  int threads;  // once settled: main, and the endpoint's and the recorders' threads
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.mode << (c.endpoint ? " with an endpoint" : ""); }

class IdleWakeups : public testing::TestWithParam<Case> {};

TEST_P(IdleWakeups, AnIdleTracedProcessIsWokenAtMostThreeTimesASecond) {
  const Case c = GetParam();
  test_support::TempDir registry;  // the endpoint's socket, left by the SIGKILL, goes with it
  std::vector<std::string> env = {std::string("LIVEHEAP_MODE=") + c.mode,
                                  "XDG_RUNTIME_DIR=" + registry.path()};
  if (c.endpoint) env.push_back("LIVEHEAP_ADDR=127.0.0.1:0");
  IdleProcess process(env);
  ASSERT_GT(process.pid(), 0) << "cannot start sleep";
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience,
                                       [&] { return voluntary_switches(process.pid()).second == c.threads; }))
      << "the process never had its " << c.threads << " threads";
  std::this_thread::sleep_for(500ms);  // the threads' first steps (a history point, a look)
  const auto before = voluntary_switches(process.pid());
  std::this_thread::sleep_for(kWindow);
  const auto after = voluntary_switches(process.pid());
  ASSERT_EQ(after.second, c.threads);
  const double per_second =
      static_cast<double>(after.first - before.first) / std::chrono::duration<double>(kWindow).count();
  EXPECT_LE(per_second, kMostPerSecond)
      << after.first - before.first << " wake-ups in " << kWindow.count() << " s";
}

using test_support::free_port;

// A process of a group whose port another holds waits for that holder's exit, not on a
// timer (a retry every second, before): with no history thread, its threads do not wake.
TEST(IdleWakeupsOfAGroup, AProcessWhosePortAnotherHoldsSleepsUntilTheHolderExits) {
  test_support::TempDir registry;
  const std::vector<std::string> env = {"LIVEHEAP_MODE=exact", "LIVEHEAP_HISTORY_INTERVAL=0",
                                        "XDG_RUNTIME_DIR=" + registry.path(),
                                        "LIVEHEAP_ADDR=127.0.0.1:" + std::to_string(free_port())};
  IdleProcess holder(env);
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience, [&] {
    return voluntary_switches(holder.pid()).second == 3;  // main, the endpoint, the peak recorder
  }));
  IdleProcess other(env);
  ASSERT_TRUE(test_support::wait_until(test_support::kPatience,
                                       [&] { return voluntary_switches(other.pid()).second == 3; }));
  std::this_thread::sleep_for(500ms);
  const auto before = voluntary_switches(other.pid());
  std::this_thread::sleep_for(kWindow);
  const long woken = voluntary_switches(other.pid()).first - before.first;
  EXPECT_LE(woken, 1) << "wake-ups in " << kWindow.count() << " s";
}

INSTANTIATE_TEST_SUITE_P(Modes, IdleWakeups,
                         testing::Values(Case{"off", false, 1}, Case{"sampled", false, 1},
                                         Case{"exact", false, 1}, Case{"off", true, 2},
                                         Case{"sampled", true, 4}, Case{"exact", true, 4}),
                         [](const testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.mode) + (info.param.endpoint ? "WithEndpoint" : "");
                         });

}  // namespace
