// Wake-ups of idle traced processes (see idle_wakeups.hpp).
#include "idle_wakeups.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "child_process.hpp"

namespace bench {
namespace {

using namespace std::chrono_literals;

// A liveheap thread starts 100 ms after the endpoint, and takes its first look or point
// at once: settled well before this.
constexpr auto kSettle = 1500ms;
// What a traced idle process may add to the untraced one's wake-ups (the goal: at most one
// a second).
constexpr double kTargetPerSecond = 1.0;

// The sum of voluntary_ctxt_switches over the threads of `pid`, and how many threads;
// nullopt once the process is gone.
std::optional<std::pair<long, int>> voluntary_switches(int pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return std::nullopt;
  long sum = 0;
  int threads = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream status(tasks + "/" + e->d_name + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        sum += std::atol(line.c_str() + line.find(':') + 1);
        ++threads;
      }
  }
  closedir(dir);
  return std::make_pair(sum, threads);
}

struct Row {
  std::string name;
  Environment env;
  bool shown = true;  // false: started only for another row (the holder of its port)
};

}  // namespace

std::vector<IdleWakeups> measure_idle_wakeups(const std::string& liveheap_preload,
                                              std::chrono::seconds window) {
  // A registry of their own: `sleep` ends by a signal, without the exit handler that would
  // remove its socket.
  std::string registry = (std::filesystem::temp_directory_path() / "liveheap-idle-XXXXXX").string();
  if (mkdtemp(registry.data()) == nullptr) registry.clear();
  std::vector<Row> rows = {{"no liveheap", {}}};
  for (const char* mode : {"off", "sampled", "exact"})
    for (const bool endpoint : {false, true}) {
      Environment env = {{"LD_PRELOAD", liveheap_preload}, {"LIVEHEAP_MODE", mode}};
      if (endpoint) env.push_back({"LIVEHEAP_ADDR", "127.0.0.1:0"});
      if (!registry.empty()) env.push_back({"XDG_RUNTIME_DIR", registry});
      rows.push_back({std::string(mode) + (endpoint ? ", LIVEHEAP_ADDR" : ""), env});
    }
  // The second process of a group (a prefork server's worker): another holds the port.
  if (const int port = free_port()) {
    Environment env = {{"LD_PRELOAD", liveheap_preload}, {"LIVEHEAP_MODE", "exact"},
                       {"LIVEHEAP_ADDR", "127.0.0.1:" + std::to_string(port)}};
    if (!registry.empty()) env.push_back({"XDG_RUNTIME_DIR", registry});
    rows.push_back({"holder", env, false});
    rows.push_back({"exact, port held by another", env});
  }
  std::vector<IdleWakeups> results(rows.size());
  std::vector<std::unique_ptr<Child>> children(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    results[i].name = rows[i].name;
    try {
      children[i] = std::make_unique<Child>(std::vector<std::string>{"sleep", "600"}, rows[i].env);
    } catch (const std::exception& e) {
      results[i].failed = e.what();
    }
    if (!rows[i].shown) std::this_thread::sleep_for(300ms);  // holding before the next starts
  }
  std::this_thread::sleep_for(kSettle);
  std::vector<std::optional<std::pair<long, int>>> before(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (children[i]) before[i] = voluntary_switches(children[i]->pid());
  std::this_thread::sleep_for(window);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!children[i]) continue;
    const auto after = voluntary_switches(children[i]->pid());
    if (!before[i] || !after) {
      results[i].failed = "exited early: " + children[i]->finish(SIGKILL, 5s).describe();
      continue;
    }
    results[i].threads = after->second;
    results[i].per_second = static_cast<double>(after->first - before[i]->first) /
                            static_cast<double>(window.count());
    children[i]->finish(SIGKILL, 5s);
  }
  if (!registry.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(registry, ignored);
  }
  std::vector<IdleWakeups> shown;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].shown) shown.push_back(results[i]);
  return shown;
}

void print_idle_wakeups_table(const std::vector<IdleWakeups>& rows, std::chrono::seconds window) {
  std::printf("\nidle wake-ups: `sleep` under each mode, all at once, voluntary context switches "
              "of all its threads over %lld s (after %.1f s to settle)\n",
              static_cast<long long>(window.count()), std::chrono::duration<double>(kSettle).count());
  std::printf("  %-28s %8s %12s %12s  %s\n", "", "threads", "wake-ups/s", "over bare", "target");
  const double bare = rows.empty() || !rows.front().failed.empty() ? NAN : rows.front().per_second;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const IdleWakeups& r = rows[i];
    if (!r.failed.empty()) {
      std::printf("  %-28s FAILED: %s\n", r.name.c_str(), r.failed.c_str());
      continue;
    }
    std::printf("  %-28s %8d %12.2f", r.name.c_str(), r.threads, r.per_second);
    if (i == 0 || std::isnan(bare)) {
      std::printf("\n");
      continue;
    }
    const double over = r.per_second - bare;
    std::printf(" %12.2f  <= %.0f/s %s\n", over, kTargetPerSecond, over <= kTargetPerSecond ? "pass" : "MISS");
  }
}

}  // namespace bench
